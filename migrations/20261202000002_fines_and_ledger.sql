-- Fines and the member ledger.

create table fine_record (
    id               bigint generated always as identity primary key,
    loan_id          bigint not null references loan (id),
    -- Denormalised from the loan: fines are listed and summed by member without a join.
    member_id        bigint not null references member (id),
    -- First day of the month the fine is for.
    settle_month     date not null,
    overdue_days     integer not null,
    amount_cents     bigint not null,
    -- The last day counted (or that could still count) toward the fine: min(run date, month end,
    -- return date). It only moves forward, which keeps reruns and out-of-order runs harmless.
    accrued_through  date not null,
    status           text not null default 'PENDING',
    settled_at       timestamptz,
    voided_at        timestamptz,
    void_reason      text,
    -- Fencing token of the settlement run that last wrote this row (0 for rows written by the API).
    fencing_token    bigint not null,
    created_at       timestamptz not null default now(),
    updated_at       timestamptz not null default now(),
    -- One fine per loan and month: the accrual upserts on this key.
    constraint fine_record_loan_month_key unique (loan_id, settle_month),
    constraint fine_record_month_is_first_day check (extract(day from settle_month) = 1),
    constraint fine_record_accrued_in_month
        check (date_trunc('month', accrued_through)::date = settle_month),
    constraint fine_record_amount_range check (overdue_days between 0 and 31 and amount_cents >= 0),
    constraint fine_record_status_known check (status in ('PENDING', 'SETTLED', 'VOID')),
    constraint fine_record_settled_has_time check (status = 'PENDING' or status = 'VOID' or settled_at is not null),
    constraint fine_record_void_has_reason
        check (status <> 'VOID' or (voided_at is not null and length(btrim(void_reason)) > 0))
);
create index fine_record_member on fine_record (member_id, id);
-- The settle step scans PENDING fines only; once settled, a fine leaves this index.
create index fine_record_pending on fine_record (settle_month, loan_id) where status = 'PENDING';

-- The status machine PENDING -> SETTLED -> VOID, PENDING -> VOID is enforced here as well as in
-- the code, so that no client, however buggy, can bring a fine back from VOID or un-settle it.
create function fine_record_check_transition() returns trigger
language plpgsql as $$
begin
    if new.status is distinct from old.status and not (
        (old.status = 'PENDING' and new.status in ('SETTLED', 'VOID'))
        or (old.status = 'SETTLED' and new.status = 'VOID')
    ) then
        raise exception 'fine % cannot go from % to %', old.id, old.status, new.status
            using errcode = 'check_violation', constraint = 'fine_record_status_transition';
    end if;
    -- A settled or void fine's amount is history: only its status may still change.
    if old.status <> 'PENDING' and (new.amount_cents, new.overdue_days, new.accrued_through)
        is distinct from (old.amount_cents, old.overdue_days, old.accrued_through) then
        raise exception 'fine % is % and its amount can no longer change', old.id, old.status
            using errcode = 'check_violation', constraint = 'fine_record_status_transition';
    end if;
    new.updated_at := now();
    return new;
end;
$$;
create trigger fine_record_transition before update on fine_record
    for each row execute function fine_record_check_transition();

create table ledger_entry (
    id             bigint generated always as identity primary key,
    member_id      bigint not null references member (id),
    fine_id        bigint references fine_record (id),
    kind           text not null,
    -- Signed from the library's side: CHARGE positive, REVERSAL and PAYMENT negative. A member's
    -- balance (what they owe) is the plain sum.
    amount_cents   bigint not null,
    fencing_token  bigint not null default 0,
    created_at     timestamptz not null default now(),
    constraint ledger_entry_kind_known check (kind in ('CHARGE', 'REVERSAL', 'PAYMENT')),
    constraint ledger_entry_sign check (
        (kind = 'CHARGE' and amount_cents > 0 and fine_id is not null)
        or (kind = 'REVERSAL' and amount_cents < 0 and fine_id is not null)
        or (kind = 'PAYMENT' and amount_cents < 0 and fine_id is null)
    )
);
-- Exactly one CHARGE and at most one REVERSAL per fine, whoever tries to post them twice.
create unique index ledger_entry_fine_kind_key on ledger_entry (fine_id, kind) where fine_id is not null;
create index ledger_entry_member on ledger_entry (member_id, id);

-- Idempotency keys for POSTs that create things (loans, payments). The first successful response
-- is stored with a hash of the request body; a retry with the same key and body gets it back, the
-- same key with another body is refused. The key row is inserted in the same transaction as the
-- effect, so a concurrent retry waits on the unique index and then sees the stored response.
create table idempotency_key (
    scope            text not null,
    key              text not null,
    request_hash     bytea not null,
    response_status  smallint not null,
    response_body    jsonb not null,
    created_at       timestamptz not null default now(),
    primary key (scope, key),
    constraint idempotency_key_length check (length(key) between 1 and 255)
);
