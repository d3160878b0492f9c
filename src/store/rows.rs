//! The columns each row type is read from, written once.
//!
//! `select_rows!(Fine, "where id = $1", id)` is the `sqlx::query_as!` of `select <the columns of a
//! Fine> from fine_record where id = $1`, and `returning_rows!(Fine, "update fine_record ...", ..)`
//! that of the statement followed by `returning <the same columns>`. sqlx checks a query at
//! compile time only when its text is string literals (joined with `+`), so a column list cannot
//! be a `const`: the arms of `row_query!` hold them. The text given may be several literals
//! joined with `+`.

/// The `select` (`select <columns> <from> <the text given>`) or the `returning` (`<the statement
/// given> returning <columns>`) of a row type; `select_rows!` and `returning_rows!` name the
/// mode. `returning` suits the rows read from their table alone: not `Book` or `Member`, whose
/// computed columns read other tables.
macro_rules! row_query {
    ($mode:ident Book, $($query:tt)+) => {
        $crate::store::rows::row_query!(@$mode Book, r#"
            b.id, b.title, b.isbn, b.created_at,
            -- answered by the partial unique index loan_one_open_per_book
            exists (select 1 from loan l where l.book_id = b.id and l.returned_at is null) as "on_loan!"
            "#, "from book b", $($query)+)
    };
    ($mode:ident Member, $($query:tt)+) => {
        $crate::store::rows::row_query!(@$mode Member, r#"
            m.id, m.name, m.email, m.created_at,
            -- what the member owes: charges minus reversals and payments
            coalesce((select sum(l.amount_cents) from ledger_entry l where l.member_id = m.id), 0)::bigint
                as "balance_cents!"
            "#, "from member m", $($query)+)
    };
    ($mode:ident LoanRow, $($query:tt)+) => {
        $crate::store::rows::row_query!(@$mode LoanRow, r#"
            id, member_id, book_id, borrowed_on, due_on, returned_at, returned_on, daily_fine_cents, created_at
            "#, "from loan", $($query)+)
    };
    ($mode:ident Fine, $($query:tt)+) => {
        $crate::store::rows::row_query!(@$mode Fine, r#"
            id, loan_id, member_id, settle_month, overdue_days, amount_cents, accrued_through,
            status as "status: FineStatus", settled_at, voided_at, void_reason, fencing_token
            "#, "from fine_record", $($query)+)
    };
    ($mode:ident Execution, $($query:tt)+) => {
        $crate::store::rows::row_query!(@$mode Execution, r#"
            id, task_name, business_date, trigger as "trigger: Trigger", instance_id, fencing_token,
            started_at, finished_at, status as "status: ExecutionStatus", affected_rows, error
            "#, "from task_execution", $($query)+)
    };
    ($mode:ident Attempt, $($query:tt)+) => {
        $crate::store::rows::row_query!(@$mode Attempt, r#"
            id, task_name, trigger as "trigger: Trigger", instance_id, fired_at, recorded_at,
            outcome as "outcome: AttemptOutcome", fencing_token as "fencing_token: FencingToken", holder, detail
            "#, "from task_attempt", $($query)+)
    };
    ($mode:ident Alert, $($query:tt)+) => {
        $crate::store::rows::row_query!(@$mode Alert, r#"
            id, kind as "kind: AlertKind", task_name, business_date, state as "state: AlertState", raised_at,
            resolved_at, detail, execution_id
            "#, "from alert", $($query)+)
    };
    ($mode:ident Notification, $($query:tt)+) => {
        $crate::store::rows::row_query!(@$mode Notification, r#"
            id, loan_id, member_id, kind as "kind: ReminderKind", sent_at
            "#, "from notification", $($query)+)
    };
    (@select $row:ident, $columns:tt, $from:tt, $rest:tt $(+ $more:tt)* $(, $arg:expr)* $(,)?) => {
        sqlx::query_as!($row, "select " + $columns + $from + "\n" + $rest $(+ $more)*, $($arg),*)
    };
    (@returning $row:ident, $columns:tt, $from:tt, $statement:tt $(+ $more:tt)* $(, $arg:expr)* $(,)?) => {
        sqlx::query_as!($row, $statement $(+ $more)* + "\nreturning " + $columns, $($arg),*)
    };
}

/// `select <the columns of a $row> from <its table>`, then the text given (`where ...`).
macro_rules! select_rows {
    ($row:ident, $($query:tt)+) => {
        $crate::store::rows::row_query!(select $row, $($query)+)
    };
}

/// The statement given (an insert into or update of `$row`'s table), `returning` the columns of a
/// `$row`.
macro_rules! returning_rows {
    ($row:ident, $($statement:tt)+) => {
        $crate::store::rows::row_query!(returning $row, $($statement)+)
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

pub(crate) use {find_by_id, newest_first_of_task, page_in_id_order, returning_rows, row_query, select_rows};
