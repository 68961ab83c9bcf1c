//! What the engine tells the world. It prints nothing and traces nothing itself: progress,
//! telemetry (spans, metrics, JSONL, OTLP) and the report aggregator are consumers of one
//! typed event stream (nextest's runner → reporters split). Every event carries enough
//! (unit, route, attempt record, budgets left) that no consumer reaches back into the
//! engine.

use super::breaker::BreakerState;
use super::outcome::UnitResult;
use crate::prompt::Prompt;
use crate::provider::AttemptRecord;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Why an attempt is being made.
#[derive(Debug, Clone, PartialEq)]
pub enum AttemptReason {
    /// The unit's first attempt.
    First,
    /// The same route again (no other route admitted calls).
    Retry {
        /// The failure that led to it.
        after: String,
    },
    /// The next route in order.
    Failover {
        /// The route that failed.
        from: String,
        /// The failure that led to it.
        after: String,
    },
}

impl AttemptReason {
    /// The kind as a word (`first`, `retry`, `failover`) and a detail for people.
    pub fn describe(&self) -> (&'static str, String) {
        match self {
            AttemptReason::First => ("first", String::new()),
            AttemptReason::Retry { after } => ("retry", after.clone()),
            AttemptReason::Failover { from, after } => {
                ("failover", format!("from {from}: {after}"))
            }
        }
    }
}

/// Which pass of a review the engine is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// The review units of the plan.
    Review,
    /// The optional verification of findings, in whatever budget the review left.
    Verification,
}

/// A route as consumers see it: its name and concurrency cap, in failover order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteInfo {
    /// The route's name from the config.
    pub name: String,
    /// Its bulkhead size.
    pub max_concurrency: usize,
    /// Whether new units may spill onto it (`spill`).
    pub spill: bool,
}

/// What a unit is, for consumers: its labels, lines and prompt (shared, not copied).
#[derive(Debug, Clone)]
pub struct UnitInfo {
    /// Skill, file and priority.
    pub labels: super::UnitLabels,
    /// The chunk's new-file lines.
    pub lines: (u32, u32),
    /// Whether the unit is optional work (shed first).
    pub optional: bool,
    /// The routes it may use, in its order; empty: every route.
    pub routes: Vec<usize>,
    /// The prompt; telemetry records it only when the user opts in.
    pub prompt: Arc<Prompt>,
    /// Its tool loop (docs/design.md §14), when its skill reads the repository.
    pub tools: Option<crate::tools::LoopPlan>,
    /// How to split it when its prompt does not fit a window (None: it cannot be).
    pub split: Option<crate::plan::split::Splittable>,
}

/// The review as a whole, for the consumers that describe it (the review span).
#[derive(Debug, Clone)]
pub struct ReviewInfo {
    /// What was compared, for people.
    pub target: String,
    /// Units in the plan.
    pub units: usize,
    /// The budgets the review runs under.
    pub review_budget: Duration,
    /// One unit's budget.
    pub hunk_budget: Duration,
    /// One request's deadline.
    pub request_timeout: Duration,
}

