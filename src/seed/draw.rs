//! The shape of the demo loans, decided in memory before anything is written.
//!
//! Pure: given the counts, "today" and a random generator, it lays out every loan. Each book copy
//! gets a history that reads like one: its returned loans follow each other back in time from its
//! open loan (or from yesterday), so a copy is rarely lent twice at once, and it is never on two
//! open loans (`loan_one_open_per_book`). When a copy's history is too full to fit the window, the
//! older loans are placed freely in the window; the schema allows that for returned loans.

use chrono::{Days, NaiveDate};

use super::rng::Rng;

/// Share of the loans that are open and not yet due, on top of the overdue ones.
const ON_LOAN_SHARE: f64 = 0.10;
/// Share of the returned loans that came back late (and so owe a fine).
const LATE_SHARE_OF_RETURNED: f64 = 0.25;
/// Loan periods in days, as a library would offer them.
const LOAN_PERIODS: &[u64] = &[14, 21, 28];
/// Typical length of a loan, to spread a copy's loans over the window.
const TYPICAL_LOAN_DAYS: u64 = 18;

/// What to generate.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub members: usize,
    pub books: usize,
    pub loans: usize,
    /// Share of the loans that are open and overdue today, in `[0, 1]`.
    pub overdue_share: f64,
    /// Loans are borrowed within the `days_back` business dates before `today`.
    pub days_back: u32,
    /// Today's business date, by the database clock.
    pub today: NaiveDate,
}

/// How many loans of each kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mix {
    /// Open, due before today.
    pub overdue: usize,
    /// Open, due today or later.
    pub on_loan: usize,
    /// Returned after their due date.
    pub returned_late: usize,
    /// Returned on or before their due date.
    pub returned_on_time: usize,
}

impl Mix {
    pub fn open(&self) -> usize {
        self.overdue + self.on_loan
    }

    pub fn returned(&self) -> usize {
        self.returned_late + self.returned_on_time
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoanKind {
    Overdue,
    OnLoan,
    ReturnedLate,
    ReturnedOnTime,
}

/// One loan to insert. `member` and `book` index the members and books inserted before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrawnLoan {
    pub member: usize,
    pub book: usize,
    pub borrowed_on: NaiveDate,
    pub due_on: NaiveDate,
    pub returned_on: Option<NaiveDate>,
    pub kind: LoanKind,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ShapeError {
    #[error("--overdue-share must be between 0 and 1, not {0}")]
    Share(f64),
    #[error("--days-back must be between 3 and 3650, not {0}")]
    DaysBack(u32),
    #[error("loans need at least one member and one book")]
    NothingToLend,
    #[error(
        "{open} of the loans are open ({overdue} overdue, {on_loan} on loan), but a book copy can be on \
         one open loan only and there are {books} books: pass --books {open} or more"
    )]
    TooFewBooks {
        open: usize,
        overdue: usize,
        on_loan: usize,
        books: usize,
    },
}

impl Shape {
    /// The mix of loan kinds, once the shape is checked.
    pub fn mix(&self) -> Result<Mix, ShapeError> {
        if !(0.0..=1.0).contains(&self.overdue_share) {
            return Err(ShapeError::Share(self.overdue_share));
        }
        if !(3..=3650).contains(&self.days_back) {
            return Err(ShapeError::DaysBack(self.days_back));
        }
        if self.loans > 0 && (self.members == 0 || self.books == 0) {
            return Err(ShapeError::NothingToLend);
        }
        let overdue = share_of(self.loans, self.overdue_share);
        let on_loan = share_of(self.loans, ON_LOAN_SHARE).min(self.loans - overdue);
        let returned = self.loans - overdue - on_loan;
        let returned_late = share_of(returned, LATE_SHARE_OF_RETURNED);
        let mix = Mix {
            overdue,
            on_loan,
            returned_late,
            returned_on_time: returned - returned_late,
        };
        if mix.open() > self.books {
            return Err(ShapeError::TooFewBooks {
                open: mix.open(),
                overdue,
                on_loan,
                books: self.books,
            });
        }
        Ok(mix)
    }

