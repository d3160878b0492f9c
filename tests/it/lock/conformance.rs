//! The real lock store, fence and records held to the protocol model (`finesettle-model`):
//! seeded random walks of the model replayed step by step against the real code, on each backend,
//! comparing every answer (taken, held, renewed, fenced, refused, recorded, released) and, after
//! every step, the store's holder and token and the dates' SUCCESS records. A difference fails
//! with the seed and the walk told up to that step.
//!
//! **Time.** The model's clock is the lock store's. The replay cannot move the database's or
//! Redis's clock, so it moves the stored times instead: a tick takes one [`TICK`] off every time
//! the store keeps for the walk's task (`locked_at` and `locked_until` of the `task_lock` row; the
//! Redis key's TTL and the `locked_at` in its value) and off the leases the replicas hold. Leases
//! are whole ticks long (an hour each), so the milliseconds the real calls take never cross a
//! lease's end, and a lease ends exactly at a tick, as in the model. Nothing in `src/` knows about
//! this: the stores are driven through their public functions only.
//!
//! One walk per seed, one task name per walk, so the walks share the test's database and Redis.
//! `FINESETTLE_CONFORMANCE_SEED=<n>` replays that one seed.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use finesettle::domain::TaskName;
use finesettle::jobs::plan;
use finesettle::lock::{Acquired, FenceError, JobLock, Lease, LockSpec, fence, guard};
use finesettle::settlement::RunContext;
use finesettle::settlement::records::{self, StartOutcome, Trigger};
use finesettle_model::walk::{Step, walk};
use finesettle_model::{Action, Bug, Config, Job, Outcome, Protocol, World, story};
use sqlx::PgPool;

use crate::lock::backend::{Backend, Fixture};

on_each_backend!(
    model_walks_replay_on_the_real_store,
    a_model_with_a_seeded_bug_is_told_apart_from_the_real_store,
);

/// Walks per backend and CI run.
const WALKS: u64 = 150;
/// The longest walk; a walk of `Config::replayed()` ends by itself well before.
const MAX_STEPS: usize = 400;
/// One model tick in stored time.
const TICK: Duration = Duration::from_secs(3600);

async fn model_walks_replay_on_the_real_store(backend: Backend) {
    let fx = Fixture::new(backend).await;
    let model = Protocol::new(Config::replayed());
    let seeds = match std::env::var("FINESETTLE_CONFORMANCE_SEED") {
        Ok(seed) => vec![seed.parse().expect("FINESETTLE_CONFORMANCE_SEED is a number")],
        Err(_) => (1..=WALKS).collect::<Vec<u64>>(),
    };
    let started = std::time::Instant::now();
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for &seed in &seeds {
        match replay(&fx, &model, seed).await {
            Ok(walk) => {
                for step in walk {
                    *seen.entry(name(step.outcome)).or_default() += 1;
                }
            }
            Err(difference) => panic!("{backend:?}, {difference}"),
        }
    }
    println!(
        "{backend:?}: {} walks, {} steps replayed in {:.1?}; answers compared: {seen:?}",
        seeds.len(),
        seen.values().sum::<usize>(),
        started.elapsed()
    );
}

/// An outcome's name without its fields, for the tally of what the replay compared.
fn name(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Ticked => "tick",
        Outcome::Asked { .. } => "fire",
        Outcome::Taken { .. } => "taken",
        Outcome::Held { .. } => "held",
        Outcome::Renewed { .. } => "renewed",
        Outcome::RenewalLost => "renewal lost",
        Outcome::GaveUp => "gave up",
        Outcome::Running { .. } => "running",
        Outcome::AlreadySettled { .. } => "already settled",
        Outcome::Fenced => "fenced",
        Outcome::NotEnded { .. } => "not ended",
        Outcome::Stopped => "stopped",
        Outcome::Recorded { .. } => "recorded",
        Outcome::Duplicate { .. } => "duplicate",
        Outcome::Refused { .. } => "refused",
        Outcome::Forgot { .. } => "store lost the lease",
        Outcome::Released { .. } => "released",
        Outcome::Paused | Outcome::Resumed | Outcome::Crashed | Outcome::Restarted => "process fault or end",
    }
}

