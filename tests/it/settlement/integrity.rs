//! The integrity rules of fines and the ledger, attacked with raw SQL the way an operator or a
//! buggy release would: a fine or a ledger entry never names a missing loan, member or fine (on
//! insert, on update, and when the parent is removed, also concurrently), a fine's status only
//! moves PENDING -> SETTLED -> VOID or PENDING -> VOID and a settled amount never changes, one
//! CHARGE per fine. (The fence is attacked in `fencing.rs`.)
//!
//! The rules were foreign keys and a row trigger; since `20261205000210` they are checked once
//! per statement (docs/DESIGN.md, "What the schema costs a month-end date"). A violation still
//! answers the same SQLSTATE and constraint name.

use std::time::Duration;

use sqlx::postgres::PgRow;
use sqlx::{Connection, FromRow, PgConnection, PgPool, Postgres, Transaction};

use crate::common::data::ymd;
use crate::common::fixtures::open_transaction;
use crate::common::settlement::{fresh_db, fresh_db_with_loans, walk};

/// Asserts that `result` is the database refusing with `code`, naming `constraint`.
fn refused<T: std::fmt::Debug>(result: Result<T, sqlx::Error>, code: &str, constraint: &str) {
    let err = result.expect_err("the database should refuse this");
    let db = err
        .as_database_error()
        .unwrap_or_else(|| panic!("not a database error: {err}"));
    assert_eq!(db.code().as_deref(), Some(code), "{db}");
    assert_eq!(db.constraint(), Some(constraint), "{db}");
}

/// Runs `sql` with `id` bound to `$1` and checks that a missing parent refuses it, naming `constraint`.
async fn refused_with(pool: &PgPool, sql: &'static str, id: i64, constraint: &str) {
    refused(sqlx::query(sql).bind(id).execute(pool).await, "23503", constraint);
}