/// One thing that happened. Emitted in the order it happened, from the engine's tasks.
// `AttemptFinished` carries the whole record (usage with cache and reasoning tokens since
// issue 28): one event per attempt, never per token, so its size is off every hot path.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Event {
    /// The review starts (emitted by `review::run`, before the first pass).
    ReviewStarted(Arc<ReviewInfo>),
    /// A pass of the engine starts with these units, budget and routes.
    PassStarted {
        /// Which pass.
        pass: Pass,
        /// How many units it runs.
        units: usize,
        /// The time it may take.
        budget: Duration,
        /// The routes, in failover order.
        routes: Vec<RouteInfo>,
    },
    /// A unit joins the pass (it has not started: its hunk budget is not running).
    UnitQueued {
        /// The unit's index.
        unit: usize,
        /// What it is.
        info: Arc<UnitInfo>,
    },
    /// A route the unit preferred was passed over because its breaker does not admit calls.
    RouteSkipped {
        /// The unit's index.
        unit: usize,
        /// The route passed over.
        route: String,
        /// Its breaker's state.
        breaker: BreakerState,
    },
    /// An attempt (one request) starts.
    AttemptStarted {
        /// The unit's index.
        unit: usize,
        /// 1-based.
        attempt: u32,
        /// The route it goes to.
        route: String,
        /// The route's provider kind (`openai`, `anthropic`, `sim`, …).
        provider: &'static str,
        /// The model asked for.
        model: String,
        /// Why this attempt is made.
        reason: AttemptReason,
        /// The deadline given to this attempt, and the budgets left when it started.
        deadline: Duration,
        /// What was left of the unit's hunk budget.
        hunk_remaining: Duration,
        /// What was left of the review budget.
        review_remaining: Duration,
        /// The route's breaker state when the attempt was admitted.
        breaker: BreakerState,
        /// Whether the attempt is a half-open probe.
        probe: bool,
    },
    /// An attempt ended; the record says how.
    AttemptFinished {
        /// The unit's index.
        unit: usize,
        /// 1-based.
        attempt: u32,
        /// Everything measured about it.
        record: AttemptRecord,
    },
    /// The unit will retry the same route (no other route admits calls).
    Retry {
        /// The unit's index.
        unit: usize,
        /// The route retried.
        route: String,
        /// The failure that led to it.
        reason: String,
        /// How long the engine waits first (a Retry-After that fits the budget).
        wait: Duration,
    },
    /// The unit moves to the next route after a failure.
    Failover {
        /// The unit's index.
        unit: usize,
        /// The route that failed.
        from: String,
        /// The route it goes to.
        to: String,
        /// The failure.
        reason: String,
    },
    /// A route's breaker changed state.
    Breaker {
        /// The route.
        route: String,
        /// The state before.
        from: BreakerState,
        /// The state after.
        to: BreakerState,
        /// Why, for people.
        reason: String,
    },
    /// An attempt was answered with back-pressure (docs/design.md section 13: 429 rate limit,
    /// 529, 503 with Retry-After): the unit goes back to the head of the queue without
    /// using an attempt; a Retry-After pauses the route's new attempts.
    BackPressure {
        /// The unit's index.
        unit: usize,
        /// The route that answered.
        route: String,
        /// Its index (failover order).
        route_index: usize,
        /// The unit's answers of back-pressure so far (it ends `unavailable` at 8).
        bounce: u32,
        /// The answer's Retry-After, if any.
        retry_after: Option<Duration>,
        /// When the route's pause ends, from the pass's start (None: not paused).
        paused_until: Option<Duration>,
        /// When it happened, from the pass's start.
        at: Duration,
    },
    /// A route's new attempts are paused (section 13): by a back-pressure Retry-After, or
    /// because its rate-limit headers' remaining requests or tokens cannot cover another
    /// attempt before their reset. Emitted when a pause starts or grows.
    RoutePaused {
        /// The route.
        route: String,
        /// Its index (failover order).
        route_index: usize,
        /// Until when, from the pass's start.
        until: Duration,
        /// Why.
        reason: super::pacing::PauseReason,
        /// When, from the pass's start.
        at: Duration,
    },
    /// A route's effective concurrency limit changed (section 13: it adapts under the
    /// route's `maxConcurrency`, its ceiling).
    LimitChanged {
        /// The route.
        route: String,
        /// Its index (failover order).
        route_index: usize,
        /// The new effective limit (permits that may be in flight).
        limit: usize,
        /// The ceiling (`maxConcurrency`).
        ceiling: usize,
        /// Why it changed.
        reason: super::limit::LimitReason,
        /// When, from the pass's start.
        at: Duration,
    },
    /// A unit's loop starts running the tool calls of an answered turn (docs/design.md §15:
    /// progress says "running tools" until its next attempt starts or it ends).
    ToolsRunning {
        /// The unit's index.
        unit: usize,
        /// The turn whose answer made the calls (1-based).
        turn: u32,
        /// Calls in that answer.
        calls: usize,
    },
    /// A tool call of a unit's loop was answered (docs/design.md §14).
    ToolCalled {
        /// The unit's index.
        unit: usize,
        /// The turn whose answer made the call (1-based).
        turn: u32,
        /// The tool called (as the model named it).
        tool: String,
        /// Bytes of the result the model reads.
        bytes: u64,
        /// The call was refused or failed (the model is told).
        error: bool,
        /// An identical earlier call's result, answered from memory.
        repeat: bool,
        /// How long the tool took.
        duration: Duration,
    },
    /// A unit ended with exactly one status; its result travels with the event.
    UnitFinished {
        /// The unit's index.
        unit: usize,
        /// Status, route, attempts and findings.
        result: Arc<UnitResult>,
    },
    /// Something the user should act on, said once per run (e.g. a gateway that may
    /// retry behind warden's back).
    Warning {
        /// The route it concerns.
        route: String,
        /// What to do, for people.
        message: String,
    },
    /// The review budget ran out; `in_flight` attempts were cancelled.
    BudgetExpired {
        /// Attempts in flight at that moment.
        in_flight: usize,
    },
    /// About once a second while a review runs, so displays can redraw clocks.
    Tick {
        /// Time since the review started.
        elapsed: Duration,
    },
    /// The review ended with this outcome (emitted by `review::run` once the report exists).
    ReviewFinished {
        /// The review outcome.
        outcome: super::outcome::ReviewOutcome,
        /// Units reviewed.
        reviewed: usize,
    },
}

