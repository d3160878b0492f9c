//! Issue test 7: rerunning a date, and running dates out of order, gives identical rows to
//! running each once in order.

use finesettle::settlement::DateStatus;

use crate::common::data::{Rng, days, load_loans, ymd};
use crate::common::oracle::Model;
use crate::common::settlement::{
    assert_all_succeeded, assert_matches, executions_of, fines, fresh_db_with_loans, ledger, rerun, reset_settlement,
    row_versions, walk,
};

#[tokio::test]
async fn rerunning_settled_dates_rewrites_no_row() {
    let db = fresh_db_with_loans(3, 250).await;
    let dates = days(ymd(2026, 2, 20), ymd(2026, 4, 3));
    assert_all_succeeded(&walk(&db.pool, &dates).await);
    let before = row_versions(&db.pool).await;

    // The procedure itself, again, for every date: writes nothing, not even identical values
    // (the row versions would change).
    for &d in &dates {
        let counts = rerun(&db.pool, d).await;
        assert_eq!(counts.affected_rows(), 0, "rerun of {d} wrote {counts:?}");
        assert_eq!(counts.charged, 0);
    }
    assert_eq!(row_versions(&db.pool).await, before);

    // Through the walk, a settled date is not run again and gets no second record.
    let report = walk(&db.pool, &dates).await;
    assert!(report.outcomes.iter().all(|o| o.status == DateStatus::AlreadySettled));
    assert!(report.completed());
    assert_eq!(report.succeeded(), 0);
    assert_eq!(row_versions(&db.pool).await, before);
    for &d in &dates {
        assert_eq!(executions_of(&db.pool, d).await.len(), 1, "{d}");
    }
}

#[tokio::test]
async fn dates_in_any_order_and_repeated_equal_one_in_order_run() {
    let db = fresh_db_with_loans(4, 250).await;
    let loans = load_loans(&db.pool).await;
    // A contiguous range across two month ends, as a backfill produces.
    let dates = days(ymd(2026, 2, 18), ymd(2026, 4, 4));

    assert_all_succeeded(&walk(&db.pool, &dates).await);
    let (in_order_fines, in_order_ledger) = (fines(&db.pool).await, ledger(&db.pool).await);
    assert_matches(
        &Model::after(crate::common::settlement::start(), &loans, &dates),
        &in_order_fines,
        &in_order_ledger,
    );

    // Newest first (the most adversarial order for "never move backwards"), then random orders
    // in which every date runs once and a third of them a second time.
    let mut newest_first = dates.clone();
    newest_first.reverse();
    let mut sequences = vec![("newest first".to_owned(), newest_first)];
    for seed in [11, 12, 13] {
        let mut rng = Rng::new(seed);
        let mut sequence = dates.clone();
        sequence.extend(dates.iter().filter(|_| rng.below(3) == 0));
        rng.shuffle(&mut sequence);
        sequences.push((format!("seed {seed}"), sequence));
    }
    for (name, sequence) in sequences {
        reset_settlement(&db.pool).await;
        let mut seen = std::collections::HashSet::new();
        for &d in &sequence {
            if seen.insert(d) {
                assert_all_succeeded(&walk(&db.pool, &[d]).await);
            } else {
                // A settled date is skipped by the walk; the procedure itself runs it again.
                rerun(&db.pool, d).await;
            }
        }
        assert_eq!(
            fines(&db.pool).await,
            in_order_fines,
            "{name}: fines differ from the in-order run"
        );
        assert_eq!(
            ledger(&db.pool).await,
            in_order_ledger,
            "{name}: ledger differs from the in-order run"
        );
    }
}