/// [`refused_with`] for each `(sql, constraint)` in turn, all with `id`.
async fn all_refused_with(pool: &PgPool, id: i64, cases: &[(&'static str, &str)]) {
    for &(sql, constraint) in cases {
        refused_with(pool, sql, id, constraint).await;
    }
}

const FINE_LOAN: &str = "fine_record_loan_id_fkey";
const FINE_MEMBER: &str = "fine_record_member_id_fkey";
const ENTRY_MEMBER: &str = "ledger_entry_member_id_fkey";
const ENTRY_FINE: &str = "ledger_entry_fine_id_fkey";

/// Runs `sql` with `id` bound to `$1`, which must succeed.
async fn execute(pool: &PgPool, sql: &'static str, id: i64) {
    sqlx::query(sql).bind(id).execute(pool).await.unwrap();
}

/// The one row `sql` answers, as a tuple of its columns.
async fn fetch_row<T>(pool: &PgPool, sql: &'static str) -> T
where
    T: for<'r> FromRow<'r, PgRow> + Send + Unpin,
{
    sqlx::query_as(sql).fetch_one(pool).await.unwrap()
}

/// A member of its own named `name` (`<name>@example.org`); returns its id.
async fn a_member(pool: &PgPool, name: &str) -> i64 {
    sqlx::query_scalar("insert into member (name, email) values ($1, $1 || '@example.org') returning id")
        .bind(name)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Inserts [`INSERT_FINE`] for `loan` and `member`, which must succeed.
async fn insert_fine(pool: &PgPool, loan: i64, member: i64) {
    sqlx::query(INSERT_FINE)
        .bind(loan)
        .bind(member)
        .execute(pool)
        .await
        .unwrap();
}

/// Every fine and ledger entry names a loan, member and fine that exist.
async fn assert_no_orphans(pool: &PgPool) {
    let orphans: (i64, i64, i64, i64) = fetch_row(
        pool,
        "select (select count(*) from fine_record f where not exists (select from loan l where l.id = f.loan_id)),
                (select count(*) from fine_record f where not exists (select from member m where m.id = f.member_id)),
                (select count(*) from ledger_entry e where not exists (select from member m where m.id = e.member_id)),
                (select count(*) from ledger_entry e
                 where e.fine_id is not null and not exists (select from fine_record f where f.id = e.fine_id))",
    )
    .await;
    assert_eq!(orphans, (0, 0, 0, 0));
}

/// A database whose March was settled on March 31: SETTLED fines with their CHARGEs.
async fn settled_march() -> crate::common::settlement::Db {
    let db = fresh_db_with_loans(21, 60).await;
    crate::common::settlement::assert_all_succeeded(&walk(&db.pool, &[ymd(2026, 3, 31)]).await);
    db
}

/// (fine id, loan id, member id) of a SETTLED fine with a CHARGE.
async fn a_settled_fine(pool: &PgPool) -> (i64, i64, i64) {
    fetch_row(
        pool,
        "select f.id, f.loan_id, f.member_id from fine_record f
         join ledger_entry e on e.fine_id = f.id and e.kind = 'CHARGE'
         where f.status = 'SETTLED' order by f.id limit 1",
    )
    .await
}

/// A loan of its own (with a member and a book of its own) that nothing references yet: its
/// queue row is taken off, as a run would.
async fn a_bare_loan(pool: &PgPool) -> (i64, i64) {
    let (loan, member): (i64, i64) = fetch_row(
        pool,
        "with m as (insert into member (name, email) values ('bare', 'bare' || gen_random_uuid() || '@example.org') returning id),
              b as (insert into book (title) values ('bare') returning id)
         insert into loan (member_id, book_id, borrowed_on, due_on, daily_fine_cents)
         select m.id, b.id, date '2026-05-01', date '2026-05-15', 50 from m, b
         returning id, member_id",
    )
    .await;
    sqlx::query("delete from loan_change where loan_id = $1")
        .bind(loan)
        .execute(pool)
        .await
        .unwrap();
    (loan, member)
}

/// Inserts a PENDING May fine for `loan`, charged to `member`.
const INSERT_FINE: &str = "insert into fine_record
     (loan_id, member_id, settle_month, overdue_days, amount_cents, accrued_through, fencing_token)
     values ($1, $2, date '2026-05-01', 3, 150, date '2026-05-18', 0)";

#[tokio::test]
async fn a_fine_cannot_name_a_missing_loan_or_member() {
    let db = settled_march().await;
    let (fine, loan, member) = a_settled_fine(&db.pool).await;
    let (bare, bare_member) = a_bare_loan(&db.pool).await;
    let count = |pool: PgPool| async move {
        sqlx::query_scalar::<_, i64>("select count(*) from fine_record")
            .fetch_one(&pool)
            .await
            .unwrap()
    };
    let before = count(db.pool.clone()).await;

    // One statement, one good row and one bad: the whole statement is refused.
    refused(
        sqlx::query(
            "insert into fine_record
                 (loan_id, member_id, settle_month, overdue_days, amount_cents, accrued_through, fencing_token)
             values ($1, $2, date '2026-05-01', 3, 150, date '2026-05-18', 0),
                    (-1, $2, date '2026-05-01', 3, 150, date '2026-05-18', 0)",
        )
        .bind(bare)
        .bind(bare_member)
        .execute(&db.pool)
        .await,
        "23503",
        FINE_LOAN,
    );
    refused(
        sqlx::query(INSERT_FINE).bind(bare).bind(-7_i64).execute(&db.pool).await,
        "23503",
        FINE_MEMBER,
    );
    // The accrual's own upsert, with a loan that does not exist.
    refused(
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "{INSERT_FINE} on conflict (loan_id, settle_month) do nothing"
        )))
        .bind(-1_i64)
        .bind(member)
        .execute(&db.pool)
        .await,
        "23503",
        FINE_LOAN,
    );
    // Moving an existing fine onto a missing loan or member.
    let moves = [
        ("update fine_record set loan_id = -1 where id = $1", FINE_LOAN),
        ("update fine_record set member_id = -1 where id = $1", FINE_MEMBER),
    ];
    all_refused_with(&db.pool, fine, &moves).await;
    assert_eq!(count(db.pool.clone()).await, before);
    // A fine of an existing loan and member is of course accepted.
    insert_fine(&db.pool, bare, bare_member).await;
    let _ = loan;
    assert_no_orphans(&db.pool).await;
}

#[tokio::test]
async fn a_ledger_entry_cannot_name_a_missing_member_or_fine() {
    let db = settled_march().await;
    let (fine, _, member) = a_settled_fine(&db.pool).await;
    let (bare, bare_member) = a_bare_loan(&db.pool).await;
    insert_fine(&db.pool, bare, bare_member).await;
    refused(
        sqlx::query(
            "insert into ledger_entry (member_id, fine_id, kind, amount_cents)
             values ($1, null, 'PAYMENT', -100), ($1, -1, 'CHARGE', 100)",
        )
        .bind(member)
        .execute(&db.pool)
        .await,
        "23503",
        ENTRY_FINE,
    );
    refused(
        sqlx::query(
            "insert into ledger_entry (member_id, fine_id, kind, amount_cents) values (-1, null, 'PAYMENT', -100)",
        )
        .execute(&db.pool)
        .await,
        "23503",
        ENTRY_MEMBER,
    );
    let charge: i64 = sqlx::query_scalar("select id from ledger_entry where fine_id = $1 and kind = 'CHARGE'")
        .bind(fine)
        .fetch_one(&db.pool)
        .await
        .unwrap();
    let moves = [
        ("update ledger_entry set fine_id = -1 where id = $1", ENTRY_FINE),
        ("update ledger_entry set member_id = -1 where id = $1", ENTRY_MEMBER),
    ];
    all_refused_with(&db.pool, charge, &moves).await;
    assert_no_orphans(&db.pool).await;
}

#[tokio::test]
async fn a_referenced_loan_member_or_fine_cannot_be_removed() {
    let db = settled_march().await;
    let (fine, loan, _) = a_settled_fine(&db.pool).await;
    sqlx::query("delete from loan_change").execute(&db.pool).await.unwrap();

    // The loan of a fine: deleted, given a new id, truncated.
    let removals = [
        ("delete from loan where id = $1", FINE_LOAN),
        ("update loan set id = default where id = $1", FINE_LOAN),
    ];
    all_refused_with(&db.pool, loan, &removals).await;
    assert!(
        sqlx::raw_sql("truncate loan, loan_change, notification")
            .execute(&db.pool)
            .await
            .is_err()
    );

    // A member named only by a fine (not by a loan, whose own key would refuse first), and one
    // named only by a payment.
    let (bare, _) = a_bare_loan(&db.pool).await;
    let lone = a_member(&db.pool, "lone").await;
    insert_fine(&db.pool, bare, lone).await;
    let removals = [
        ("delete from member where id = $1", FINE_MEMBER),
        ("update member set id = default where id = $1", FINE_MEMBER),
    ];
    all_refused_with(&db.pool, lone, &removals).await;
    let payer = a_member(&db.pool, "payer").await;
    let payment = "insert into ledger_entry (member_id, kind, amount_cents) values ($1, 'PAYMENT', -100)";
    execute(&db.pool, payment, payer).await;
    refused_with(&db.pool, "delete from member where id = $1", payer, ENTRY_MEMBER).await;

    // The fine of a CHARGE.
    let removals = [
        ("delete from fine_record where id = $1", ENTRY_FINE),
        ("update fine_record set id = default where id = $1", ENTRY_FINE),
    ];
    all_refused_with(&db.pool, fine, &removals).await;
    assert!(sqlx::raw_sql("truncate fine_record").execute(&db.pool).await.is_err());
    assert_no_orphans(&db.pool).await;

    // Parents nothing names go, and whole families go together.
    let unnamed = a_member(&db.pool, "unnamed").await;
    execute(&db.pool, "delete from member where id = $1", unnamed).await;
    sqlx::raw_sql("delete from ledger_entry; delete from fine_record")
        .execute(&db.pool)
        .await
        .unwrap();
    execute(&db.pool, "delete from loan where id = $1", loan).await;
}

/// A fine inserted while its loan is deleted: whichever comes first, the other waits for it and
/// is refused, so both never commit.
#[tokio::test]
async fn a_fine_and_the_removal_of_its_loan_cannot_both_commit() {
    let db = fresh_db().await;
    let url = db.url();
    for fine_first in [true, false] {
        let (loan, member) = a_bare_loan(&db.pool).await;
        let mut first = PgConnection::connect(&url).await.unwrap();
        let mut tx = first.begin().await.unwrap();
        let (mut second, statement) = (PgConnection::connect(&url).await.unwrap(), {
            if fine_first {
                sqlx::query(INSERT_FINE)
                    .bind(loan)
                    .bind(member)
                    .execute(&mut *tx)
                    .await
                    .unwrap();
                format!("delete from loan where id = {loan}")
            } else {
                sqlx::query("delete from loan where id = $1")
                    .bind(loan)
                    .execute(&mut *tx)
                    .await
                    .unwrap();
                format!(
                    "insert into fine_record
                     (loan_id, member_id, settle_month, overdue_days, amount_cents, accrued_through, fencing_token)
                     values ({loan}, {member}, date '2026-05-01', 3, 150, date '2026-05-18', 0)"
                )
            }
        });
        let waiting = tokio::spawn(async move {
            let result = sqlx::raw_sql(sqlx::AssertSqlSafe(statement))
                .execute(&mut second)
                .await
                .map(|_| ());
            (result, second)
        });
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(
            !waiting.is_finished(),
            "the second statement must wait for the first transaction"
        );
        tx.commit().await.unwrap();
        let (result, _) = tokio::time::timeout(Duration::from_secs(10), waiting)
            .await
            .expect("the second statement ends once the first commits")
            .unwrap();
        refused(result, "23503", FINE_LOAN);
        assert_no_orphans(&db.pool).await;
    }
}

/// A REPEATABLE READ transaction whose snapshot is taken now.
async fn repeatable_read(pool: &PgPool) -> Transaction<'static, Postgres> {
    let mut tx = pool.begin().await.unwrap();
    sqlx::raw_sql("set transaction isolation level repeatable read; select 1")
        .execute(&mut *tx)
        .await
        .unwrap();
    tx
}