/// The replay can fail: a model whose commits skip the fence lets a stale holder's commit through
/// (or up to the unique index) where the real fence refuses it, and some walk shows it.
async fn a_model_with_a_seeded_bug_is_told_apart_from_the_real_store(backend: Backend) {
    let fx = Fixture::new(backend).await;
    let model = Protocol::with_bugs(Config::replayed(), &[Bug::NoFenceAtCommit]);
    for seed in 1..=WALKS {
        if let Err(difference) = replay(&fx, &model, seed).await {
            let stale_commit = ["Recorded", "Duplicate"]
                .iter()
                .any(|answer| difference.contains(&format!("the model answered {answer}")));
            assert!(
                stale_commit && difference.contains("the real code Fenced"),
                "{difference}"
            );
            println!(
                "{backend:?}: the seeded bug told apart at {}",
                difference.lines().next().unwrap_or_default()
            );
            return;
        }
    }
    panic!("{WALKS} walks of a model without the fence at commit all agreed with the real store");
}

/// Replays the walk of `seed`: the walk, or the first difference with the walk so far.
async fn replay(fx: &Fixture, model: &Protocol, seed: u64) -> Result<Vec<Step>, String> {
    let walk = walk(model, seed, MAX_STEPS);
    let mut replay = Replay::new(fx, model, seed);
    for (n, step) in walk.iter().enumerate() {
        if let Err(difference) = replay.step(step).await {
            return Err(format!(
                "seed {seed}, step {}: {difference}\nthe walk so far:\n{}",
                n + 1,
                tell(&walk[..=n])
            ));
        }
    }
    replay.forget_the_task().await;
    Ok(walk)
}

/// One walk being replayed: what the real replicas hold.
struct Replay<'a> {
    fx: &'a Fixture,
    model: &'a Protocol,
    task: TaskName,
    leases: Vec<Option<Lease>>,
    executions: Vec<Option<i64>>,
    /// The target of each replica's acquisition in flight.
    targets: Vec<u8>,
}

impl<'a> Replay<'a> {
    fn new(fx: &'a Fixture, model: &'a Protocol, seed: u64) -> Self {
        let replicas = usize::from(model.config.replicas);
        Replay {
            fx,
            model,
            task: format!("conformance-{seed}").into(),
            leases: vec![None; replicas],
            executions: vec![None; replicas],
            targets: vec![0; replicas],
        }
    }

    fn pool(&self) -> &PgPool {
        self.fx.pool()
    }

    fn lock(&self) -> &JobLock {
        &self.fx.lock
    }

    /// Does `step` on the real code; `Err` names the first difference from the model.
    async fn step(&mut self, step: &Step) -> Result<(), String> {
        let real = self.act(step).await?;
        let expected = self.expected(step);
        if real != expected {
            return Err(format!("the model answered {expected:?}, the real code {real:?}"));
        }
        self.compare_store(&step.after).await
    }

    /// The model's answer, as the backend under test gives it. The one difference: a Redis
    /// release of a lease that expired unnoticed finds its key gone and answers "not owned",
    /// where PostgreSQL still finds its row (either way the lock is free).
    fn expected(&self, step: &Step) -> Outcome {
        match (step.outcome, self.fx.redis()) {
            (Outcome::Released { owned: true }, Some(_)) if step.before.lock_is_free() => {
                Outcome::Released { owned: false }
            }
            (outcome, _) => outcome,
        }
    }

    async fn act(&mut self, step: &Step) -> Result<Outcome, String> {
        let before = &step.before;
        Ok(match step.action {
            Action::Tick => {
                self.pass_a_tick().await;
                Outcome::Ticked
            }
            Action::Fire(r) | Action::Manual(r, _) => {
                let Outcome::Asked { target } = step.outcome else {
                    return Err(format!("a fire answered {:?}", step.outcome));
                };
                self.targets[r] = target;
                step.outcome
            }
            Action::Answer(r) => self.acquire(before, r).await,
            Action::Renew(r) => self.renew(before, r, step.outcome).await,
            Action::Begin(r) => self.begin(before, r, step.outcome).await?,
            Action::Commit(r) => self.commit(r).await,
            Action::Refuse(r) => self.refuse(before, r).await?,
            Action::Release(r) => {
                let lease = self.leases[r].take().expect("a releasing replica holds a lease");
                self.executions[r] = None;
                let owned = self
                    .lock()
                    .release(&lease, self.ticks(1))
                    .await
                    .map_err(|e| e.to_string())?;
                Outcome::Released { owned }
            }
            Action::Forget => {
                self.forget().await;
                step.outcome
            }
            Action::Crash(r) => {
                self.leases[r] = None;
                self.executions[r] = None;
                step.outcome
            }
            Action::Pause(_) | Action::Resume(_) | Action::Restart(_) => step.outcome,
        })
    }

