-- name: create_migrations_table
-- The record of applied schema migrations (created with the first one).
create table schema_migrations (
  version integer primary key,
  name text not null,
  applied_at text not null default to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
);

-- name: record_migration
-- One applied migration.
insert into schema_migrations (version, name)
values (%(version)s, %(name)s);

-- name: find_migrations_table
-- The migrations table of the first schema of the search path (null when the store is new).
select to_regclass('schema_migrations');

-- name: schema_version
-- The highest migration applied.
select max(version) from schema_migrations;

-- name: lock_migrations
-- One migrating process at a time per database ("SUBC", 0): held until the migration's transaction ends.
select pg_advisory_xact_lock(1398096451, 0);

-- name: inspect_database
-- The database's encoding, and whether the schema a store would be created in already holds tables.
select
  pg_encoding_to_char(encoding),
  exists (select 1 from pg_tables where schemaname = current_schema())
from pg_database
where datname = current_database();

-- name: find_vector_extension
-- pgvector, when it is enabled in this database.
select extversion from pg_extension where extname = 'vector';

-- name: create_vector_extension
-- Enable pgvector (needs the right to: a superuser, or the database owner where the extension is trusted).
create extension if not exists vector;

-- name: lock_store_shared
-- The store's write lock, shared, until the transaction ends: the writers of scopes hold it together; a writer of
-- the whole store (begin_write in store.sql) takes it alone.
select pg_advisory_xact_lock_shared(1398096452, 1);

-- name: lock_scope
-- The write lock of one (domain, namespace) scope until the transaction ends: every writer of the scope takes
-- it before its check-then-write. Two scopes whose names hash alike share a lock (harmless: they only wait).
select pg_advisory_xact_lock(1398096453, hashtext(%(domain)s || '/' || %(namespace)s));

-- name: create_test_database
-- A fresh database for one test (subcog_store/postgres/local_server.py): {name} is an identifier.
create database {name} template template0 encoding 'UTF8';

-- name: copy_test_database
-- A fresh database for one test, a copy of a migrated store (its template): {name}, {template} are identifiers.
create database {name} template {template};

-- name: drop_test_database
-- Drop a test's database, ending its connections first.
drop database if exists {name} with (force);

-- name: tune_test_server
-- The test server's settings (durability is not what a test measures): {name} and {value} are composed.
alter system set {name} = {value};

-- name: reload_configuration
-- Apply the changed settings.
select pg_reload_conf();

-- name: set_timeouts
-- How long any statement of this connection, and any wait for a lock, may take (milliseconds).
select set_config('statement_timeout', %(statement_ms)s::text, false),
       set_config('lock_timeout', %(lock_ms)s::text, false);