/// In REPEATABLE READ a transaction's snapshot is older than the rows it checks against. A fine
/// for a loan deleted since the snapshot is refused; removing a parent needs READ COMMITTED
/// (checked against a fresh snapshot after the lock), and is refused otherwise.
#[tokio::test]
async fn parents_are_removed_in_read_committed_and_children_checked_in_any_isolation() {
    let db = fresh_db().await;
    let (loan, member) = a_bare_loan(&db.pool).await;
    let mut old = repeatable_read(&db.pool).await;
    execute(&db.pool, "delete from loan where id = $1", loan).await;
    let err = sqlx::query(INSERT_FINE)
        .bind(loan)
        .bind(member)
        .execute(&mut *old)
        .await
        .expect_err("a fine for a deleted loan");
    let code = err
        .as_database_error()
        .and_then(|e| e.code())
        .unwrap_or_default()
        .into_owned();
    assert!(code == "40001" || code == "23503", "{err}");
    old.rollback().await.unwrap();

    let (loan, _) = a_bare_loan(&db.pool).await;
    let mut rr = repeatable_read(&db.pool).await;
    let err = sqlx::query("delete from loan where id = $1")
        .bind(loan)
        .execute(&mut *rr)
        .await
        .expect_err("removing a loan in repeatable read");
    assert_eq!(
        err.as_database_error().and_then(|e| e.code()).as_deref(),
        Some("0A000"),
        "{err}"
    );
    rr.rollback().await.unwrap();
    assert_no_orphans(&db.pool).await;
}