    /// `Answer`: the real acquisition, then the real plan under the lock.
    async fn acquire(&mut self, before: &World, r: usize) -> Outcome {
        let spec = LockSpec {
            task_name: self.task.clone(),
            instance_id: format!("r{r}"),
            at_most_for: self.ticks(self.model.config.lease),
            at_least_for: self.ticks(self.model.config.at_least),
        };
        let answer = self.lock().try_acquire(&spec).await.expect("the lock store answers");
        let now = db_now(self.pool()).await;
        match answer {
            Acquired::Won(lease) => {
                let until = before.now + self.ticks_until(now, lease.locked_until);
                let token = u8::try_from(lease.fencing_token.0).expect("a small token");
                self.leases[r] = Some(lease);
                let dates = self.plan(self.targets[r]).await;
                Outcome::Taken { token, until, dates }
            }
            Acquired::Held { locked_until, .. } => Outcome::Held {
                until: before.now + self.ticks_until(now, locked_until),
            },
        }
    }

    /// The dates `plan::unsettled_from` gives for `target`, as the model's bit set.
    async fn plan(&self, target: u8) -> u8 {
        let last = target.min(self.model.config.dates - 1);
        let dates = plan::unsettled_from(self.pool(), &self.task, date(0), date(last), 62)
            .await
            .expect("the planner answers");
        dates.iter().fold(0, |set, d| set | 1 << (*d - date(0)).num_days())
    }

    /// `Renew`: a keeper past its deadline gives up without asking the store.
    async fn renew(&mut self, before: &World, r: usize, modelled: Outcome) -> Outcome {
        if modelled == Outcome::GaveUp {
            return Outcome::GaveUp;
        }
        let lease = self.leases[r].as_ref().expect("a renewing replica holds a lease");
        let renewed = self
            .lock()
            .renew(lease, self.ticks(self.model.config.lease))
            .await
            .expect("the lock store answers");
        let now = db_now(self.pool()).await;
        match renewed {
            Some(lease) => {
                let until = before.now + self.ticks_until(now, lease.locked_until);
                self.leases[r] = Some(lease);
                Outcome::Renewed { until }
            }
            None => Outcome::RenewalLost,
        }
    }

    /// `Begin`: a walk that stops makes no call; otherwise the fenced RUNNING record.
    async fn begin(&mut self, before: &World, r: usize, modelled: Outcome) -> Result<Outcome, String> {
        let date = match modelled {
            Outcome::Stopped => return Ok(Outcome::Stopped),
            Outcome::Running { date } | Outcome::AlreadySettled { date } => date,
            // the model names no date when fenced: the next one of the walk
            Outcome::Fenced => next_date(before, r),
            other => return Err(format!("the replay cannot drive {other:?}: every clock is right")),
        };
        let ctx = self.context(r);
        Ok(match records::start(self.pool(), &ctx, self::date(date)).await {
            Ok(StartOutcome::Running { execution_id }) => {
                self.executions[r] = Some(execution_id);
                Outcome::Running { date }
            }
            Ok(StartOutcome::AlreadySettled { .. }) => Outcome::AlreadySettled { date },
            // every replayed date lies in January 2026, long ended by the database's clock
            Ok(StartOutcome::NotEnded { today }) => {
                return Err(format!("the real store found day {date} not ended (today is {today})"));
            }
            Err(FenceError::Fenced(_)) => Outcome::Fenced,
            Err(FenceError::Db(e)) => return Err(format!("the database failed: {e}")),
        })
    }

