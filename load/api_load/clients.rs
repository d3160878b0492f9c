//! Closed-loop API clients: each sends one request, waits for the answer, sends the next.
//!
//! Client `k` talks to replica `k % replicas` and owns one book of its own (made through the API
//! at setup), so that its loans never collide with another client's: it lends that book to a
//! random member, later returns it, and in between reads members and their loans. The cycle is
//! create loan, get member, list loans, return loan, get member, list loans: reads are two
//! thirds of the traffic.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use chrono::NaiveDate;
use reqwest::{Method, StatusCode};
use serde_json::json;
use sqlx::PgPool;

use crate::api::Api;
use crate::stats::{self, OpStats};

/// Whatever happens, clients stop after this long: the loops are bounded.
const HARD_LIMIT: Duration = Duration::from_secs(600);

/// Before the settlement is triggered, the clients run this long, so the measured window does
/// not include connection set-up.
const WARM_UP: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    CreateLoan,
    ReturnLoan,
    ListLoans,
    GetMember,
}

impl Op {
    pub const ALL: [Op; 4] = [Op::CreateLoan, Op::ReturnLoan, Op::ListLoans, Op::GetMember];

    pub fn label(self) -> &'static str {
        match self {
            Op::CreateLoan => "create loan",
            Op::ReturnLoan => "return loan",
            Op::ListLoans => "list loans",
            Op::GetMember => "get member",
        }
    }
}

/// One request: what, when it started (from the phase's start), how long it took, whether it got
/// the status it should.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub op: Op,
    pub at: Duration,
    pub latency: Duration,
    pub ok: bool,
}

/// What the clients share across phases.
pub struct Setup {
    books: Vec<i64>,
    members: i64,
    due_on: NaiveDate,
}

impl Setup {
    /// One book per client, made through the API; loans fall due in two weeks.
    pub async fn create(api: &Api, pool: &PgPool, clients: usize) -> anyhow::Result<Self> {
        let members: i64 = sqlx::query_scalar("select max(id) from member").fetch_one(pool).await?;
        let today: NaiveDate = sqlx::query_scalar("select (now() at time zone 'Asia/Shanghai')::date")
            .fetch_one(pool)
            .await?;
        let mut books = Vec::with_capacity(clients);
        for k in 0..clients {
            let book = api
                .expect(
                    k,
                    Method::POST,
                    "/api/v1/books",
                    Some(&json!({ "title": format!("Load client {k}") })),
                    StatusCode::CREATED,
                )
                .await?;
            books.push(book["id"].as_i64().context("a book without id")?);
        }
        Ok(Setup {
            books,
            members,
            due_on: today + chrono::Days::new(14),
        })
    }
}

/// The requests of one phase, and the window they are counted in.
pub struct ApiRun {
    pub window: Duration,
    pub samples: Vec<Sample>,
    /// A few of the errors, to say what went wrong.
    pub errors: Vec<String>,
}

impl ApiRun {
    pub fn stats(&self) -> Vec<OpStats> {
        stats::by_op(&self.samples, self.window)
    }

    pub fn summary(&self) -> String {
        let all = stats::overall(&self.samples, self.window);
        format!(
            "{} requests in {:.1} s: {:.0} req/s, p50 {:.1} ms, p99 {:.1} ms, {} errors{}",
            all.requests,
            self.window.as_secs_f64(),
            all.per_second,
            stats::ms(all.p50),
            stats::ms(all.p99),
            all.errors,
            self.errors
                .first()
                .map(|e| format!(" (first: {e})"))
                .unwrap_or_default()
        )
    }
}

/// The clients for `duration`.
pub async fn run_for(api: &Api, setup: &Setup, duration: Duration) -> ApiRun {
    let fleet = Fleet::start(api, setup);
    tokio::time::sleep(duration).await;
    fleet.stop(Duration::ZERO, duration).await
}

/// The clients while `work` runs (after a warm-up); only requests started during `work` count.
pub async fn run_during<T>(api: &Api, setup: &Setup, work: impl Future<Output = T>) -> (ApiRun, T) {
    let fleet = Fleet::start(api, setup);
    tokio::time::sleep(WARM_UP).await;
    let from = fleet.epoch.elapsed();
    let result = work.await;
    let to = fleet.epoch.elapsed();
    (fleet.stop(from, to).await, result)
}

/// The running clients of one phase.
struct Fleet {
    epoch: Instant,
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<(Vec<Sample>, Vec<String>)>>,
}