#[tokio::test]
async fn a_fine_status_only_moves_forward_and_a_settled_amount_never_changes() {
    let db = settled_march().await;
    let (fine, _, _) = a_settled_fine(&db.pool).await;
    let update = |sql: &'static str| {
        let pool = db.pool.clone();
        async move { sqlx::query(sql).bind(fine).execute(&pool).await }
    };
    const TRANSITION: &str = "fine_record_status_transition";
    // Back to PENDING, whether or not the statement stamps updated_at itself (this release's
    // statements do; the check must not depend on it).
    refused(
        update("update fine_record set status = 'PENDING' where id = $1").await,
        "23514",
        TRANSITION,
    );
    refused(
        update("update fine_record set status = 'PENDING', updated_at = now() where id = $1").await,
        "23514",
        TRANSITION,
    );
    refused(
        update("update fine_record set amount_cents = amount_cents + 1, updated_at = now() where id = $1").await,
        "23514",
        TRANSITION,
    );
    refused(
        update("update fine_record set overdue_days = overdue_days - 1 where id = $1").await,
        "23514",
        TRANSITION,
    );
    // SETTLED -> VOID is allowed; nothing leaves VOID.
    update("update fine_record set status = 'VOID', voided_at = now(), void_reason = 'test', updated_at = now() where id = $1")
        .await
        .unwrap();
    refused(
        update("update fine_record set status = 'SETTLED', updated_at = now() where id = $1").await,
        "23514",
        TRANSITION,
    );
    refused(
        update("update fine_record set status = 'PENDING' where id = $1").await,
        "23514",
        TRANSITION,
    );

    // PENDING -> SETTLED and PENDING -> VOID are allowed.
    let (bare, member) = a_bare_loan(&db.pool).await;
    insert_fine(&db.pool, bare, member).await;
    let pending: i64 = sqlx::query_scalar("select id from fine_record where loan_id = $1")
        .bind(bare)
        .fetch_one(&db.pool)
        .await
        .unwrap();
    let settle = "update fine_record set status = 'SETTLED', settled_at = now(), updated_at = now() where id = $1";
    open_transaction(&db.pool, settle, pending)
        .await
        .rollback()
        .await
        .unwrap();
    let void = "update fine_record set status = 'VOID', voided_at = now(), void_reason = 'test' where id = $1";
    execute(&db.pool, void, pending).await;

    // Whatever a statement writes into updated_at, the row says when it was last changed.
    let stamp = "update fine_record set updated_at = timestamptz '2000-01-01 00:00Z' where id = $1";
    let mut tx = open_transaction(&db.pool, stamp, fine).await;
    let stamped: bool = sqlx::query_scalar("select updated_at = now() from fine_record where id = $1")
        .bind(fine)
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert!(stamped);
}

