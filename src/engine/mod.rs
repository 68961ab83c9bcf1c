//! The execution engine: nested budgets with cancellation, one retry owner, ordered
//! failover, per-route bulkheads and breakers (DESIGN.md sections 4 and 5).
//!
//! Time comes from tokio's clock, so tests run the engine deterministically on a paused
//! clock against in-process providers. The engine prints nothing; it emits [`Event`]s.

pub mod breaker;
pub mod events;
pub mod outcome;
pub mod retry;
mod unit;

pub use breaker::{Breaker, BreakerState};
pub use events::{AttemptReason, Event, Sink};
pub use outcome::{AttemptLog, EngineReport, Move, RouteSummary, UnitResult, UnitStatus};

use crate::config::Execution;
use crate::prompt::Prompt;
use crate::provider::Provider;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// One unit of work: a prompt for one skill × chunk.
#[derive(Debug, Clone)]
pub struct UnitWork {
    /// Index in the plan's dispatch order; results come back in the same order.
    pub index: usize,
    pub prompt: Prompt,
    /// The chunk's new-file lines.
    pub lines: (u32, u32),
    /// Optional work is shed first when the review budget runs low.
    pub optional: bool,
    /// What the unit is, for telemetry.
    pub labels: UnitLabels,
}

/// Telemetry attributes of a unit (skill, file, lines, priority).
#[derive(Debug, Clone, Default)]
pub struct UnitLabels {
    pub skill: String,
    pub path: String,
    pub priority: i32,
}

/// A route as the engine runs it.
pub struct EngineRoute {
    pub provider: Arc<dyn Provider>,
    pub max_concurrency: usize,
}

pub(crate) struct RouteState {
    name: String,
    provider: Arc<dyn Provider>,
    permits: Arc<Semaphore>,
    cap: usize,
    breaker: Mutex<Breaker>,
    in_flight: AtomicUsize,
    peak: AtomicUsize,
}

pub(crate) struct Shared {
    routes: Vec<RouteState>,
    exec: Execution,
    start: Instant,
    review_deadline: Instant,
    /// Cancelled at review-budget expiry or on interruption.
    cancel: CancellationToken,
    interrupted: CancellationToken,
    sink: Sink,
    /// Woken on every breaker transition, so waiting units re-choose their route.
    changed: Notify,
    in_flight: AtomicUsize,
    /// Put prompts on attempt spans (opt-in; off by default for privacy).
    trace_content: bool,
}

impl Shared {
    fn review_remaining(&self, now: Instant) -> Duration {
        self.review_deadline.saturating_duration_since(now)
    }
}

pub struct Engine {
    routes: Vec<EngineRoute>,
    exec: Execution,
    sink: Sink,
    trace_content: bool,
}

impl Engine {
    pub fn new(routes: Vec<EngineRoute>, exec: Execution, sink: Sink) -> Self {
        Engine {
            routes,
            exec,
            sink,
            trace_content: false,
        }
    }

    /// Records each prompt on its attempt span (only when the user opts in).
    pub fn with_trace_content(mut self, on: bool) -> Self {
        self.trace_content = on;
        self
    }

    /// Runs every unit within the review budget and returns what happened to each.
    /// Cancelling `interrupt` (a signal) cancels in-flight attempts at once, as budget
    /// expiry does; the report then still holds every finding received.
    pub async fn run(&self, units: Vec<UnitWork>, interrupt: CancellationToken) -> EngineReport {
        self.run_within(units, interrupt, self.exec.review_budget)
            .await
    }

    /// As [`Engine::run`], with `budget` in place of the review budget (a later phase of
    /// the same review gets what the earlier one left). Breakers start closed again.
    pub async fn run_within(
        &self,
        units: Vec<UnitWork>,
        interrupt: CancellationToken,
        budget: Duration,
    ) -> EngineReport {
        let start = Instant::now();
        let shared = Shared {
            routes: self
                .routes
                .iter()
                .map(|r| RouteState {
                    name: r.provider.route().to_string(),
                    provider: r.provider.clone(),
                    permits: Arc::new(Semaphore::new(r.max_concurrency.max(1))),
                    cap: r.max_concurrency.max(1),
                    breaker: Mutex::new(Breaker::new(self.exec.breaker, start)),
                    in_flight: AtomicUsize::new(0),
                    peak: AtomicUsize::new(0),
                })
                .collect(),
            exec: self.exec,
            start,
            review_deadline: start + budget,
            cancel: interrupt.child_token(),
            interrupted: interrupt.clone(),
            sink: self.sink.clone(),
            changed: Notify::new(),
            in_flight: AtomicUsize::new(0),
            trace_content: self.trace_content,
        };
        for u in &units {
            shared.sink.emit(Event::UnitQueued { unit: u.index });
        }
        let (results, budget_expired) = async {
            let all = futures_util::future::join_all(units.iter().map(|u| unit::run(&shared, u)));
            tokio::pin!(all);
            let mut budget_expired = false;
            let results = tokio::select! {
                biased;
                r = &mut all => r,
                _ = tokio::time::sleep_until(shared.review_deadline) => {
                    budget_expired = true;
                    let in_flight = shared.in_flight.load(Ordering::SeqCst);
                    tracing::warn!(name: "warden.budget.expired", in_flight = in_flight, "review budget expired; cancelling attempts in flight");
                    shared.sink.emit(Event::BudgetExpired { in_flight });
                    shared.cancel.cancel();
                    all.await
                }
                _ = shared.cancel.cancelled() => all.await,
            };
            (results, budget_expired)
        }
        .await;
        let now = Instant::now();
        let routes = shared
            .routes
            .iter()
            .map(|r| {
                let b = r.breaker.lock().expect("breaker lock");
                (
                    r.name.clone(),
                    RouteSummary {
                        breaker: b.state(),
                        opens: b.opens(),
                        time_open: b.time_open(now),
                        peak_in_flight: r.peak.load(Ordering::SeqCst),
                        max_concurrency: r.cap,
                    },
                )
            })
            .collect();
        EngineReport {
            units: results,
            elapsed: now - start,
            budget,
            budget_expired,
            interrupted: interrupt.is_cancelled(),
            routes,
            route_order: shared.routes.iter().map(|r| r.name.clone()).collect(),
        }
    }
}
