//! Many tasks locked by many contenders at once, on each backend: each critical section is
//! entered by exactly one.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use finesettle::domain::FencingToken;
use finesettle::lock::Acquired;
use tokio::sync::Barrier;

use crate::lock::backend::{Backend, Fixture};
use crate::lock::spec;

on_each_backend!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    every_round_has_exactly_one_winner_per_task,
    free_running_contenders_never_share_a_section,
    racing_first_acquisitions_of_new_tasks_answer_held_not_errors,
);

const TASKS: usize = 8;
const CONTENDERS_PER_TASK: usize = 8;
const ROUNDS: usize = 10;

/// Who is inside each task's critical section right now, and how many entered it in all.
struct Sections {
    inside: Vec<AtomicUsize>,
    entries: Vec<AtomicUsize>,
}

impl Sections {
    fn new() -> Self {
        Sections {
            inside: (0..TASKS).map(|_| AtomicUsize::new(0)).collect(),
            entries: (0..TASKS).map(|_| AtomicUsize::new(0)).collect(),
        }
    }

    /// Enters, stays a moment so that overlaps would show, and leaves.
    async fn visit(&self, task: usize) {
        let already_inside = self.inside[task].fetch_add(1, Ordering::SeqCst);
        assert_eq!(already_inside, 0, "two contenders inside the section of task {task}");
        self.entries[task].fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(2)).await;
        self.inside[task].fetch_sub(1, Ordering::SeqCst);
    }

    fn entries(&self) -> Vec<usize> {
        self.entries.iter().map(|e| e.load(Ordering::SeqCst)).collect()
    }
}

fn task_name(task: usize) -> String {
    format!("task-{task}")
}

async fn every_round_has_exactly_one_winner_per_task(backend: Backend) {
    let fx = Fixture::new(backend).await;
    let (lock, _store) = fx.lock_on_own_store(16).await;
    let sections = Arc::new(Sections::new());
    let contenders = TASKS * CONTENDERS_PER_TASK;
    // start together; the winners release only once every contender of the round has tried
    let start = Arc::new(Barrier::new(contenders));
    let tried = Arc::new(Barrier::new(contenders));
    let released = Arc::new(Barrier::new(contenders));

    let mut handles = Vec::new();
    for contender in 0..contenders {
        let task = contender % TASKS;
        let (lock, sections) = (lock.clone(), Arc::clone(&sections));
        let (start, tried, released) = (Arc::clone(&start), Arc::clone(&tried), Arc::clone(&released));
        handles.push(tokio::spawn(async move {
            let spec = spec(task_name(task), &format!("contender-{contender}"));
            let mut tokens = Vec::new();
            for _ in 0..ROUNDS {
                start.wait().await;
                let won = match lock.try_acquire(&spec).await.expect("lock store answers") {
                    Acquired::Won(lease) => {
                        sections.visit(task).await;
                        Some(lease)
                    }
                    Acquired::Held { .. } => None,
                };
                tried.wait().await;
                if let Some(lease) = won {
                    assert!(lock.release(&lease, Duration::ZERO).await.unwrap());
                    tokens.push(lease.fencing_token);
                }
                released.wait().await;
            }
            (task, tokens)
        }));
    }

    let mut tokens_by_task = vec![Vec::new(); TASKS];
    for handle in handles {
        let (task, tokens) = handle.await.expect("contender finished");
        tokens_by_task[task].extend(tokens);
    }
    assert_eq!(sections.entries(), vec![ROUNDS; TASKS], "one entry per task and round");
    for tokens in &mut tokens_by_task {
        tokens.sort_unstable();
        // one acquisition per round, each with the next token
        assert_eq!(*tokens, (1..=ROUNDS as i64).map(FencingToken).collect::<Vec<_>>());
    }
}

async fn free_running_contenders_never_share_a_section(backend: Backend) {
    const ATTEMPTS: usize = 25;
    let fx = Fixture::new(backend).await;
    let (lock, _store) = fx.lock_on_own_store(16).await;
    let sections = Arc::new(Sections::new());
    let wins = Arc::new(AtomicUsize::new(0));

    let mut handles = Vec::new();
    for contender in 0..TASKS * CONTENDERS_PER_TASK {
        let task = contender % TASKS;
        let (lock, sections, wins) = (lock.clone(), Arc::clone(&sections), Arc::clone(&wins));
        handles.push(tokio::spawn(async move {
            let spec = spec(task_name(task), &format!("contender-{contender}"));
            for _ in 0..ATTEMPTS {
                if let Acquired::Won(lease) = lock.try_acquire(&spec).await.expect("lock store answers") {
                    sections.visit(task).await;
                    wins.fetch_add(1, Ordering::SeqCst);
                    // leave the section before the lock: the next winner may enter right after
                    assert!(lock.release(&lease, Duration::ZERO).await.unwrap());
                }
                tokio::task::yield_now().await;
            }
        }));
    }
    for handle in handles {
        handle.await.expect("contender finished");
    }

    // the fencing token counts the acquisitions, so it must equal the entries of each section
    let entries = sections.entries();
    assert_eq!(entries.iter().sum::<usize>(), wins.load(Ordering::SeqCst));
    for view in lock.list().await.unwrap() {
        let task: usize = view.task_name.as_str().trim_start_matches("task-").parse().unwrap();
        assert!(entries[task] >= 1);
        assert_eq!(view.fencing_token, FencingToken(entries[task] as i64));
    }
}

/// The first acquisition of a task inserts its row: contenders racing on that insert must get
/// one winner and "held" for the rest, never a duplicate-key error from an index other than the
/// one `on conflict` resolves (each round is a task nobody has locked yet).
async fn racing_first_acquisitions_of_new_tasks_answer_held_not_errors(backend: Backend) {
    const NEW_TASKS: usize = 30;
    let fx = Fixture::new(backend).await;
    let (lock, _store) = fx.lock_on_own_store(16).await;
    for round in 0..NEW_TASKS {
        let start = Arc::new(Barrier::new(CONTENDERS_PER_TASK));
        let mut handles = Vec::new();
        for contender in 0..CONTENDERS_PER_TASK {
            let (lock, start) = (lock.clone(), Arc::clone(&start));
            handles.push(tokio::spawn(async move {
                let spec = spec(format!("new-task-{round}"), &format!("contender-{contender}"));
                start.wait().await;
                lock.try_acquire(&spec).await
            }));
        }
        let mut winners = 0;
        for handle in handles {
            match handle.await.expect("contender finished") {
                Ok(Acquired::Won(lease)) => {
                    assert_eq!(lease.fencing_token, FencingToken(1));
                    winners += 1;
                }
                Ok(Acquired::Held { .. }) => {}
                Err(e) => panic!("round {round}: a racing first acquisition failed: {e}"),
            }
        }
        assert_eq!(winners, 1, "round {round}");
    }
}