    /// `Commit`: the date's transaction as `settlement::date` opens and closes it.
    async fn commit(&mut self, r: usize) -> Outcome {
        let ctx = self.context(r);
        let execution_id = self.executions[r].expect("a committing replica has a RUNNING record");
        let date = self.date_of(execution_id).await;
        let mut tx = fence::begin(self.pool()).await.expect("a transaction");
        match guard(&mut tx, &ctx.task_name, ctx.fencing_token).await {
            Ok(()) => {}
            Err(FenceError::Fenced(_)) => return Outcome::Fenced,
            Err(FenceError::Db(e)) => panic!("the fence failed: {e}"),
        }
        match records::succeed(&mut tx, execution_id, 0).await {
            Ok(true) => {
                tx.commit().await.expect("the date commits");
                self.executions[r] = None;
                Outcome::Recorded { date }
            }
            Ok(false) => panic!("execution {execution_id} was no longer RUNNING"),
            Err(e) if is_one_success_violation(&e) => Outcome::Duplicate { date },
            Err(e) => panic!("the SUCCESS failed: {e}"),
        }
    }

    /// `Refuse`: the database refuses the date's transaction (a statement fails inside it), then
    /// the FAILED record is written in its own fenced transaction, which passes only while the
    /// replica's token is current.
    async fn refuse(&mut self, before: &World, r: usize) -> Result<Outcome, String> {
        let ctx = self.context(r);
        let execution_id = self.executions[r]
            .take()
            .expect("a refused replica has a RUNNING record");
        let date = self.date_of(execution_id).await;
        let mut tx = fence::begin(self.pool()).await.expect("a transaction");
        let refused = sqlx::query("select 1 / 0").execute(&mut *tx).await;
        assert!(refused.is_err(), "the database refuses");
        drop(tx);
        let closed = records::fail(self.pool(), &ctx, execution_id, "refused by the replay")
            .await
            .expect("the database answers");
        let current =
            matches!(self.leases[r], Some(ref lease) if i64::from(before.store.token) == lease.fencing_token.0);
        if closed != current {
            return Err(format!(
                "the FAILED record was written: {closed}; the token is current: {current}"
            ));
        }
        Ok(Outcome::Refused { date })
    }

    /// `Forget`: the store loses the live lease; the token stays (Redis: the key is deleted and
    /// the counter kept; PostgreSQL: the row ends now).
    async fn forget(&self) {
        match self.fx.redis() {
            Some((lock, pool)) => {
                let mut conn = pool.get().await.expect("a Redis connection");
                let () = ::redis::cmd("DEL")
                    .arg(lock.lock_key(&self.task))
                    .query_async(&mut conn)
                    .await
                    .expect("DEL");
            }
            None => {
                sqlx::query("update task_lock set locked_until = now() where task_name = $1")
                    .bind(&self.task)
                    .execute(self.pool())
                    .await
                    .expect("end the lease");
            }
        }
    }

    /// Deletes the walk's lock row, so that the next walks' `list()` reads only their own.
    async fn forget_the_task(&self) {
        sqlx::query("delete from task_lock where task_name = $1")
            .bind(&self.task)
            .execute(self.pool())
            .await
            .expect("delete the walk's lock row");
    }

    /// `Tick`: every stored time of the walk's task, and every lease held, one tick earlier.
    async fn pass_a_tick(&mut self) {
        sqlx::query(
            "update task_lock set locked_at = locked_at - $2, locked_until = locked_until - $2
             where task_name = $1",
        )
        .bind(&self.task)
        .bind(TICK)
        .execute(self.pool())
        .await
        .expect("move the row's times");
        if let Some((lock, pool)) = self.fx.redis() {
            let mut conn = pool.get().await.expect("a Redis connection");
            let _: i64 = ::redis::Script::new(SHIFT_KEY)
                .key(lock.lock_key(&self.task))
                .arg(TICK.as_millis() as i64)
                .invoke_async(&mut conn)
                .await
                .expect("move the key's times");
        }
        let tick = chrono::Duration::from_std(TICK).unwrap();
        for lease in self.leases.iter_mut().flatten() {
            lease.locked_at -= tick;
            lease.locked_until -= tick;
        }
    }

