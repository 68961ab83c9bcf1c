//! The execution engine: nested budgets with cancellation, one retry owner, ordered
//! failover, per-route bulkheads and breakers (DESIGN.md sections 4 and 5).
//!
//! Time comes from tokio's clock, so tests run the engine deterministically on a paused
//! clock against in-process providers. The engine prints nothing; it emits [`Event`]s.

mod aggregate;
pub mod breaker;
pub mod events;
pub mod outcome;
pub mod retry;
mod unit;

pub use breaker::{Breaker, BreakerState};
pub use events::{AttemptReason, Event, Pass, ReviewInfo, RouteInfo, Sink, UnitInfo};
pub use outcome::{AttemptLog, EngineReport, Move, RouteSummary, UnitResult, UnitStatus};

use crate::config::Execution;
use crate::prompt::Prompt;
use crate::provider::Provider;
use aggregate::Aggregator;
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
    /// The two messages sent for this unit.
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
    /// The skill, or consolidated skills joined with `+`.
    pub skill: String,
    /// The file under review.
    pub path: String,
    /// The file's relevance score.
    pub priority: i32,
}

/// A route as the engine runs it.
pub struct EngineRoute {
    /// The route's client.
    pub provider: Arc<dyn Provider>,
    /// Its bulkhead size.
    pub max_concurrency: usize,
}

/// A route's state for the whole run: every pass of a review shares it, so a route forced
/// open by an auth failure stays open for the verification pass too.
pub(crate) struct RouteState {
    name: String,
    provider: Arc<dyn Provider>,
    permits: Arc<Semaphore>,
    cap: usize,
    breaker: Mutex<Breaker>,
    in_flight: AtomicUsize,
    peak: AtomicUsize,
}

/// What the units of one pass share.
pub(crate) struct Shared<'a> {
    routes: &'a [RouteState],
    exec: Execution,
    start: Instant,
    review_deadline: Instant,
    /// Cancelled at review-budget expiry or on interruption.
    cancel: CancellationToken,
    interrupted: CancellationToken,
    sink: Sink,
    /// Woken on every breaker transition, so waiting units re-choose their route.
    changed: &'a Notify,
    in_flight: AtomicUsize,
}

impl Shared<'_> {
    fn review_remaining(&self, now: Instant) -> Duration {
        self.review_deadline.saturating_duration_since(now)
    }
}

/// Runs units over routes under the budgets of DESIGN.md section 4, reporting through
/// events. One engine serves every pass of a review, with one route state.
pub struct Engine {
    routes: Vec<RouteState>,
    exec: Execution,
    sink: Sink,
    changed: Notify,
}

impl Engine {
    /// An engine over `routes` (failover order) that reports to `sink`.
    pub fn new(routes: Vec<EngineRoute>, exec: Execution, sink: Sink) -> Self {
        let now = Instant::now();
        Engine {
            routes: routes
                .into_iter()
                .map(|r| RouteState {
                    name: r.provider.route().to_string(),
                    provider: r.provider,
                    permits: Arc::new(Semaphore::new(r.max_concurrency.max(1))),
                    cap: r.max_concurrency.max(1),
                    breaker: Mutex::new(Breaker::new(exec.breaker, now)),
                    in_flight: AtomicUsize::new(0),
                    peak: AtomicUsize::new(0),
                })
                .collect(),
            exec,
            sink,
            changed: Notify::new(),
        }
    }

    /// Runs every unit within the review budget and returns what happened to each.
    /// Cancelling `interrupt` (a signal) cancels in-flight attempts at once, as budget
    /// expiry does; the report then still holds every finding received.
    pub async fn run(&self, units: Vec<UnitWork>, interrupt: CancellationToken) -> EngineReport {
        self.run_pass(Pass::Review, units, interrupt, self.exec.review_budget)
            .await
    }

    /// As [`Engine::run`], with `budget` in place of the review budget (a later pass of
    /// the same review gets what the earlier one left). Routes keep their state.
    pub async fn run_pass(
        &self,
        pass: Pass,
        units: Vec<UnitWork>,
        interrupt: CancellationToken,
        budget: Duration,
    ) -> EngineReport {
        let start = Instant::now();
        let aggregator = Arc::new(Aggregator::default());
        let shared = Shared {
            routes: &self.routes,
            exec: self.exec,
            start,
            review_deadline: start + budget,
            cancel: interrupt.child_token(),
            interrupted: interrupt.clone(),
            sink: self.sink.clone().tee(aggregator.sink()),
            changed: &self.changed,
            in_flight: AtomicUsize::new(0),
        };
        shared.sink.emit(Event::PassStarted {
            pass,
            units: units.len(),
            budget,
            routes: self
                .routes
                .iter()
                .map(|r| RouteInfo {
                    name: r.name.clone(),
                    max_concurrency: r.cap,
                })
                .collect(),
        });
        let work: Vec<(usize, Arc<UnitInfo>)> = units.into_iter().map(unit_info).collect();
        for (unit, info) in &work {
            shared.sink.emit(Event::UnitQueued {
                unit: *unit,
                info: info.clone(),
            });
        }
        let budget_expired = drive(&shared, &work).await;
        let now = Instant::now();
        let order: Vec<usize> = work.iter().map(|(i, _)| *i).collect();
        EngineReport {
            units: aggregator.finish(&order),
            elapsed: now - start,
            budget,
            budget_expired,
            interrupted: interrupt.is_cancelled(),
            routes: self.route_summaries(now),
            route_order: self.routes.iter().map(|r| r.name.clone()).collect(),
        }
    }

    fn route_summaries(&self, now: Instant) -> std::collections::BTreeMap<String, RouteSummary> {
        self.routes
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
            .collect()
    }
}

fn unit_info(u: UnitWork) -> (usize, Arc<UnitInfo>) {
    let info = UnitInfo {
        labels: u.labels,
        lines: u.lines,
        optional: u.optional,
        prompt: Arc::new(u.prompt),
    };
    (u.index, Arc::new(info))
}

/// Runs every unit to its end; at the review deadline cancels what is in flight. Returns
/// whether the budget expired.
async fn drive(shared: &Shared<'_>, work: &[(usize, Arc<UnitInfo>)]) -> bool {
    let all =
        futures_util::future::join_all(work.iter().map(|(i, info)| unit::run(shared, *i, info)));
    tokio::pin!(all);
    tokio::select! {
        biased;
        _ = &mut all => false,
        _ = tokio::time::sleep_until(shared.review_deadline) => {
            let in_flight = shared.in_flight.load(Ordering::SeqCst);
            shared.sink.emit(Event::BudgetExpired { in_flight });
            shared.cancel.cancel();
            all.await;
            true
        }
        _ = shared.cancel.cancelled() => {
            all.await;
            false
        }
    }
}