#[tokio::test]
async fn a_fine_has_one_charge() {
    let db = settled_march().await;
    let (fine, _, member) = a_settled_fine(&db.pool).await;
    refused(
        sqlx::query("insert into ledger_entry (member_id, fine_id, kind, amount_cents) values ($1, $2, 'CHARGE', 100)")
            .bind(member)
            .bind(fine)
            .execute(&db.pool)
            .await,
        "23505",
        "ledger_entry_fine_kind_key",
    );
    let charges: i64 = sqlx::query_scalar(
        "select count(*) from ledger_entry where kind = 'CHARGE' group by fine_id order by 1 desc limit 1",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(charges, 1);
}

/// (PENDING fines missing from `fine_pending`, queue rows naming no fine).
async fn queue_out_of_step(pool: &PgPool) -> (i64, i64) {
    fetch_row(
        pool,
        "select (select count(*) from fine_record f where f.status = 'PENDING' and not exists
                    (select from fine_pending q where q.settle_month = f.settle_month and q.loan_id = f.loan_id)),
                (select count(*) from fine_pending q where not exists
                    (select from fine_record f where f.settle_month = q.settle_month and f.loan_id = q.loan_id))",
    )
    .await
}

/// The settlement finds PENDING fines through their queue, `fine_pending` (migration
/// `20261206000010`), so every PENDING fine must be queued whoever wrote it: raw SQL the way the
/// previous release or an operator writes fines (which know nothing of the queue) inserts,
/// upserts, re-keys, voids and deletes fines, and the queue must follow; the next month-end date
/// then settles every queued PENDING fine and unqueues the voided one untouched.
#[tokio::test]
async fn every_pending_fine_is_queued_whoever_writes_it() {
    let db = settled_march().await;
    let pool = &db.pool;
    assert_eq!(queue_out_of_step(pool).await, (0, 0), "after the walk");
    // (status, CHARGEs) of the loan's fine for the month
    let fine_of = |loan: i64, month: chrono::NaiveDate| async move {
        sqlx::query_as::<_, (String, i64)>(
            "select f.status,
                    (select count(*) from ledger_entry e where e.fine_id = f.id and e.kind = 'CHARGE')
             from fine_record f where f.loan_id = $1 and f.settle_month = $2",
        )
        .bind(loan)
        .bind(month)
        .fetch_one(pool)
        .await
        .unwrap()
    };
    // (a) a PENDING May fine inserted by hand, and upserted again the way the accrual does
    let (kept, kept_member) = a_bare_loan(pool).await;
    insert_fine(pool, kept, kept_member).await;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "{INSERT_FINE} on conflict (loan_id, settle_month) do update set overdue_days = 4, amount_cents = 200"
    )))
    .bind(kept)
    .bind(kept_member)
    .execute(pool)
    .await
    .unwrap();
    // (b) one moved to June: its May key leaves the queue, its June key joins it
    let (moved, moved_member) = a_bare_loan(pool).await;
    insert_fine(pool, moved, moved_member).await;
    execute(
        pool,
        "update fine_record set settle_month = date '2026-06-01', accrued_through = date '2026-06-03'
         where loan_id = $1",
        moved,
    )
    .await;
    // (c) one voided by hand: its queue row may stay until the settlement reaches it
    let (voided, voided_member) = a_bare_loan(pool).await;
    insert_fine(pool, voided, voided_member).await;
    execute(
        pool,
        "update fine_record set status = 'VOID', voided_at = now(), void_reason = 'by hand' where loan_id = $1",
        voided,
    )
    .await;
    // (d) one deleted (a PENDING fine has no ledger entry, so it may go)
    let (deleted, deleted_member) = a_bare_loan(pool).await;
    insert_fine(pool, deleted, deleted_member).await;
    execute(pool, "delete from fine_record where loan_id = $1", deleted).await;
    assert_eq!(queue_out_of_step(pool).await, (0, 0), "after the writes by hand");
    let queued: Vec<(chrono::NaiveDate, i64)> =
        sqlx::query_as("select settle_month, loan_id from fine_pending where loan_id = any($1) order by loan_id")
            .bind(vec![kept, moved, voided, deleted])
            .fetch_all(pool)
            .await
            .unwrap();
    assert_eq!(
        queued,
        vec![
            (ymd(2026, 5, 1), kept),
            (ymd(2026, 6, 1), moved),
            (ymd(2026, 5, 1), voided)
        ]
    );

    // June 30 makes May and June final: the queued PENDING fines are settled and charged, the
    // voided one stays as it is, and the queue is empty.
    crate::common::settlement::assert_all_succeeded(&walk(pool, &[ymd(2026, 6, 30)]).await);
    let (may, june) = (ymd(2026, 5, 1), ymd(2026, 6, 1));
    assert_eq!(fine_of(kept, may).await, ("SETTLED".to_owned(), 1));
    assert_eq!(fine_of(moved, june).await, ("SETTLED".to_owned(), 1));
    assert_eq!(fine_of(voided, may).await, ("VOID".to_owned(), 0));
    let left: i64 = sqlx::query_scalar("select count(*) from fine_pending")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(left, 0, "every month up to June is final on June 30");
    assert_eq!(queue_out_of_step(pool).await, (0, 0), "after the settlement");
}
