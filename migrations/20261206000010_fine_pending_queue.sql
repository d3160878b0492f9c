-- Expand (0.2.0). The PENDING fines as a queue of their own, so that settling a fine can be a HOT
-- update of `fine_record` (issue 21; docs/DESIGN.md §4.9, "What the schema costs a month-end
-- date").
--
-- The settlement found PENDING fines through `fine_record_pending`, an index on `fine_record`
-- whose predicate is `status = 'PENDING'`. A column of an index's predicate is an indexed column
-- for PostgreSQL, so the update that settles a fine (it changes `status`) could never be HOT: it
-- added an entry for the new version to every index of `fine_record`, `fine_record_member`
-- (member_id, id) included, at a random place of an index that outgrows the shared buffers at
-- ten million loans. With the PENDING fines kept in `fine_pending` instead, no index of
-- `fine_record` names `status` (once the contract step `20261206000020` drops
-- `fine_record_pending`), and the settle update changes no indexed column: it writes the new
-- version beside the old one on the same page and touches no index.
--
-- The rule: every PENDING fine has its row in `fine_pending` (its `(settle_month, loan_id)`,
-- the fine's unique key). A row whose fine is no longer PENDING (voided by the API, settled by
-- the previous release or by hand) is allowed; the settlement deletes it when its walk reaches
-- it (once the fine's month has ended), together with the rows of the fines it settles.
-- Triggers keep the rule for every writer, this release's, the previous release's (which knows
-- nothing of this table) and an operator's:
--
-- - after each statement that inserts fines, one insert of its new PENDING fines (a transition
--   table; `fine_record_parents_inserted` already captures the same one, so it costs one more
--   statement per batch, not a copy per row);
-- - an update that moves a fine back to PENDING (the status machine refuses it) or gives it
--   another key (nobody does it) queues its new key and drops its old one, row by row; the
--   trigger's `when` keeps it off every other update;
-- - a delete or truncate of fines drops their rows.
--
-- `fine_record` gets a fillfactor of 45: a fine is written by the accrual and settled later;
-- a HOT update needs room for the new version on the same page, and on a month-end date both
-- versions are live in the date's transaction (a row of about 124 bytes settles into about 132).
-- New pages only; the rows already stored keep their pages.
do $$
begin
    -- Before anything: a running date (of either release) holds the table; wait for it here,
    -- holding nothing else, then keep its writers out until the backfill below has committed.
    lock table fine_record in share row exclusive mode;
end;
$$;

create table fine_pending (
    settle_month  date not null,
    loan_id       bigint not null,
    -- The settlement walks this key in order, as it walked `fine_record_pending`.
    primary key (settle_month, loan_id)
);

create function fine_pending_inserted() returns trigger
language plpgsql as $$
begin
    insert into fine_pending (settle_month, loan_id)
    select settle_month, loan_id from new_fines where status = 'PENDING'
    on conflict do nothing;
    return null;
end;
$$;
create trigger fine_pending_inserted after insert on fine_record
    referencing new table as new_fines
    for each statement execute function fine_pending_inserted();

create function fine_pending_rekeyed() returns trigger
language plpgsql as $$
begin
    if (old.settle_month, old.loan_id) is distinct from (new.settle_month, new.loan_id) then
        delete from fine_pending where settle_month = old.settle_month and loan_id = old.loan_id;
    end if;
    if new.status = 'PENDING' then
        insert into fine_pending (settle_month, loan_id) values (new.settle_month, new.loan_id)
        on conflict do nothing;
    end if;
    return null;
end;
$$;
create trigger fine_pending_rekeyed after update of settle_month, loan_id, status on fine_record
    for each row
    when ((old.settle_month, old.loan_id) is distinct from (new.settle_month, new.loan_id)
          or (new.status = 'PENDING' and old.status is distinct from 'PENDING'))
    execute function fine_pending_rekeyed();

create function fine_pending_deleted() returns trigger
language plpgsql as $$
begin
    delete from fine_pending q using old_fines o
    where q.settle_month = o.settle_month and q.loan_id = o.loan_id;
    return null;
end;
$$;
create trigger fine_pending_deleted after delete on fine_record
    referencing old table as old_fines
    for each statement execute function fine_pending_deleted();

create function fine_pending_truncated() returns trigger
language plpgsql as $$
begin
    truncate fine_pending;
    return null;
end;
$$;
create trigger fine_pending_truncated after truncate on fine_record
    for each statement execute function fine_pending_truncated();

insert into fine_pending (settle_month, loan_id)
select settle_month, loan_id from fine_record where status = 'PENDING';

alter table fine_record set (fillfactor = 45);
