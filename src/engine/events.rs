//! What the engine tells the world. It prints nothing itself: reporters, progress and
//! telemetry consume these events (nextest's dispatcher/reporter split).

use super::breaker::BreakerState;
use super::outcome::UnitStatus;
use crate::provider::AttemptRecord;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Why an attempt is being made.
#[derive(Debug, Clone, PartialEq)]
pub enum AttemptReason {
    First,
    /// The same route again (no other route admitted calls).
    Retry {
        after: String,
    },
    /// The next route in order.
    Failover {
        from: String,
        after: String,
    },
}

#[derive(Debug, Clone)]
pub enum Event {
    UnitQueued {
        unit: usize,
    },
    /// The unit's first attempt starts now; its hunk budget starts with it.
    UnitStarted {
        unit: usize,
    },
    AttemptStarted {
        unit: usize,
        /// 1-based.
        attempt: u32,
        route: String,
        reason: AttemptReason,
        /// The deadline given to this attempt, and the budgets left when it started.
        deadline: Duration,
        hunk_remaining: Duration,
        review_remaining: Duration,
        breaker: BreakerState,
        probe: bool,
    },
    AttemptFinished {
        unit: usize,
        attempt: u32,
        record: AttemptRecord,
    },
    Retry {
        unit: usize,
        route: String,
        reason: String,
        /// How long the engine waits first (a Retry-After that fits the budget).
        wait: Duration,
    },
    Failover {
        unit: usize,
        from: String,
        to: String,
        reason: String,
    },
    Breaker {
        route: String,
        from: BreakerState,
        to: BreakerState,
        reason: String,
    },
    UnitFinished {
        unit: usize,
        status: UnitStatus,
        route: Option<String>,
        findings: usize,
        reason: String,
    },
    /// The review budget ran out; `in_flight` attempts were cancelled.
    BudgetExpired {
        in_flight: usize,
    },
}

/// Where events go. Cheap to clone; called from the engine's tasks.
#[derive(Clone)]
pub struct Sink(Arc<dyn Fn(Event) + Send + Sync>);

impl Sink {
    pub fn new(f: impl Fn(Event) + Send + Sync + 'static) -> Self {
        Sink(Arc::new(f))
    }

    /// Drops every event.
    pub fn none() -> Self {
        Sink::new(|_| {})
    }

    /// Collects events into a shared list (for tests and reports that want them all).
    pub fn collect() -> (Self, Arc<Mutex<Vec<Event>>>) {
        let list = Arc::new(Mutex::new(Vec::new()));
        let l = list.clone();
        (
            Sink::new(move |e| l.lock().expect("event list").push(e)),
            list,
        )
    }

    /// Sends to both sinks.
    pub fn tee(self, other: Sink) -> Self {
        Sink::new(move |e: Event| {
            (other.0)(e.clone());
            (self.0)(e);
        })
    }

    pub fn emit(&self, e: Event) {
        (self.0)(e)
    }
}