    /// After every step: the store's holder and token, and each date's SUCCESS, as modelled.
    async fn compare_store(&self, after: &World) -> Result<(), String> {
        let locks = self.lock().list().await.map_err(|e| e.to_string())?;
        let real = locks
            .iter()
            .find(|lock| lock.task_name == self.task)
            .map(|lock| (lock.held, lock.fencing_token.0));
        let modelled = (after.store.token > 0).then_some((!after.lock_is_free(), i64::from(after.store.token)));
        if real != modelled {
            return Err(format!(
                "the store holds (held, token) {real:?}, the model {modelled:?}"
            ));
        }
        let successes: Vec<(NaiveDate, i64)> = sqlx::query_as(
            "select business_date, fencing_token from task_execution
             where task_name = $1 and status = 'SUCCESS' order by business_date",
        )
        .bind(&self.task)
        .fetch_all(self.pool())
        .await
        .map_err(|e| e.to_string())?;
        let settled: Vec<(NaiveDate, i64)> = (0..self.model.config.dates)
            .filter_map(|d| after.settled[usize::from(d)].map(|token| (date(d), i64::from(token))))
            .collect();
        if successes != settled {
            return Err(format!("SUCCESS records {successes:?}, the model's {settled:?}"));
        }
        Ok(())
    }

    fn context(&self, r: usize) -> RunContext {
        let lease = self.leases[r].as_ref().expect("the replica holds a lease");
        RunContext {
            task_name: self.task.clone(),
            fencing_token: lease.fencing_token,
            instance_id: format!("r{r}"),
            trigger: Trigger::Cron,
            start_date: date(0),
            business_tz: chrono_tz::Asia::Shanghai,
            batch_size: 1000,
            statement_limits: Default::default(),
        }
    }

    async fn date_of(&self, execution_id: i64) -> u8 {
        let day: NaiveDate = sqlx::query_scalar("select business_date from task_execution where id = $1")
            .bind(execution_id)
            .fetch_one(self.pool())
            .await
            .expect("the execution exists");
        u8::try_from((day - date(0)).num_days()).expect("a modelled date")
    }

    fn ticks(&self, n: u8) -> Duration {
        TICK * u32::from(n)
    }

    /// Whole ticks from `now` to `until`, rounded: the milliseconds the calls took vanish.
    fn ticks_until(&self, now: DateTime<Utc>, until: DateTime<Utc>) -> u8 {
        let ticks = (until - now).as_seconds_f64() / TICK.as_secs_f64();
        u8::try_from(ticks.round() as i64).unwrap_or_else(|_| panic!("{ticks} ticks ahead"))
    }
}

/// Moves the Redis key one tick (ARGV[1] ms) earlier: its TTL, and `locked_at` in its value
/// (`owner:token:locked_at:holder`, see `lock::redis`); a key whose TTL runs out is deleted, as
/// Redis would expire it.
const SHIFT_KEY: &str = r"
local value = redis.call('GET', KEYS[1])
if not value then return 0 end
local left = redis.call('PTTL', KEYS[1]) - tonumber(ARGV[1])
if left <= 0 then
    redis.call('DEL', KEYS[1])
    return 1
end
local owner, token, at, holder = string.match(value, '^([^:]*):([^:]*):([^:]*):(.*)$')
local shifted = owner .. ':' .. token .. ':' .. string.format('%d', tonumber(at) - tonumber(ARGV[1])) .. ':' .. holder
redis.call('SET', KEYS[1], shifted, 'PX', left)
return 2
";

/// The oldest date replica `r` still has to walk.
fn next_date(w: &World, r: usize) -> u8 {
    match w.replicas[r].job {
        Job::Working { dates, .. } => dates.trailing_zeros() as u8,
        job => panic!("r{r} begins a date while {job:?}"),
    }
}

/// Model date `d` as a business date.
fn date(d: u8) -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 1, 1).unwrap() + chrono::Days::new(u64::from(d))
}

async fn db_now(pool: &PgPool) -> DateTime<Utc> {
    sqlx::query_scalar("select now()").fetch_one(pool).await.unwrap()
}

fn is_one_success_violation(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .and_then(|d| d.constraint())
        .is_some_and(|name| name == "task_execution_one_success")
}

/// The walk up to the failing step, one line per step.
fn tell(steps: &[Step]) -> String {
    steps
        .iter()
        .enumerate()
        .map(|(n, s)| {
            format!(
                "{:3}. {}\n",
                n + 1,
                story::line(&s.before, s.action, s.outcome, &s.after)
            )
        })
        .collect()
}
