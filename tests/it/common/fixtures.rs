//! Rows inserted with plain SQL, for tests of endpoints whose data other parts of the service
//! create (books and loans through their API, fines by the settlement job). Each test then states
//! exactly the rows it starts from, without depending on how those parts work.

use chrono::{DateTime, NaiveDate, Utc};
use sqlx::{Encode, PgPool, Postgres, Transaction, Type};

/// The fencing token fixture fines carry, as if a settlement run with this token wrote them.
pub const FIXTURE_FENCING_TOKEN: i64 = 7;

/// `YYYY-MM-DD` as a date.
pub fn date(text: &str) -> NaiveDate {
    text.parse().expect("a YYYY-MM-DD date")
}

/// An RFC 3339 instant (`2026-03-08T07:00:00Z`).
pub fn instant(text: &str) -> DateTime<Utc> {
    text.parse().expect("an RFC 3339 instant")
}

pub async fn insert_book(pool: &PgPool, title: &str) -> i64 {
    sqlx::query_scalar("insert into book (title) values ($1) returning id")
        .bind(title)
        .fetch_one(pool)
        .await
        .expect("insert a book")
}

/// An open loan at 50 cents a day.
pub async fn insert_loan(
    pool: &PgPool,
    member_id: i64,
    book_id: i64,
    borrowed_on: NaiveDate,
    due_on: NaiveDate,
) -> i64 {
    sqlx::query_scalar(
        "insert into loan (member_id, book_id, borrowed_on, due_on, daily_fine_cents)
         values ($1, $2, $3, $4, 50) returning id",
    )
    .bind(member_id)
    .bind(book_id)
    .bind(borrowed_on)
    .bind(due_on)
    .fetch_one(pool)
    .await
    .expect("insert a loan")
}

/// A fine of the loan's member for `settle_month` (a first day), accrued through the month's
/// last day. A SETTLED fine gets its CHARGE entry in the same statement, as the settlement job
/// would post it; a VOID one a void time and reason.
pub async fn insert_fine(
    pool: &PgPool,
    loan_id: i64,
    settle_month: NaiveDate,
    overdue_days: i32,
    amount_cents: i64,
    status: &str,
) -> i64 {
    sqlx::query_scalar(
        "with fine as (
             insert into fine_record (loan_id, member_id, settle_month, overdue_days, amount_cents,
                                      accrued_through, status, settled_at, voided_at, void_reason, fencing_token)
             select l.id, l.member_id, $2, $3, $4,
                    ($2 + interval '1 month' - interval '1 day')::date, $5,
                    case when $5 <> 'PENDING' then now() end,
                    case when $5 = 'VOID' then now() end,
                    case when $5 = 'VOID' then 'fixture' end,
                    $6
             from loan l where l.id = $1
             returning id, member_id, amount_cents, status
         ),
         charge as (
             insert into ledger_entry (member_id, fine_id, kind, amount_cents, fencing_token)
             select member_id, id, 'CHARGE', amount_cents, $6 from fine where status = 'SETTLED'
         )
         select id from fine",
    )
    .bind(loan_id)
    .bind(settle_month)
    .bind(overdue_days)
    .bind(amount_cents)
    .bind(status)
    .bind(FIXTURE_FENCING_TOKEN)
    .fetch_one(pool)
    .await
    .expect("insert a fine")
}

/// How many ledger entries of `kind` the fine has.
pub async fn ledger_entries_of_fine(pool: &PgPool, fine_id: i64, kind: &str) -> i64 {
    sqlx::query_scalar("select count(*) from ledger_entry where fine_id = $1 and kind = $2")
        .bind(fine_id)
        .bind(kind)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// The sum of a member's ledger, read directly from the table.
pub async fn ledger_sum(pool: &PgPool, member_id: i64) -> i64 {
    let sum = "select coalesce(sum(amount_cents), 0)::bigint from ledger_entry where member_id = $1";
    query_number(pool, sum, member_id).await
}

/// The number (a count, a sum) that `sql` answers with `param` bound to `$1`, read directly from
/// the tables.
pub async fn query_number<P>(pool: &PgPool, sql: &'static str, param: P) -> i64
where
    P: for<'q> Encode<'q, Postgres> + Type<Postgres> + Send + 'static,
{
    sqlx::query_scalar(sql).bind(param).fetch_one(pool).await.expect(sql)
}

/// A transaction of the test's own, left open after running `sql` with `id` bound to `$1`: it
/// holds the row locks `sql` took and sees its own writes until the test commits or rolls it
/// back.
pub async fn open_transaction(pool: &PgPool, sql: &'static str, id: i64) -> Transaction<'static, Postgres> {
    let mut tx = pool.begin().await.unwrap();
    sqlx::query(sql).bind(id).execute(&mut *tx).await.unwrap();
    tx
}