    fn window_start(&self) -> NaiveDate {
        self.today - Days::new(u64::from(self.days_back))
    }

    /// The longest a loan period may be: a third of the window, so that an overdue loan fits in it.
    fn longest_period(&self) -> u64 {
        (u64::from(self.days_back) / 3).max(1)
    }
}

fn share_of(n: usize, share: f64) -> usize {
    ((n as f64) * share).round() as usize
}

/// Every loan of `shape`, oldest borrowed first (so ids grow with time, as in a real library).
pub fn draw_loans(rng: &mut Rng, shape: &Shape) -> Result<Vec<DrawnLoan>, ShapeError> {
    let mix = shape.mix()?;
    let mut loans = Vec::with_capacity(shape.loans);
    if shape.loans == 0 {
        return Ok(loans);
    }
    let books = permutation(rng, shape.books);
    let members = permutation(rng, shape.members);

    // Open loans first, each on a copy of its own.
    let mut open_since = vec![None; shape.books];
    for rank in 0..mix.open() {
        let kind = if rank < mix.overdue {
            LoanKind::Overdue
        } else {
            LoanKind::OnLoan
        };
        let member = pick_member(rng, &members);
        let loan = open_loan(rng, shape, kind, books[rank], member);
        open_since[rank] = Some(loan.borrowed_on);
        loans.push(loan);
    }

    // Returned loans, dealt to the copies in proportion to the free days each has before its
    // open loan (or before today); each copy's loans go back in time from there.
    let mut late = vec![true; mix.returned_late];
    late.resize(mix.returned(), false);
    rng.shuffle(&mut late);
    let mut late = late.into_iter();
    let limits: Vec<NaiveDate> = open_since
        .iter()
        .map(|since| since.unwrap_or(shape.today) - Days::new(1))
        .collect();
    let free_days: Vec<u64> = limits
        .iter()
        .map(|limit| u64::try_from((*limit - shape.window_start()).num_days() + 1).unwrap_or(0))
        .collect();
    // Weighted by the free days beyond one typical loan: a copy lent early in the window, with
    // no room for a loan before it, gets none.
    let weights: Vec<u64> = free_days
        .iter()
        .map(|days| days.saturating_sub(TYPICAL_LOAN_DAYS))
        .collect();
    let counts = deal(mix.returned(), &weights);
    for (rank, &book) in books.iter().enumerate() {
        let count = counts[rank];
        let mut end = limits[rank];
        let slack = free_days[rank].saturating_sub(count as u64 * TYPICAL_LOAN_DAYS);
        let gap_max = (slack / (count as u64 + 1)).max(1);
        for _ in 0..count {
            let is_late = late.next().unwrap_or(false);
            let member = pick_member(rng, &members);
            let loan = returned_loan(rng, shape, is_late, book, member, &mut end, limits[rank], gap_max);
            loans.push(loan);
        }
    }

    rng.shuffle(&mut loans);
    loans.sort_by_key(|loan| loan.borrowed_on);
    Ok(loans)
}

fn open_loan(rng: &mut Rng, shape: &Shape, kind: LoanKind, book: usize, member: usize) -> DrawnLoan {
    let period = loan_period(rng, shape);
    let borrowed_on = match kind {
        // Due before today: borrowed at least `period + 1` days ago.
        LoanKind::Overdue => {
            let latest = u64::from(shape.days_back) - period - 1;
            shape.window_start() + Days::new(rng.between(0, latest))
        }
        // Due today or later: borrowed within the last `period` days.
        _ => shape.today - Days::new(rng.between(0, period)),
    };
    DrawnLoan {
        member,
        book,
        borrowed_on,
        due_on: borrowed_on + Days::new(period),
        returned_on: None,
        kind,
    }
}

