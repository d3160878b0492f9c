-- Completeness: fines that never depend on when a loan was recorded, a start date that is
-- recorded once, a lease that renews while a date runs, and the audit's alert.

-- 1. Loans recorded or changed since they were last accrued.
--
-- The nightly accrual brings every loan's fine for the month of the date it settles up to date.
-- A loan recorded (an import) or changed (a back-dated return) after earlier months were
-- settled would owe nothing for those months, ever. Every such loan is queued here, and the
-- next run accrues all of its months from the start month on, then takes it off the queue in
-- the same fenced transaction (`src/settlement/changes.rs`).
--
-- A queue table rather than a flag on `loan`: the run would have to update the loan row to
-- clear a flag, and that row lock would last until the date commits (minutes at a month end),
-- so a librarian returning that book would wait for the run. Deleting its own queue rows
-- blocks nobody; a change made while the run works adds a new row, which the next run reads.
create table loan_change (
    id          bigint generated always as identity primary key,
    loan_id     bigint not null references loan (id),
    changed_at  timestamptz not null default now()
);
-- The audit tells "not accrued yet" from "missing" by this index.
create index loan_change_loan on loan_change (loan_id);

-- Statement-level triggers with transition tables: one insert per statement, so a bulk COPY of
-- a million loans (`finesettle seed`) queues them in one pass instead of a million trigger calls.
create function loan_queue_inserted() returns trigger
language plpgsql as $$
begin
    insert into loan_change (loan_id) select id from new_loans;
    return null;
end;
$$;
create trigger loan_queue_inserted after insert on loan
    referencing new table as new_loans
    for each statement execute function loan_queue_inserted();

-- Only a change of what the fine is computed from queues a loan again.
create function loan_queue_changed() returns trigger
language plpgsql as $$
begin
    insert into loan_change (loan_id)
    select n.id
    from new_loans n
    join old_loans o on o.id = n.id
    where (n.due_on, n.returned_on, n.daily_fine_cents)
          is distinct from (o.due_on, o.returned_on, o.daily_fine_cents);
    return null;
end;
$$;
create trigger loan_queue_changed after update on loan
    referencing new table as new_loans old table as old_loans
    for each statement execute function loan_queue_changed();

-- Loans that exist when this migration runs were accrued by an earlier version, which missed
-- the past months of back-dated imports: queue them all once, so the first run after the
-- upgrade charges what those versions left out. SETTLED and VOID fines are never touched.
insert into loan_change (loan_id) select id from loan;

-- When a loan last changed, by the database clock. The audit lists a SETTLED fine whose loan
-- changed after it was settled apart, as a correction for a librarian, not as an error.
alter table loan add column updated_at timestamptz not null default now();

create function loan_touch() returns trigger
language plpgsql as $$
begin
    new.updated_at := now();
    return new;
end;
$$;
create trigger loan_touch before update on loan
    for each row execute function loan_touch();

-- 2. The start date, recorded the first time the job plans a date.
--
-- `FINESETTLE_SETTLE_START_DATE` wins when set. Otherwise the first date the job ever planned
-- (a cron fire's target, or an operator's first date) is written here once and never moves: it
-- is where the gap search of every later run begins, the first month ever accrued, and the first
-- date MISSED expects. The row may be written by `finesettle settle` before any `serve`, so the
-- planner upserts it.
alter table job_registration add column start_date date;

-- 3. The owner and fencing tokens as key columns.
--
-- The fence (`src/lock/fence.rs`) locks the task's row `for key share`. PostgreSQL makes an
-- update that changes a column of a unique index wait for that lock, and lets an update of other
-- columns through: a takeover (a new owner token and the next fencing token) waits for the
-- holder's fenced transaction as before, while the holder's own lease renewal (`locked_until`
-- only) no longer does, so a date may take longer than the lease.
--
-- The index exists for that effect; its uniqueness is already true (the owner token is fresh for
-- every acquisition). It is on the owner token and not on `(task_name, fencing_token)`: two
-- replicas racing to insert a task's first row both insert fencing token 1, and only conflicts on
-- the primary key are resolved by `on conflict (task_name)`; a second unique index on the name
-- and token would fail the loser with a duplicate key instead of answering "held".
create unique index task_lock_key_tokens on task_lock (owner_token, fencing_token);

-- 4. AUDIT alerts: `finesettle audit` found fines or ledger entries that differ from a
-- recomputation from the loans (business_date = the first day of the audited month).
alter table alert drop constraint alert_kind_known;
alter table alert add constraint alert_kind_known
    check (kind in ('FAILED', 'TIMEOUT', 'MISSED', 'AUDIT'));
