-- The job lock, its fencing token, and the record of every execution and every attempt.

-- One row per task, ShedLock-style. Acquisition is one atomic statement on the database clock:
-- insert the row, or take it over only where locked_until < now(). Each acquisition increments
-- fencing_token, which every settlement transaction checks (under a share lock on this row), so a
-- holder that lost the lock can no longer write.
create table task_lock (
    task_name      text primary key,
    locked_until   timestamptz not null,
    locked_at      timestamptz not null,
    -- For people: the holder's FINESETTLE_INSTANCE_ID.
    locked_by      text not null,
    -- For machines: a fresh random id per acquisition, checked by release and renewal. A host
    -- name would let a restarted process (same name) release a lock its predecessor took.
    owner_token    uuid not null,
    fencing_token  bigint not null default 1,
    constraint task_lock_fencing_positive check (fencing_token > 0)
);

create table task_execution (
    id              bigint generated always as identity primary key,
    task_name       text not null,
    business_date   date not null,
    trigger         text not null,
    instance_id     text not null,
    fencing_token   bigint not null,
    started_at      timestamptz not null default now(),
    finished_at     timestamptz,
    status          text not null default 'RUNNING',
    affected_rows   bigint not null default 0,
    error           text,
    constraint task_execution_trigger_known check (trigger in ('cron', 'startup', 'manual')),
    constraint task_execution_status_known check (status in ('RUNNING', 'SUCCESS', 'FAILED')),
    constraint task_execution_finished
        check ((status = 'RUNNING') = (finished_at is null)),
    constraint task_execution_failed_has_error check (status <> 'FAILED' or error is not null)
);
-- At most one SUCCESS per task and business date, whichever replica or trigger produced it.
create unique index task_execution_one_success on task_execution (task_name, business_date)
    where status = 'SUCCESS';
create index task_execution_task_date on task_execution (task_name, business_date desc, id desc);
create index task_execution_running on task_execution (task_name) where status = 'RUNNING';

-- Every fire every replica handled, won or not: the answer to "which replica ran what, and what
-- did the others see". outcome: WON (took the lock and ran), HELD (another holder had it),
-- BUSY (this process was still running the previous fire), LOST_LEASE (renewal failed or the
-- fence refused a write), UNAVAILABLE (the lock store could not be reached), NOTHING_TO_DO.
create table task_attempt (
    id             bigint generated always as identity primary key,
    task_name      text not null,
    trigger        text not null,
    instance_id    text not null,
    -- The scheduled instant for cron fires, the request time otherwise.
    fired_at       timestamptz not null,
    recorded_at    timestamptz not null default now(),
    outcome        text not null,
    fencing_token  bigint,
    holder         text,
    detail         text,
    constraint task_attempt_trigger_known check (trigger in ('cron', 'startup', 'manual')),
    constraint task_attempt_outcome_known
        check (outcome in ('WON', 'HELD', 'BUSY', 'LOST_LEASE', 'UNAVAILABLE', 'NOTHING_TO_DO'))
);
create index task_attempt_task on task_attempt (task_name, id desc);