/// A returned loan of `book`, ending at most `gap_max` days before `end` when it fits in the
/// window (then `end` moves before it), or anywhere before `limit` otherwise.
#[allow(clippy::too_many_arguments)]
fn returned_loan(
    rng: &mut Rng,
    shape: &Shape,
    late: bool,
    book: usize,
    member: usize,
    end: &mut NaiveDate,
    limit: NaiveDate,
    gap_max: u64,
) -> DrawnLoan {
    let period = loan_period(rng, shape);
    let kept_days = if late {
        period + rng.between(1, shape.longest_period().min(21))
    } else {
        rng.between(1, period)
    };
    let start = shape.window_start();
    let returned_on = *end - Days::new(rng.between(0, gap_max));
    let borrowed_on = returned_on - Days::new(kept_days);
    let borrowed_on = if borrowed_on >= start {
        *end = borrowed_on - Days::new(1);
        borrowed_on
    } else {
        // The copy's history is full: anywhere in the window, before its open loan if there is
        // room, else before yesterday.
        let room = |last: NaiveDate| (last - start).num_days() - kept_days as i64;
        let last = if room(limit) >= 0 {
            limit
        } else {
            shape.today - Days::new(1)
        };
        start + Days::new(rng.between(0, room(last) as u64))
    };
    DrawnLoan {
        member,
        book,
        borrowed_on,
        due_on: borrowed_on + Days::new(period),
        returned_on: Some(borrowed_on + Days::new(kept_days)),
        kind: if late {
            LoanKind::ReturnedLate
        } else {
            LoanKind::ReturnedOnTime
        },
    }
}

/// `total` items split in proportion to `weights` (largest remainders first); evenly when every
/// weight is zero.
fn deal(total: usize, weights: &[u64]) -> Vec<usize> {
    let sum: u64 = weights.iter().sum();
    if sum == 0 {
        let (each, extra) = (total / weights.len(), total % weights.len());
        return (0..weights.len()).map(|i| each + usize::from(i < extra)).collect();
    }
    let shares: Vec<u128> = weights.iter().map(|w| total as u128 * u128::from(*w)).collect();
    let mut counts: Vec<usize> = shares.iter().map(|s| (s / u128::from(sum)) as usize).collect();
    let mut left = total - counts.iter().sum::<usize>();
    let mut by_remainder: Vec<usize> = (0..weights.len()).collect();
    by_remainder.sort_by_key(|&i| std::cmp::Reverse(shares[i] % u128::from(sum)));
    for i in by_remainder {
        if left == 0 {
            break;
        }
        counts[i] += 1;
        left -= 1;
    }
    counts
}

fn loan_period(rng: &mut Rng, shape: &Shape) -> u64 {
    (*rng.pick(LOAN_PERIODS)).min(shape.longest_period())
}

/// Some members borrow far more than others: low ranks are picked most, and the ranks are
/// shuffled over the members so the keen readers are not simply the first ids.
fn pick_member(rng: &mut Rng, members: &[usize]) -> usize {
    let rank = ((members.len() as f64) * rng.unit().powf(1.3)) as usize;
    members[rank.min(members.len() - 1)]
}

