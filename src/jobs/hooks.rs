//! What runs after a fire's walk, handed to the job when it is built.
//!
//! The job settles dates; what other parts of the service do with settled dates (the audit of
//! the months a fire made final) is theirs. They hand the job a hook at start-up instead of the
//! job importing them, so `jobs/` depends on nothing above it and a reader of the fire sees one
//! call where the walk is over.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use chrono::NaiveDate;
use tokio_util::sync::CancellationToken;

use crate::domain::FencingToken;

/// What a hook is told once a walk is over and the lock released.
#[derive(Debug, Clone)]
pub struct Walked {
    /// The dates this fire settled (SUCCESS), oldest first.
    pub settled: Vec<NaiveDate>,
    /// Cancelled at shutdown: a hook stops what it is doing.
    pub shutdown: CancellationToken,
}

type Hook = Arc<dyn Fn(Walked) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;
type GrantHook = Arc<dyn Fn(FencingToken) + Send + Sync>;

/// The hooks of a job. Cheap to clone.
#[derive(Clone, Default)]
pub struct Hooks {
    after_walk: Vec<Hook>,
    on_granted: Vec<GrantHook>,
}

impl Hooks {
    /// Adds `hook`, told the fencing token of every lock this replica's fires win, at once (it
    /// must not block): what this replica saw acknowledged, which a failover may have lost.
    pub fn on_granted(mut self, hook: impl Fn(FencingToken) + Send + Sync + 'static) -> Self {
        self.on_granted.push(Arc::new(hook));
        self
    }

    pub(super) fn run_on_granted(&self, token: FencingToken) {
        for hook in &self.on_granted {
            hook(token);
        }
    }

    /// Adds `hook`, run after every walk that settled at least one date, after the lock was
    /// released (so it delays no other replica), one hook after the other.
    pub fn after_walk<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(Walked) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.after_walk.push(Arc::new(move |walked| Box::pin(hook(walked))));
        self
    }

    pub(super) async fn run_after_walk(&self, walked: Walked) {
        if walked.settled.is_empty() {
            return;
        }
        for hook in &self.after_walk {
            hook(walked.clone()).await;
        }
    }
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks")
            .field("after_walk", &self.after_walk.len())
            .field("on_granted", &self.on_granted.len())
            .finish()
    }
}
