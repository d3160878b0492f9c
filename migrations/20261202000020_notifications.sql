-- Loan reminders sent to members (SPEC §4): "due tomorrow" and "now overdue".
--
-- The reminders wait in a Redis sorted set until their moment, but what was sent is recorded
-- here, and only here: Redis may lose its data (a restart without persistence, a FLUSHALL), and
-- the reconciler then rebuilds the missing reminders from this table and `loan`.

create table notification (
    id         bigint generated always as identity primary key,
    loan_id    bigint not null references loan (id),
    -- Copied from the loan so that a member's list reads one index, without a join.
    member_id  bigint not null references member (id),
    kind       text not null,
    -- The instant the consumer recorded it, by the clock it polls with (the database's).
    sent_at    timestamptz not null,
    constraint notification_kind_known check (kind in ('DUE_TOMORROW', 'OVERDUE')),
    -- At most one reminder of each kind per loan, whichever replica delivers it and however many
    -- times Redis hands it out: consumers insert with `on conflict do nothing`, so a redelivery
    -- after a crash is harmless.
    constraint notification_once unique (loan_id, kind)
);
-- `GET /api/v1/members/{id}/notifications`, keyset-paginated by id.
create index notification_member_id on notification (member_id, id);

-- The reconciler walks every open loan in id order, every few minutes, looking for reminders
-- that are neither recorded nor queued. Open loans are a small part of a library's history, so
-- this partial index stays small where a walk of the primary key would read every loan ever made.
create index loan_open_id on loan (id) where returned_on is null;
