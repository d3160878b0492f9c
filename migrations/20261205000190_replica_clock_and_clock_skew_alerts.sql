-- CLOCK_SKEW alerts (issue 19): a replica whose clock is off from the database's by more than
-- `FINESETTLE_MAX_CLOCK_SKEW`, raised once across replicas.
--
-- Expand only: the previous release keeps running against this schema during a rollout. It
-- never reads `replica_clock` and never writes a CLOCK_SKEW alert, but it cannot decode one:
-- while a new replica's CLOCK_SKEW alert exists, an old replica answers 500 to an alert listing
-- that includes it and logs errors from its own alert evaluation. It changes no row, and the
-- errors end with the rollout.

-- 1. Each replica's latest clock measurement.
--
-- Every replica measures its own clock against the database's once a minute
-- (`src/telemetry/clock_skew.rs`); only the replica itself can, and any replica's alert
-- evaluation must see it. One row per replica, overwritten by each measurement, so the table
-- holds the replicas' latest measurements and nothing else. `measured_at` is the database's
-- `now()`, never the replica's: the alert rule drops a measurement older than a few probe
-- intervals, so a replica that died while skewed stops counting, and that age must not depend on
-- the clock being judged.
create table replica_clock (
    instance_id   text primary key,
    -- The replica's clock minus the database's, in seconds: positive when the replica is ahead.
    skew_seconds  double precision not null,
    measured_at   timestamptz not null default now()
);

-- 2. The CLOCK_SKEW kind.
--
-- Added `not valid`: PostgreSQL then checks new rows only and adds the constraint without
-- reading the table. The existing rows are checked by the next migration, in a transaction of
-- its own (sqlx runs each migration in one): `validate constraint` takes only a share update
-- exclusive lock, which lets replicas keep reading and writing alerts meanwhile, whereas here
-- the `drop constraint` holds an access exclusive lock until this transaction commits. The
-- constraint is never missing for any other transaction: it is dropped and re-added in this one.
alter table alert drop constraint alert_kind_known;
alter table alert add constraint alert_kind_known
    check (kind in ('FAILED', 'TIMEOUT', 'MISSED', 'AUDIT', 'CLOCK_SKEW')) not valid;
