-- Expand. Which releases can serve this schema (src/store/schema.rs; docs/DESIGN.md §11).
--
-- Replicas are upgraded one at a time: for a while the previous release serves, and restarts,
-- against the schema the next release migrated. Every command checks this row before it
-- migrates: a release older than `oldest_release` refuses the database, naming both; any other
-- release serves it, even with migrations it does not know (a newer release's expansion).
--
-- Expand migrations leave the row alone. A contract migration (`<version>_contract_<what>.sql`,
-- applied only by `finesettle migrate --contract` once the roll is over) removes what the
-- previous release relied on, and raises `oldest_release` to the release it belongs to, in the
-- same transaction.
--
-- 0.1.1 is the first release with the guard and serves everything up to here. 0.1.0 has no
-- guard: sqlx refuses any migration it does not know, so it cannot restart after this one.
create table schema_compat (
    -- One row.
    id              boolean primary key default true constraint schema_compat_one_row check (id),
    oldest_release  text not null
        constraint schema_compat_release_shape check (oldest_release ~ '^[0-9]+\.[0-9]+\.[0-9]+$')
);
insert into schema_compat (oldest_release) values ('0.1.1');
