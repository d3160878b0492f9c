//! What a failover is to the service, as pure functions: the database's identity, what a replica
//! saw acknowledged, and the `DATABASE_FAILOVER` alert that compares it with what the new
//! primary holds. The I/O is in `crate::failover`.

use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};

use super::alert::{AlertKind, NewAlert};
use super::{FencingToken, format_month, month_start};

/// Which cluster the service writes to, and on which timeline: a promotion keeps the system
/// identifier and starts a new timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatabaseIdentity {
    /// `pg_control_system().system_identifier`; `None` when the role may not read it.
    pub system_identifier: Option<i64>,
    /// The timeline the primary writes WAL on.
    pub timeline: i64,
}

/// How a newly read identity differs from the one a replica saw before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Same,
    /// Same cluster (or one whose identifier is unknown), another timeline: a promotion.
    Failover {
        from: i64,
        to: i64,
    },
    /// Another cluster altogether (a restore, a changed `DATABASE_URL`): not a failover, but
    /// nothing said before about it holds.
    OtherCluster,
}

impl DatabaseIdentity {
    /// What changed from `previous` to `self`.
    pub fn change_from(&self, previous: &DatabaseIdentity) -> Change {
        match (previous.system_identifier, self.system_identifier) {
            (Some(before), Some(now)) if before != now => Change::OtherCluster,
            _ if previous.timeline != self.timeline => Change::Failover {
                from: previous.timeline,
                to: self.timeline,
            },
            _ => Change::Same,
        }
    }
}

/// Whether writes acknowledged by the primary are on a standby too (CONTRACT §5.4, `/readyz`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum Replication {
    /// A commit waits for a synchronous standby: a promotion of it loses no acknowledged write.
    Synchronous,
    /// Standbys follow without being waited for: a promotion may lose acknowledged writes.
    Asynchronous,
    /// No standby is connected: nothing to fail over to without losing what the primary holds.
    None,
}

impl Replication {
    /// From what an ordinary role can read: whether commits wait for a standby, and how many
    /// standbys are connected.
    pub fn from_facts(synchronous: bool, standbys: i64) -> Self {
        match (synchronous, standbys) {
            (true, _) => Replication::Synchronous,
            (false, 0) => Replication::None,
            (false, _) => Replication::Asynchronous,
        }
    }

    /// `synchronous`, `asynchronous` or `none`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// What this replica saw the database acknowledge: the last fencing token it was granted and
/// the last date it committed SUCCESS for. A failover to a standby that lacked them lost them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Acknowledged {
    pub fencing_token: Option<FencingToken>,
    pub success: Option<NaiveDate>,
}

impl Acknowledged {
    pub fn granted(&mut self, token: FencingToken) {
        self.fencing_token = self.fencing_token.max(Some(token));
    }

    pub fn settled(&mut self, date: NaiveDate) {
        self.success = self.success.max(Some(date));
    }
}

/// What the new primary holds of the same facts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PrimaryHolds {
    pub fencing_token: Option<i64>,
    pub success: Option<NaiveDate>,
}

/// The dates whose SUCCESS this replica saw committed and the new primary lacks, as a range:
/// after the primary's latest SUCCESS through this replica's (from [`NaiveDate::MIN`] when the
/// primary holds no SUCCESS at all).
pub fn lost_dates(seen: &Acknowledged, holds: &PrimaryHolds) -> Option<(NaiveDate, NaiveDate)> {
    let mine = seen.success?;
    match holds.success {
        Some(theirs) if theirs >= mine => None,
        Some(theirs) => Some((theirs.succ_opt()?, mine)),
        None => Some((NaiveDate::MIN, mine)),
    }
}

/// The months a failover may have touched: from the month of the earlier of the two latest
/// SUCCESSes through the month of the later (the primary's alone when this replica settled
/// nothing). Their settled fines are what a lost write could have changed.
pub fn months_touched(seen: &Acknowledged, holds: &PrimaryHolds) -> Vec<NaiveDate> {
    let known: Vec<NaiveDate> = [seen.success, holds.success].into_iter().flatten().collect();
    let (Some(first), Some(last)) = (known.iter().min(), known.iter().max()) else {
        return Vec::new();
    };
    let mut months = Vec::new();
    let mut month = month_start(*first);
    while month <= *last {
        months.push(month);
        match month.checked_add_months(chrono::Months::new(1)) {
            Some(next) => month = next,
            None => break,
        }
    }
    months
}

/// What the audit said of a touched month.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MonthAudit {
    /// Final and audited: no difference.
    Clean,
    /// Final and audited: differences, which raised the month's AUDIT alert.
    Differences(usize),
    /// Not final: the job settles its dates again and audits it once they are.
    NotFinal,
    /// The audit could not run (the error is logged); run `finesettle audit`.
    Failed,
}

/// Everything the DATABASE_FAILOVER alert says.
#[derive(Debug, Clone)]
pub struct Failover {
    /// When a replica first noticed the new timeline, by the database's clock.
    pub first_seen_at: DateTime<Utc>,
    /// Its business date: the alert's.
    pub business_date: NaiveDate,
    pub from_timeline: i64,
    pub to_timeline: i64,
    pub seen: Acknowledged,
    pub holds: PrimaryHolds,
    pub months: Vec<(NaiveDate, MonthAudit)>,
}

impl Failover {
    /// The alert: once across replicas, keyed by the business date of the first sighting.
    pub fn alert(&self) -> NewAlert {
        NewAlert {
            kind: AlertKind::DatabaseFailover,
            business_date: self.business_date,
            detail: self.detail(),
            execution_id: None,
        }
    }

