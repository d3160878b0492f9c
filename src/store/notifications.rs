//! Loan reminders sent to members (`notification`), and the open loans the reconciler checks.
//!
//! This table, not Redis, says whether a reminder was sent: `notification_once` keeps one row per
//! loan and kind, so a reminder delivered twice (a consumer that died before acknowledging, a
//! reconciler racing a consumer) is recorded once.

use chrono::{DateTime, NaiveDate, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::PageRequest;
use super::rows::select_rows;
use crate::domain::reminder::{Reminder, ReminderKind};
use crate::domain::{LoanId, MemberId};

// The row as stored is the shape the API serves: one type (the doc comment below is the
// OpenAPI description).
/// A reminder sent to a member about one of their loans.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Notification {
    pub id: i64,
    #[schema(value_type = i64)]
    pub loan_id: LoanId,
    #[schema(value_type = i64)]
    pub member_id: MemberId,
    /// `DUE_TOMORROW` (the day before `due_on`) or `OVERDUE` (the day after).
    pub kind: ReminderKind,
    pub sent_at: DateTime<Utc>,
}

/// Records the reminders that are still worth sending, at `sent_at` (business date `today`);
/// returns how many rows were inserted. The others are left out, silently:
///
/// - sent before (`on conflict do nothing`: a redelivery is harmless);
/// - of a returned loan, or of no loan at all;
/// - `DUE_TOMORROW` of a loan due on or before `today` (late "due tomorrow" is wrong).
///
/// The loan rows are share-locked, so a return committing meanwhile waits for this statement,
/// and one that committed before is seen: no reminder is recorded after its loan's return.
pub async fn record(
    executor: impl sqlx::PgExecutor<'_>,
    reminders: &[Reminder],
    sent_at: DateTime<Utc>,
    today: NaiveDate,
) -> sqlx::Result<u64> {
    let loan_ids: Vec<i64> = reminders.iter().map(|r| r.loan_id.0).collect();
    let kinds: Vec<String> = reminders.iter().map(|r| r.kind.as_str().to_owned()).collect();
    let inserted = sqlx::query!(
        r#"
        insert into notification (loan_id, member_id, kind, sent_at)
        select l.id, l.member_id, r.kind, $3
        from unnest($1::bigint[], $2::text[]) as r (loan_id, kind)
        join loan l on l.id = r.loan_id
        where l.returned_on is null
          and (r.kind <> 'DUE_TOMORROW' or l.due_on > $4)
        for share of l
        on conflict (loan_id, kind) do nothing
        "#,
        &loan_ids,
        &kinds,
        sent_at,
        today
    )
    .execute(executor)
    .await?;
    Ok(inserted.rows_affected())
}

/// A page of one member's notifications, oldest first (walks `notification_member_id`).
pub async fn list_for_member(
    executor: impl sqlx::PgExecutor<'_>,
    member_id: MemberId,
    page: PageRequest,
) -> sqlx::Result<Vec<Notification>> {
    select_rows!(
        Notification,
        r#"
        where member_id = $1 and id > $2
        order by id
        limit $3
        "#,
        member_id.0,
        page.after,
        page.fetch()
    )
    .fetch_all(executor)
    .await
}

/// An open loan and which of its reminders are recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenLoan {
    pub id: LoanId,
    pub due_on: NaiveDate,
    pub due_tomorrow_sent: bool,
    pub overdue_sent: bool,
}

impl OpenLoan {
    pub fn sent(&self, kind: ReminderKind) -> bool {
        match kind {
            ReminderKind::DueTomorrow => self.due_tomorrow_sent,
            ReminderKind::Overdue => self.overdue_sent,
        }
    }
}

/// Open loans after id `after` (in id order, at most `limit`) that still have a reminder to
/// send on business date `today`: no OVERDUE yet, or no DUE_TOMORROW while not yet due. Walks
/// `loan_open_id`; each check is a probe of `notification_once`.
pub async fn open_loans_missing_reminders(
    executor: impl sqlx::PgExecutor<'_>,
    today: NaiveDate,
    after: i64,
    limit: i64,
) -> sqlx::Result<Vec<OpenLoan>> {
    sqlx::query_as!(
        OpenLoan,
        r#"
        select id as "id!", due_on as "due_on!", due_tomorrow_sent as "due_tomorrow_sent!",
               overdue_sent as "overdue_sent!"
        from (
            select l.id, l.due_on,
                   exists (select 1 from notification n where n.loan_id = l.id and n.kind = 'DUE_TOMORROW')
                       as due_tomorrow_sent,
                   exists (select 1 from notification n where n.loan_id = l.id and n.kind = 'OVERDUE')
                       as overdue_sent
            from loan l
            where l.returned_on is null and l.id > $2
            order by l.id
        ) open_loan
        where not overdue_sent or (not due_tomorrow_sent and due_on > $1)
        order by id
        limit $3
        "#,
        today,
        after,
        limit
    )
    .fetch_all(executor)
    .await
}
