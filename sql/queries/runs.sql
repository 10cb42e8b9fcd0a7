-- name: mark_stale_runs
-- Batch runs still 'running' were killed or crashed: mark them interrupted.
update dedup_runs
set status = 'interrupted'
where status = 'running';

-- name: start_run
-- A batch run row, written at the start so a killed run leaves a trace.
insert into dedup_runs (started_at, dry_run, status, memories_before)
values (:started_at, 0, 'running', :memories_before)
returning id;

-- name: finish_run
-- The batch run's figures, written at the end.
update dedup_runs
set finished_at = :finished_at,
    status = :status,
    memories_after = :memories_after,
    clusters = :clusters,
    removed = :removed,
    removal_rate = :removal_rate,
    duration_s = :duration_s,
    warnings = :warnings
where id = :id;

-- name: count_running_runs
-- Batch runs that say they are running (alive, or killed: the run lock tells which).
select count(*) from dedup_runs where status = 'running';
