-- The integrity rules of fines and the ledger, checked once per statement instead of once per row
-- (issue 21). Expand: every rule of `20261202000002_fines_and_ledger` still holds for every
-- writer, this release's, the previous release's and an operator's, and a violation is reported
-- with the same SQLSTATE and constraint name as before, so nothing the previous release relies on
-- changes. What changes is the price of a month-end date: see docs/DESIGN.md, "What the schema
-- costs a month-end date".
--
-- The statements below change triggers and constraints of four tables, each taking its table (and
-- a foreign key's, the referenced one) exclusively for a moment. Taken one by one, a running date
-- of the previous release could hold the next one while waiting for one taken here: a deadlock,
-- and this migration (so `serve`) would fail. All four are taken first, in the order a date
-- takes them: it waits for a running date at the first one, holding none.
-- (In a `do` block, so that applying the file with psql outside a transaction, as
-- scripts/sqlx-prepare does, is not refused; sqlx runs it in the migration's transaction.)
do $$
begin
    lock table loan, fine_record, member, ledger_entry in access exclusive mode;
end;
$$;

-- 1. The status machine: the same function, called only when it has something to do.
--
-- `fine_record_check_transition()` refuses a move outside PENDING -> SETTLED -> VOID /
-- PENDING -> VOID and any change of a settled or void fine's amount, and stamps `updated_at`.
-- It ran for every updated row: a plpgsql call per fine settled. The trigger's `when` now holds
-- the function's own conditions, evaluated as a plain expression on the row, so the function runs
-- only when it will raise, or when the statement did not stamp `updated_at = now()` itself (the
-- previous release, an operator's `update`). When `when` is false the function would have raised
-- nothing and set `updated_at` to the value it already has: the result is the same row.
drop trigger fine_record_transition on fine_record;
create trigger fine_record_transition before update on fine_record
    for each row
    when (
        (new.status is distinct from old.status and not (
            (old.status = 'PENDING' and new.status in ('SETTLED', 'VOID'))
            or (old.status = 'SETTLED' and new.status = 'VOID')))
        or (old.status <> 'PENDING' and (new.amount_cents, new.overdue_days, new.accrued_through)
            is distinct from (old.amount_cents, old.overdue_days, old.accrued_through))
        or new.updated_at is distinct from now()
    )
    execute function fine_record_check_transition();

-- 2. The four foreign keys of fines and ledger entries, as statement-level checks.
--
-- A foreign key checks each inserted row with a query of its own and locks the parent row
-- (`for key share`): for a month-end of 300,000 fines that is 600,000 queries and 300,000 loan
-- rows locked (each lock a write of the loan's page and a WAL record) for the fines, and 600,000
-- more queries for their CHARGEs. The same rule is kept here in two halves:
--
-- - the child side: after each statement that inserts fines or ledger entries, one anti-join of
--   the statement's new rows (a transition table) against the parents refuses the statement if any
--   row names a loan, member or fine that does not exist. An update that targets a key column is
--   checked row by row as the foreign key did (nobody does it; it is never on the hot path).
-- - the parent side: deleting a loan, member or fine, giving it a new id (`set id = default`) or
--   truncating its table first takes a SHARE lock on the child tables, which waits for every
--   transaction that is writing children and holds off new ones until it ends, then refuses if a
--   child still names a removed parent.
--
-- The lock replaces the row locks: in READ COMMITTED (every writer of finesettle, of either
-- release) each check reads a snapshot taken after it, so a child inserted while its parent is
-- deleted is seen by one of the two checks, whichever order they come in. A REPEATABLE READ or
-- SERIALIZABLE transaction checks its children against its own older snapshot; there the child
-- side locks the parents as the foreign key did, and the parent side refuses outright (remove
-- loans, members or fines in READ COMMITTED), since its snapshot cannot see children committed
-- after it began.
--
-- Errors name the constraints that were dropped (`fine_record_loan_id_fkey`, ...) with SQLSTATE
-- 23503, as before.

-- The parent tables' side: refuses removing parents in a transaction whose snapshot is older
-- than the lock it just took.
create function integrity_parent_check_isolation(what text) returns void
language plpgsql as $$
begin
    if current_setting('transaction_isolation') <> 'read committed' then
        raise exception '% must run in a READ COMMITTED transaction', what
            using errcode = 'feature_not_supported',
                  hint = 'Fines and ledger entries may reference these rows; the check needs a fresh snapshot.';
    end if;
end;
$$;

-- The dropped foreign key's own errors, raised by the checks that replace it: SQLSTATE 23503, the
-- constraint's name and PostgreSQL's wording, so both releases map them as before.
create function raise_missing_parent(child text, fk text, child_column text, parent text, key bigint)
returns void
language plpgsql as $$
begin
    raise exception 'insert or update on table "%" violates foreign key constraint "%"', child, fk
        using errcode = 'foreign_key_violation', constraint = fk, table = child,
              detail = format('Key (%s)=(%s) is not present in table "%s".', child_column, key, parent);
end;
$$;

create function raise_parent_in_use(parent text, fk text, child text, key bigint)
returns void
language plpgsql as $$
begin
    raise exception 'update or delete on table "%" violates foreign key constraint "%" on table "%"', parent, fk, child
        using errcode = 'foreign_key_violation', constraint = fk, table = child,
              detail = format('Key (id)=(%s) is still referenced from table "%s".', key, child);
end;
$$;

alter table fine_record drop constraint fine_record_loan_id_fkey;
alter table fine_record drop constraint fine_record_member_id_fkey;
alter table ledger_entry drop constraint ledger_entry_member_id_fkey;
alter table ledger_entry drop constraint ledger_entry_fine_id_fkey;

-- fine_record -> loan, member: inserted rows, once per statement.
create function fine_record_parents_inserted() returns trigger
language plpgsql as $$
declare
    bad record;
begin
    if current_setting('transaction_isolation') <> 'read committed' then
        perform 1 from loan where id in (select loan_id from new_fines) for key share;
        perform 1 from member where id in (select member_id from new_fines) for key share;
    end if;
    -- One probe per fine: a fine names its loan's member (the accrual copies it), and a loan's
    -- member exists by the loan's own foreign key; only a fine naming another member costs a
    -- second probe.
    select n.loan_id, n.member_id, l.id is null as no_loan into bad
    from new_fines n
    left join loan l on l.id = n.loan_id
    where l.id is null
       or (l.member_id <> n.member_id and not exists (select 1 from member m where m.id = n.member_id))
    limit 1;
    if found and bad.no_loan then
        perform raise_missing_parent('fine_record', 'fine_record_loan_id_fkey', 'loan_id', 'loan', bad.loan_id);
    elsif found then
        perform raise_missing_parent('fine_record', 'fine_record_member_id_fkey', 'member_id', 'member', bad.member_id);
    end if;
    return null;
end;
$$;
create trigger fine_record_parents_inserted after insert on fine_record
    referencing new table as new_fines
    for each statement execute function fine_record_parents_inserted();

-- fine_record -> loan, member: an update that sets a key column (never done by finesettle), row
-- by row and locking the parent as the foreign key did.
create function fine_record_parents_updated() returns trigger
language plpgsql as $$
begin
    perform 1 from loan where id = new.loan_id for key share;
    if not found then
        perform raise_missing_parent('fine_record', 'fine_record_loan_id_fkey', 'loan_id', 'loan', new.loan_id);
    end if;
    perform 1 from member where id = new.member_id for key share;
    if not found then
        perform raise_missing_parent('fine_record', 'fine_record_member_id_fkey', 'member_id', 'member', new.member_id);
    end if;
    return new;
end;
$$;
-- Before, not after: an after-row update trigger, even one that never fires, makes every update
-- of a fine fetch the old row once more; the before-row trigger above already fetched it.
create trigger fine_record_parents_updated before update of loan_id, member_id on fine_record
    for each row execute function fine_record_parents_updated();

-- ledger_entry -> member, fine_record: inserted rows, once per statement.
create function ledger_entry_parents_inserted() returns trigger
language plpgsql as $$
declare
    bad record;
begin
    if current_setting('transaction_isolation') <> 'read committed' then
        perform 1 from member where id in (select member_id from new_entries) for key share;
        perform 1 from fine_record where id in (select fine_id from new_entries) for key share;
    end if;
    -- One probe per CHARGE or REVERSAL: it names its fine's member, which exists since the fine
    -- does (the rules above); a PAYMENT, or an entry naming another member, probes the member.
    select n.member_id, n.fine_id, (n.fine_id is not null and f.id is null) as no_fine into bad
    from new_entries n
    left join fine_record f on f.id = n.fine_id
    where (n.fine_id is not null and f.id is null)
       or (f.member_id is distinct from n.member_id
           and not exists (select 1 from member m where m.id = n.member_id))
    limit 1;
    if found and bad.no_fine then
        perform raise_missing_parent('ledger_entry', 'ledger_entry_fine_id_fkey', 'fine_id', 'fine_record', bad.fine_id);
    elsif found then
        perform raise_missing_parent('ledger_entry', 'ledger_entry_member_id_fkey', 'member_id', 'member', bad.member_id);
    end if;
    return null;
end;
$$;
create trigger ledger_entry_parents_inserted after insert on ledger_entry
    referencing new table as new_entries
    for each statement execute function ledger_entry_parents_inserted();

create function ledger_entry_parents_updated() returns trigger
language plpgsql as $$
begin
    perform 1 from member where id = new.member_id for key share;
    if not found then
        perform raise_missing_parent('ledger_entry', 'ledger_entry_member_id_fkey', 'member_id', 'member', new.member_id);
    end if;
    if new.fine_id is not null then
        perform 1 from fine_record where id = new.fine_id for key share;
        if not found then
            perform raise_missing_parent('ledger_entry', 'ledger_entry_fine_id_fkey', 'fine_id', 'fine_record', new.fine_id);
        end if;
    end if;
    return null;
end;
$$;
create trigger ledger_entry_parents_updated after update of member_id, fine_id on ledger_entry
    for each row execute function ledger_entry_parents_updated();

-- The parents' side: one trigger function per parent table, for a delete (the removed rows as a
-- transition table), an id change (row by row) and a truncate (every row is gone).

-- loan <- fine_record.loan_id
create function loan_removed() returns trigger
language plpgsql as $$
declare
    bad bigint;
begin
    if tg_op = 'UPDATE' and new.id = old.id then
        return null;
    end if;
    perform integrity_parent_check_isolation('removing loans');
    lock table fine_record in share mode;
    if tg_op = 'DELETE' then
        select f.loan_id into bad from removed r join fine_record f on f.loan_id = r.id limit 1;
    elsif tg_op = 'UPDATE' then
        select f.loan_id into bad from fine_record f where f.loan_id = old.id limit 1;
    else
        select f.loan_id into bad from fine_record f limit 1;
    end if;
    if found then
        perform raise_parent_in_use('loan', 'fine_record_loan_id_fkey', 'fine_record', bad);
    end if;
    return null;
end;
$$;

-- member <- fine_record.member_id, ledger_entry.member_id
create function member_removed() returns trigger
language plpgsql as $$
declare
    bad bigint;
begin
    if tg_op = 'UPDATE' and new.id = old.id then
        return null;
    end if;
    perform integrity_parent_check_isolation('removing members');
    lock table fine_record, ledger_entry in share mode;
    if tg_op = 'DELETE' then
        select f.member_id into bad from removed r join fine_record f on f.member_id = r.id limit 1;
    elsif tg_op = 'UPDATE' then
        select f.member_id into bad from fine_record f where f.member_id = old.id limit 1;
    else
        select f.member_id into bad from fine_record f limit 1;
    end if;
    if found then
        perform raise_parent_in_use('member', 'fine_record_member_id_fkey', 'fine_record', bad);
    end if;
    if tg_op = 'DELETE' then
        select e.member_id into bad from removed r join ledger_entry e on e.member_id = r.id limit 1;
    elsif tg_op = 'UPDATE' then
        select e.member_id into bad from ledger_entry e where e.member_id = old.id limit 1;
    else
        select e.member_id into bad from ledger_entry e limit 1;
    end if;
    if found then
        perform raise_parent_in_use('member', 'ledger_entry_member_id_fkey', 'ledger_entry', bad);
    end if;
    return null;
end;
$$;

-- fine_record <- ledger_entry.fine_id
create function fine_record_removed() returns trigger
language plpgsql as $$
declare
    bad bigint;
begin
    if tg_op = 'UPDATE' and new.id = old.id then
        return new;
    end if;
    perform integrity_parent_check_isolation('removing fines');
    lock table ledger_entry in share mode;
    if tg_op = 'DELETE' then
        select e.fine_id into bad from removed r join ledger_entry e on e.fine_id = r.id limit 1;
    elsif tg_op = 'UPDATE' then
        select e.fine_id into bad from ledger_entry e where e.fine_id = old.id limit 1;
    else
        select e.fine_id into bad from ledger_entry e where e.fine_id is not null limit 1;
    end if;
    if found then
        perform raise_parent_in_use('fine_record', 'ledger_entry_fine_id_fkey', 'ledger_entry', bad);
    end if;
    -- null for a delete or truncate (a statement trigger); the row for an update (before-row)
    return new;
end;
$$;

create trigger loan_removed after delete on loan
    referencing old table as removed
    for each statement execute function loan_removed();
create trigger loan_rekeyed after update of id on loan
    for each row execute function loan_removed();
create trigger loan_truncated after truncate on loan
    for each statement execute function loan_removed();

create trigger member_removed after delete on member
    referencing old table as removed
    for each statement execute function member_removed();
create trigger member_rekeyed after update of id on member
    for each row execute function member_removed();
create trigger member_truncated after truncate on member
    for each statement execute function member_removed();

create trigger fine_record_removed after delete on fine_record
    referencing old table as removed
    for each statement execute function fine_record_removed();
create trigger fine_record_rekeyed before update of id on fine_record
    for each row execute function fine_record_removed();
create trigger fine_record_truncated after truncate on fine_record
    for each statement execute function fine_record_removed();