    fn detail(&self) -> String {
        let mut detail = format!(
            "database failover first seen at {}: timeline {} -> {}. This replica last saw acknowledged \
             fencing token {} and SUCCESS {}; the new primary holds token {} and its latest SUCCESS is {}.",
            self.first_seen_at.to_rfc3339_opts(SecondsFormat::Secs, true),
            self.from_timeline,
            self.to_timeline,
            shown(self.seen.fencing_token.map(|t| t.0)),
            shown(self.seen.success),
            shown(self.holds.fencing_token),
            shown(self.holds.success),
        );
        if let (Some(mine), Some(theirs)) = (self.seen.fencing_token, self.holds.fencing_token)
            && theirs < mine.0
        {
            detail.push_str(&format!(
                " The fencing counter went back from {} to {theirs}; tokens of this timeline start above every \
                 token of the old one.",
                mine.0
            ));
        }
        match lost_dates(&self.seen, &self.holds) {
            Some((from, to)) if from == NaiveDate::MIN => {
                detail.push_str(&format!(" Every SUCCESS through {to} may be lost."))
            }
            Some((from, to)) => detail.push_str(&format!(" SUCCESS of {from} through {to} may be lost.")),
            None => detail.push_str(" No SUCCESS this replica saw is missing."),
        }
        if self.months.is_empty() {
            detail.push_str(" No settled month to re-audit.");
        }
        for (month, audit) in &self.months {
            let month = format_month(*month);
            let said = match audit {
                MonthAudit::Clean => "final, audited: clean".to_owned(),
                MonthAudit::Differences(n) => format!("final, audited: {n} differences (AUDIT alert)"),
                MonthAudit::NotFinal => "not final: its dates will be settled again, and audited once final".to_owned(),
                MonthAudit::Failed => "the audit failed; run `finesettle audit`".to_owned(),
            };
            detail.push_str(&format!(" Month {month}: {said}."));
        }
        detail.push_str(
            " Payments, loans and returns acknowledged before the failover may be lost too; the service cannot \
             list them.",
        );
        detail
    }
}

fn shown<T: std::fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(|| "none".to_owned(), |v| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    #[test]
    fn a_new_timeline_of_the_same_cluster_is_a_failover() {
        let before = DatabaseIdentity {
            system_identifier: Some(7),
            timeline: 1,
        };
        let promoted = DatabaseIdentity { timeline: 2, ..before };
        assert_eq!(promoted.change_from(&before), Change::Failover { from: 1, to: 2 });
        assert_eq!(before.change_from(&before), Change::Same);
        let unknown = DatabaseIdentity {
            system_identifier: None,
            timeline: 2,
        };
        assert_eq!(unknown.change_from(&before), Change::Failover { from: 1, to: 2 });
        let other = DatabaseIdentity {
            system_identifier: Some(8),
            timeline: 2,
        };
        assert_eq!(other.change_from(&before), Change::OtherCluster);
    }

    #[test]
    fn replication_is_told_from_the_settings_and_the_standbys() {
        assert_eq!(Replication::from_facts(true, 0).as_str(), "synchronous");
        assert_eq!(Replication::from_facts(false, 2).as_str(), "asynchronous");
        assert_eq!(Replication::from_facts(false, 0).as_str(), "none");
    }

    #[test]
    fn the_detail_compares_what_was_acknowledged_with_what_the_primary_holds() {
        let mut seen = Acknowledged::default();
        seen.granted(FencingToken(17));
        seen.granted(FencingToken(3));
        seen.settled(date("2026-11-29"));
        seen.settled(date("2026-12-02"));
        let holds = PrimaryHolds {
            fencing_token: Some(1),
            success: Some(date("2026-11-27")),
        };
        assert_eq!(
            lost_dates(&seen, &holds),
            Some((date("2026-11-28"), date("2026-12-02")))
        );
        let months = months_touched(&seen, &holds);
        assert_eq!(months, [date("2026-11-01"), date("2026-12-01")]);
        let failover = Failover {
            first_seen_at: "2026-12-03T01:02:03Z".parse().unwrap(),
            business_date: date("2026-12-03"),
            from_timeline: 1,
            to_timeline: 2,
            seen,
            holds,
            months: vec![(months[0], MonthAudit::NotFinal), (months[1], MonthAudit::NotFinal)],
        };
        let alert = failover.alert();
        assert_eq!(alert.kind, AlertKind::DatabaseFailover);
        assert_eq!(alert.business_date, date("2026-12-03"));
        for part in [
            "first seen at 2026-12-03T01:02:03Z",
            "timeline 1 -> 2",
            "fencing token 17 and SUCCESS 2026-12-02",
            "holds token 1 and its latest SUCCESS is 2026-11-27",
            "went back from 17 to 1",
            "SUCCESS of 2026-11-28 through 2026-12-02 may be lost",
            "Month 2026-11: not final",
            "Month 2026-12: not final",
        ] {
            assert!(alert.detail.contains(part), "{part:?} missing from {}", alert.detail);
        }
    }

    #[test]
    fn nothing_lost_when_the_primary_holds_every_success_seen() {
        let mut seen = Acknowledged::default();
        seen.settled(date("2026-12-01"));
        let holds = PrimaryHolds {
            fencing_token: Some(4),
            success: Some(date("2026-12-01")),
        };
        assert_eq!(lost_dates(&seen, &holds), None);
        assert_eq!(months_touched(&seen, &holds), [date("2026-12-01")]);
        assert_eq!(months_touched(&Acknowledged::default(), &PrimaryHolds::default()), []);
    }
}
