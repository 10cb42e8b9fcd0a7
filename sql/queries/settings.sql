-- name: select_settings
-- All stored settings.
select
  key,
  value
from settings;

-- name: get_setting
-- One stored setting value.
select value
from settings
where key = :key;

-- name: upsert_setting
-- Store a setting.
insert into settings (key, value, updated_at)
values (:key, :value, :now)
on conflict (key) do update set value = excluded.value, updated_at = excluded.updated_at
where settings.value <> excluded.value;
