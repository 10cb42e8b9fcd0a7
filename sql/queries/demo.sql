-- name: audit_decisions
-- The decision log as an auditor reads it (the demo runs it in the stock sqlite3 shell).
select
  namespace,
  decision,
  round(similarity, 3) as sim,
  substr(new_content, 1, 60) as text
from v_decisions
order by id;
