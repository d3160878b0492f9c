//! The columns each row type is read from, written once.
//!
//! `select_rows!(Fine, "where id = $1", id)` is the `sqlx::query_as!` of `select <the columns of a
//! Fine> from fine_record where id = $1`. sqlx checks a query at compile time only when its text
//! is string literals (joined with `+`), so a column list cannot be a `const`: the arms of this
//! macro hold them. The text after the `from` may be several literals joined with `+`.

macro_rules! select_rows {
    (Book, $($query:tt)+) => {
        $crate::store::rows::select_rows!(@query Book, r#"
            select b.id, b.title, b.isbn, b.created_at,
                   -- answered by the partial unique index loan_one_open_per_book
                   exists (select 1 from loan l where l.book_id = b.id and l.returned_at is null) as "on_loan!"
            from book b
            "#, $($query)+)
    };
    (Member, $($query:tt)+) => {
        $crate::store::rows::select_rows!(@query Member, r#"
            select m.id, m.name, m.email, m.created_at,
                   -- what the member owes: charges minus reversals and payments
                   coalesce((select sum(l.amount_cents) from ledger_entry l where l.member_id = m.id), 0)::bigint
                       as "balance_cents!"
            from member m
            "#, $($query)+)
    };
    (LoanRow, $($query:tt)+) => {
        $crate::store::rows::select_rows!(@query LoanRow, r#"
            select id, member_id, book_id, borrowed_on, due_on, returned_at, returned_on,
                   daily_fine_cents, created_at
            from loan
            "#, $($query)+)
    };
    (Fine, $($query:tt)+) => {
        $crate::store::rows::select_rows!(@query Fine, r#"
            select id, loan_id, member_id, settle_month, overdue_days, amount_cents, accrued_through,
                   status as "status: FineStatus", settled_at, voided_at, void_reason, fencing_token
            from fine_record
            "#, $($query)+)
    };
    (Execution, $($query:tt)+) => {
        $crate::store::rows::select_rows!(@query Execution, r#"
            select id, task_name, business_date, trigger as "trigger: Trigger", instance_id, fencing_token,
                   started_at, finished_at, status as "status: ExecutionStatus", affected_rows, error
            from task_execution
            "#, $($query)+)
    };
    (Attempt, $($query:tt)+) => {
        $crate::store::rows::select_rows!(@query Attempt, r#"
            select id, task_name, trigger as "trigger: Trigger", instance_id, fired_at, recorded_at,
                   outcome as "outcome: AttemptOutcome", fencing_token as "fencing_token: FencingToken",
                   holder, detail
            from task_attempt
            "#, $($query)+)
    };
    (Alert, $($query:tt)+) => {
        $crate::store::rows::select_rows!(@query Alert, r#"
            select id, kind as "kind: AlertKind", task_name, business_date, state as "state: AlertState", raised_at,
                   resolved_at, detail, execution_id
            from alert
            "#, $($query)+)
    };
    (Notification, $($query:tt)+) => {
        $crate::store::rows::select_rows!(@query Notification, r#"
            select id, loan_id, member_id, kind as "kind: ReminderKind", sent_at
            from notification
            "#, $($query)+)
    };
    (@query $row:ident, $select:tt, $rest:tt $(+ $more:tt)* $(, $arg:expr)* $(,)?) => {
        sqlx::query_as!($row, $select + $rest $(+ $more)*, $($arg),*)
    };
}

/// The `$row` whose id is `$id`, if there is one, fetched with `$executor`.
macro_rules! find_by_id {
    ($row:ident, $executor:expr, $id:expr) => {
        $crate::store::rows::select_rows!($row, "where id = $1", $id)
            .fetch_optional($executor)
            .await
    };
}

/// The page `$page` (a [`super::PageRequest`]) of `$row`s in id order, fetched with `$executor`:
/// the keyset page of a table listed without filters.
macro_rules! page_in_id_order {
    ($row:ident, $executor:expr, $page:expr) => {
        $crate::store::rows::select_rows!($row, "where id > $1 order by id limit $2", $page.after, $page.fetch())
            .fetch_all($executor)
            .await
    };
}

/// Declares `list`, the page of a task's `$row`s newest first: the attempt timeline and the
/// execution records are paged alike, with the last id seen as the cursor (0 for the first page).
macro_rules! newest_first_of_task {
    ($row:ident) => {
        /// Newest first; the cursor is the last id seen (rows with smaller ids follow).
        pub async fn list(
            executor: impl sqlx::PgExecutor<'_>,
            task_name: &TaskName,
            page: PageRequest,
        ) -> sqlx::Result<Vec<$row>> {
            $crate::store::rows::select_rows!(
                $row,
                r#"
                where task_name = $1 and ($2::bigint = 0 or id < $2)
                order by id desc
                limit $3
                "#,
                task_name.as_str(),
                page.after,
                page.fetch()
            )
            .fetch_all(executor)
            .await
        }
    };
}

pub(crate) use {find_by_id, newest_first_of_task, page_in_id_order, select_rows};
