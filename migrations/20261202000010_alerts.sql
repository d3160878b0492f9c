-- Execution alerts (SPEC §3), the webhook outbox, and when each job was first deployed.

-- When a job first ran anywhere: every replica inserts its row at start (`on conflict do
-- nothing`), so the first one wins and the instant never moves. MISSED alerts only look at slots
-- after it: a service deployed at 10:00 cannot have missed 02:00 that morning.
create table job_registration (
    task_name      text primary key,
    first_seen_at  timestamptz not null default now()
);

create table alert (
    id             bigint generated always as identity primary key,
    kind           text not null,
    task_name      text not null,
    business_date  date not null,
    state          text not null default 'ACTIVE',
    raised_at      timestamptz not null default now(),
    resolved_at    timestamptz,
    -- What an operator reads first: which execution, what error, which deadline passed.
    detail         text not null,
    -- The execution that caused a FAILED or TIMEOUT alert; a TIMEOUT resolves when this one stops
    -- RUNNING. Null for MISSED (often nothing ran at all).
    execution_id   bigint references task_execution (id),
    constraint alert_kind_known check (kind in ('FAILED', 'TIMEOUT', 'MISSED')),
    constraint alert_state_known check (state in ('ACTIVE', 'RESOLVED')),
    constraint alert_resolved_has_time check ((state = 'RESOLVED') = (resolved_at is not null)),
    -- Raised once per kind, task and date, whichever replica sees it first: every replica
    -- inserts with `on conflict do nothing`, and only the winner gets its row back.
    constraint alert_once unique (kind, task_name, business_date)
);
-- Resolution re-checks the active alerts every minute; resolved ones leave this index.
create index alert_active on alert (task_name) where state = 'ACTIVE';
create index alert_state_id on alert (state, id desc);

-- FAILED alerts look for failed executions without a SUCCESS for their date, over the whole
-- history: failures are rare, so this index stays small however many dates have been settled.
create index task_execution_failed on task_execution (task_name, business_date) where status = 'FAILED';

-- The webhook outbox. A row is written in the same transaction as the raise or resolve it
-- announces, so a crash never loses a notification, and `unique (alert_id, event)` means a
-- restart never queues one twice. Delivery workers on every replica claim due rows with
-- `for update skip locked`, pushing `next_attempt_at` forward as a lease, then POST.
create table alert_delivery (
    -- Sent as the `Idempotency-Key` header: the same id on every retry of this notification,
    -- so a receiver can drop the rare duplicate (a crash between the POST and recording it).
    id               uuid primary key default gen_random_uuid(),
    alert_id         bigint not null references alert (id),
    event            text not null,
    -- The exact body POSTed, frozen when the event happened: `{"event": ..., "alert": {...}}`.
    payload          jsonb not null,
    attempts         integer not null default 0,
    next_attempt_at  timestamptz not null default now(),
    delivered_at     timestamptz,
    last_error       text,
    created_at       timestamptz not null default now(),
    constraint alert_delivery_event_known check (event in ('raised', 'resolved')),
    constraint alert_delivery_once unique (alert_id, event)
);
-- Workers poll for due, undelivered rows; delivered rows leave this index.
create index alert_delivery_due on alert_delivery (next_attempt_at) where delivered_at is null;