fn permutation(rng: &mut Rng, n: usize) -> Vec<usize> {
    let mut items: Vec<usize> = (0..n).collect();
    rng.shuffle(&mut items);
    items
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    fn shape(loans: usize, books: usize, overdue_share: f64, days_back: u32) -> Shape {
        Shape {
            members: 50,
            books,
            loans,
            overdue_share,
            days_back,
            today: NaiveDate::from_ymd_opt(2026, 3, 15).unwrap(),
        }
    }

    fn check(shape: &Shape, loans: &[DrawnLoan]) {
        let mix = shape.mix().unwrap();
        let count = |kind| loans.iter().filter(|l| l.kind == kind).count();
        assert_eq!(loans.len(), shape.loans);
        assert_eq!(count(LoanKind::Overdue), mix.overdue);
        assert_eq!(count(LoanKind::OnLoan), mix.on_loan);
        assert_eq!(count(LoanKind::ReturnedLate), mix.returned_late);
        assert_eq!(count(LoanKind::ReturnedOnTime), mix.returned_on_time);
        let mut open_books = HashSet::new();
        for loan in loans {
            assert!(loan.member < shape.members && loan.book < shape.books, "{loan:?}");
            assert!(
                loan.borrowed_on >= shape.window_start() && loan.borrowed_on <= shape.today,
                "{loan:?}"
            );
            assert!(loan.due_on > loan.borrowed_on, "{loan:?}");
            match loan.returned_on {
                None => assert!(open_books.insert(loan.book), "two open loans on book {}", loan.book),
                Some(returned) => assert!(returned >= loan.borrowed_on && returned < shape.today, "{loan:?}"),
            }
            match loan.kind {
                LoanKind::Overdue => assert!(loan.due_on < shape.today, "{loan:?}"),
                LoanKind::OnLoan => assert!(loan.due_on >= shape.today, "{loan:?}"),
                LoanKind::ReturnedLate => assert!(loan.returned_on.unwrap() > loan.due_on, "{loan:?}"),
                LoanKind::ReturnedOnTime => assert!(loan.returned_on.unwrap() <= loan.due_on, "{loan:?}"),
            }
        }
        assert!(
            loans.windows(2).all(|w| w[0].borrowed_on <= w[1].borrowed_on),
            "oldest first"
        );
    }

    #[test]
    fn the_mix_follows_the_overdue_share() {
        let mix = shape(2_000, 1_000, 0.3, 90).mix().unwrap();
        assert_eq!(
            mix,
            Mix {
                overdue: 600,
                on_loan: 200,
                returned_late: 300,
                returned_on_time: 900
            }
        );
    }

    #[test]
    fn loans_respect_the_rules_for_many_shapes() {
        for (loans, books, share, days_back) in [
            (2_000, 1_000, 0.3, 90),
            (5_000, 600, 0.0, 30),
            (300, 300, 0.9, 3),
            (10, 7, 0.5, 400),
            (0, 0, 0.3, 90),
        ] {
            let shape = shape(loans, books, share, days_back);
            for seed in 0..5 {
                check(&shape, &draw_loans(&mut Rng::new(seed), &shape).unwrap());
            }
        }
    }

    #[test]
    fn most_returned_loans_of_a_copy_do_not_overlap() {
        let shape = shape(3_000, 1_500, 0.3, 90);
        let loans = draw_loans(&mut Rng::new(42), &shape).unwrap();
        let mut by_book: Vec<Vec<&DrawnLoan>> = vec![Vec::new(); shape.books];
        for loan in &loans {
            by_book[loan.book].push(loan);
        }
        let overlapping = by_book
            .iter()
            .filter(|history| {
                history
                    .windows(2)
                    .any(|w| w[1].borrowed_on <= w[0].returned_on.unwrap_or(shape.today))
            })
            .count();
        assert!(
            overlapping * 20 < shape.books,
            "{overlapping} of {} copies overlap",
            shape.books
        );
    }

    #[test]
    fn dealing_is_proportional_and_exact() {
        assert_eq!(deal(10, &[1, 1, 3]), vec![2, 2, 6]);
        assert_eq!(deal(7, &[1, 1, 1]), vec![3, 2, 2]);
        assert_eq!(deal(5, &[0, 0]), vec![3, 2]);
        assert_eq!(deal(0, &[4, 0]), vec![0, 0]);
    }

    #[test]
    fn the_same_seed_draws_the_same_loans() {
        let shape = shape(500, 200, 0.3, 60);
        assert_eq!(
            draw_loans(&mut Rng::new(9), &shape),
            draw_loans(&mut Rng::new(9), &shape)
        );
    }

    #[test]
    fn impossible_shapes_are_refused_with_the_reason() {
        assert_eq!(
            shape(1_000, 100, 0.3, 90).mix(),
            Err(ShapeError::TooFewBooks {
                open: 400,
                overdue: 300,
                on_loan: 100,
                books: 100
            })
        );
        assert_eq!(shape(10, 10, 1.5, 90).mix(), Err(ShapeError::Share(1.5)));
        assert_eq!(shape(10, 10, 0.3, 2).mix(), Err(ShapeError::DaysBack(2)));
        assert_eq!(
            Shape {
                members: 0,
                ..shape(10, 10, 0.3, 90)
            }
            .mix(),
            Err(ShapeError::NothingToLend)
        );
    }
}