/// An event with the instant it was emitted: stamped once, where the engine (or
/// `review::run`) emits it, and lent to every consumer. Consumers read the event's time
/// from here rather than the clock on receipt, so every view of the run agrees on when a
/// thing happened, and under `warden simulate` it is the paused tokio clock's instant.
#[derive(Debug, Clone)]
pub struct Stamped {
    /// When it was emitted (tokio's clock: the paused one under `warden simulate`).
    pub at: Instant,
    /// What happened.
    pub event: Event,
}

/// Where events go. Cheap to clone; called from the engine's tasks, so a consumer must
/// not block. Consumers borrow each stamped event: a tee hands the same one to both sides.
#[derive(Clone)]
pub struct Sink(Arc<dyn Fn(&Stamped) + Send + Sync>);

impl Sink {
    /// A sink that calls `f` with every stamped event.
    pub fn new(f: impl Fn(&Stamped) + Send + Sync + 'static) -> Self {
        Sink(Arc::new(f))
    }

    /// Drops every event.
    pub fn none() -> Self {
        Sink::new(|_| {})
    }

    /// Collects events into a shared list (for tests and reports that want them all);
    /// the one consumer that keeps its own copy of each event.
    pub fn collect() -> (Self, Arc<Mutex<Vec<Event>>>) {
        let list = Arc::new(Mutex::new(Vec::new()));
        let l = list.clone();
        (
            Sink::new(move |s| l.lock().expect("event list").push(s.event.clone())),
            list,
        )
    }

    /// Sends to both sinks (`other` first), lending each the same stamped event.
    pub fn tee(self, other: Sink) -> Self {
        Sink::new(move |s| {
            (other.0)(s);
            (self.0)(s);
        })
    }

    /// Stamps an event with the current instant and sends it.
    pub fn emit(&self, event: Event) {
        (self.0)(&Stamped {
            at: Instant::now(),
            event,
        })
    }
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sink")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every consumer of a tee sees the one stamped event (same address, same instant):
    /// lent, not cloned per consumer, and stamped once.
    #[test]
    fn tee_lends_one_stamped_event_to_every_consumer() {
        let seen: Arc<Mutex<Vec<(usize, Instant)>>> = Arc::default();
        let (a, b) = (seen.clone(), seen.clone());
        let sink = Sink::new(move |s| a.lock().unwrap().push((s as *const _ as usize, s.at))).tee(
            Sink::new(move |s| b.lock().unwrap().push((s as *const _ as usize, s.at))),
        );
        sink.emit(Event::BudgetExpired { in_flight: 1 });
        sink.emit(Event::BudgetExpired { in_flight: 2 });
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 4);
        assert_eq!(seen[0], seen[1], "both consumers borrow the first event");
        assert_eq!(seen[2], seen[3], "both consumers borrow the second event");
        assert!(seen[2].1 >= seen[0].1);
    }

    /// Under a paused clock (`warden simulate`) the stamp is the paused clock's instant,
    /// whenever the consumer happens to look at a clock.
    #[tokio::test(start_paused = true)]
    async fn the_stamp_is_the_paused_clock() {
        let start = Instant::now();
        let stamps: Arc<Mutex<Vec<Instant>>> = Arc::default();
        let s2 = stamps.clone();
        let sink = Sink::new(move |s| s2.lock().unwrap().push(s.at));
        tokio::time::advance(Duration::from_secs(7)).await;
        sink.emit(Event::Tick {
            elapsed: Duration::from_secs(7),
        });
        let (collect, events) = Sink::collect();
        collect.emit(Event::BudgetExpired { in_flight: 3 });
        assert_eq!(
            *stamps.lock().unwrap(),
            vec![start + Duration::from_secs(7)]
        );
        assert!(matches!(
            events.lock().unwrap()[..],
            [Event::BudgetExpired { in_flight: 3 }]
        ));
    }
}
