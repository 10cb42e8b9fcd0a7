-- name: create_migrations_table
-- The record of applied schema migrations (created with the first one).
create table schema_migrations (
  version integer primary key,
  name text not null,
  applied_at text not null default (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

-- name: record_migration
-- One applied migration.
insert into schema_migrations (version, name)
values (:version, :name);

-- name: count_schema_objects
-- Whether the file holds anything yet (a fresh file may become a subcog-store database).
select count(*)
from sqlite_master;