impl Fleet {
    fn start(api: &Api, setup: &Setup) -> Fleet {
        let epoch = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let tasks = setup
            .books
            .iter()
            .enumerate()
            .map(|(k, &book)| {
                let client = Client {
                    replica: k % api.replicas(),
                    api: api.clone(),
                    book,
                    members: setup.members,
                    due_on: setup.due_on,
                    rng: 0x9E37_79B9_7F4A_7C15 ^ (k as u64 + 1),
                };
                tokio::spawn(client.run(epoch, Arc::clone(&stop)))
            })
            .collect();
        Fleet { epoch, stop, tasks }
    }

    /// Stops the clients and keeps the requests that started in `from..to`.
    async fn stop(self, from: Duration, to: Duration) -> ApiRun {
        self.stop.store(true, Ordering::Relaxed);
        let mut samples = Vec::new();
        let mut errors = Vec::new();
        for task in self.tasks {
            if let Ok((client_samples, client_errors)) = task.await {
                samples.extend(client_samples.into_iter().filter(|s| s.at >= from && s.at < to));
                errors.extend(client_errors);
            }
        }
        errors.truncate(5);
        ApiRun {
            window: to.saturating_sub(from),
            samples,
            errors,
        }
    }
}

struct Client {
    replica: usize,
    api: Api,
    book: i64,
    members: i64,
    due_on: NaiveDate,
    rng: u64,
}

impl Client {
    async fn run(mut self, epoch: Instant, stop: Arc<AtomicBool>) -> (Vec<Sample>, Vec<String>) {
        const CYCLE: [Op; 6] = [
            Op::CreateLoan,
            Op::GetMember,
            Op::ListLoans,
            Op::ReturnLoan,
            Op::GetMember,
            Op::ListLoans,
        ];
        let mut samples = Vec::new();
        let mut errors = Vec::new();
        let mut open_loan: Option<i64> = None;
        let mut step = 0;
        while !stop.load(Ordering::Relaxed) && epoch.elapsed() < HARD_LIMIT {
            let op = match CYCLE[step % CYCLE.len()] {
                // Lend when the book is in, return when it is out: a failed step is retried.
                Op::CreateLoan | Op::ReturnLoan if open_loan.is_some() => Op::ReturnLoan,
                Op::CreateLoan | Op::ReturnLoan => Op::CreateLoan,
                read => read,
            };
            step += 1;
            let at = epoch.elapsed();
            let started = Instant::now();
            let outcome = self.send(op, &mut open_loan).await;
            let latency = started.elapsed();
            if let Err(error) = &outcome
                && errors.len() < 5
            {
                errors.push(format!("{}: {error:#}", op.label()));
            }
            samples.push(Sample {
                op,
                at,
                latency,
                ok: outcome.is_ok(),
            });
        }
        (samples, errors)
    }

    async fn send(&mut self, op: Op, open_loan: &mut Option<i64>) -> anyhow::Result<()> {
        let member = self.random_member();
        match op {
            Op::CreateLoan => {
                let body = json!({ "member_id": member, "book_id": self.book, "due_on": self.due_on });
                let loan = self
                    .api
                    .expect(
                        self.replica,
                        Method::POST,
                        "/api/v1/loans",
                        Some(&body),
                        StatusCode::CREATED,
                    )
                    .await?;
                *open_loan = Some(loan["id"].as_i64().context("a loan without id")?);
            }
            Op::ReturnLoan => {
                let id = open_loan.context("no open loan to return")?;
                let path = format!("/api/v1/loans/{id}/return");
                self.api
                    .expect(self.replica, Method::POST, &path, Some(&json!({})), StatusCode::OK)
                    .await?;
                *open_loan = None;
            }
            Op::ListLoans => {
                let path = format!("/api/v1/loans?member_id={member}&limit=20");
                self.api
                    .expect(self.replica, Method::GET, &path, None, StatusCode::OK)
                    .await?;
            }
            Op::GetMember => {
                let path = format!("/api/v1/members/{member}");
                self.api
                    .expect(self.replica, Method::GET, &path, None, StatusCode::OK)
                    .await?;
            }
        }
        Ok(())
    }

    /// A member id in 1..=members (xorshift64: no dependency, reproducible per client).
    fn random_member(&mut self) -> i64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        1 + (self.rng % self.members.max(1) as u64) as i64
    }
}
