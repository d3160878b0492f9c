-- DATABASE_FAILOVER alerts (issue 33): a replica that finds the database on a new timeline (a
-- promoted standby) says so once across replicas, naming what the promotion may have lost.
--
-- Expand only: the previous release never reads `database_timeline` and never writes a
-- DATABASE_FAILOVER alert. Like CLOCK_SKEW, it cannot decode one: while such an alert exists, an
-- old replica answers 500 to an alert listing that includes it and logs errors from its own alert
-- evaluation. It changes no row, and the errors end with the rollout.

-- 1. When each timeline was first noticed.
--
-- Replicas notice a promotion at different moments (each at its next evaluation or reconnect),
-- possibly on either side of midnight, yet must raise the same alert: the key is
-- `(kind, task_name, business_date)`. The first replica to notice a timeline inserts its row
-- (`on conflict do nothing`); every replica then reads `first_seen_at` back and takes its business
-- date as the alert's. The row lives on the new primary, which is the only place all replicas
-- read after the promotion. Keyed by the timeline alone: the database lives on one cluster, and
-- `system_identifier` (null when the role may not read it) is kept for people.
create table database_timeline (
    timeline           bigint primary key,
    system_identifier  bigint,
    -- The database's `now()` when a replica first noticed the timeline, never a replica's clock.
    first_seen_at      timestamptz not null default now(),
    -- The replica that noticed it first, for people.
    first_seen_by      text not null
);

-- 2. The DATABASE_FAILOVER kind.
--
-- Added `not valid`, and validated by the next migration in a transaction of its own, as
-- 20261205000190/191 did for CLOCK_SKEW: `validate constraint` takes only a share update
-- exclusive lock, so replicas keep reading and writing alerts while it scans.
alter table alert drop constraint alert_kind_known;
alter table alert add constraint alert_kind_known
    check (kind in ('FAILED', 'TIMEOUT', 'MISSED', 'AUDIT', 'CLOCK_SKEW', 'DATABASE_FAILOVER')) not valid;
