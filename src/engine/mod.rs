//! The execution engine: nested budgets with cancellation, one retry owner, ordered
//! failover, per-route bulkheads and breakers (docs/design.md sections 4 and 5).
//!
//! Time comes from tokio's clock, so tests run the engine deterministically on a paused
//! clock against in-process providers. The engine prints nothing; it emits [`Event`]s.

mod admission;
mod aggregate;
mod attempt;
pub mod breaker;
pub mod breakers;
pub mod bulkhead;
pub mod clock;
mod context;
pub mod cost;
mod cut;
mod dead;
mod depth;
mod ends;
pub mod events;
mod idle;
pub mod limit;
pub mod outcome;
pub mod pacing;
mod resend;
pub mod retry;
pub mod route_picker;
pub mod shedder;
mod turns;
mod unit;
mod unit_state;
mod waits;
pub mod windows;

pub use breaker::{Breaker, BreakerState};
pub use breakers::{Breakers, Hold, LocalBreakers};
pub use bulkhead::{Bulkhead, LocalBulkhead, Permit};
pub use events::{AttemptReason, Event, Pass, ReviewInfo, RouteInfo, Sink, Stamped, UnitInfo};
pub use outcome::{
    AttemptLog, CacheLevel, CallLog, EngineReport, FromCache, Move, RouteSummary, ToolLoop,
    UnitPart, UnitResult, UnitStatus,
};
pub use retry::{RetryPolicy, Stop};
pub use route_picker::{Ordered, RouteOrder, RoutePicker};
pub use shedder::Shedder;
pub use windows::{SharedTake, SharedWindows};

use crate::config::{Execution, Prices, Route as ConfigRoute};
use crate::prompt::Prompt;
use crate::provider::{Limits, Provider};
use aggregate::Aggregator;
use clock::deadline_after;
use cost::CostBudget;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Notify;
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
    /// The routes (indices, failover order) it may use, in its order; empty: every route.
    pub routes: Vec<usize>,
    /// Its tool loop (docs/design.md §14); None: one request (also when the engine has no
    /// [`Engine::with_toolbox`]).
    pub tools: Option<crate::tools::LoopPlan>,
    /// How to split the unit when its prompt does not fit a model's context window
    /// (docs/design.md §14); None: it is never split (it fails over, or ends saying why).
    pub split: Option<crate::plan::split::Splittable>,
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
    /// Under spillover routing, whether new units may take its free permits.
    pub spill: bool,
    /// Its prices, for attempts whose provider reports no cost.
    pub prices: Option<Prices>,
    /// The answer's token cap (the output estimate before any answer is seen).
    pub max_tokens: u32,
    /// The most a cut answer's one retry may ask for (section 14: twice the cap, up to
    /// this).
    pub max_tokens_ceiling: u32,
    /// The model's context window in tokens (`contextWindow`), when configured.
    pub context_window: Option<u32>,
}

impl EngineRoute {
    /// A route with `max_concurrency` permits that takes spillover and has no prices.
    pub fn new(provider: Arc<dyn Provider>, max_concurrency: usize) -> Self {
        EngineRoute {
            provider,
            max_concurrency,
            spill: true,
            prices: None,
            max_tokens: 4096,
            max_tokens_ceiling: 8192,
            context_window: None,
        }
    }

    /// A route with the settings of a configured one (cap, spill, prices, maxTokens).
    pub fn configured(provider: Arc<dyn Provider>, route: &ConfigRoute) -> Self {
        EngineRoute {
            provider,
            max_concurrency: route.max_concurrency,
            spill: route.spill,
            prices: route.prices,
            max_tokens: route.max_tokens,
            max_tokens_ceiling: route.max_tokens_ceiling(),
            context_window: route.context_window,
        }
    }
}

/// Answers units before dispatch (a result cache, for one): a unit it answers ends with
/// that result and no request. Results to remember arrive as `UnitFinished` events.
pub trait Answerer: Send + Sync {
    /// The unit's result, if it can be given without a model call.
    fn answer(&self, unit: usize, info: &UnitInfo) -> Option<UnitResult>;
}

/// A route as the engine runs it: its name and client. Its permits, breaker and load live
/// in the engine's [`Bulkhead`] and [`Breakers`], by route index.
struct Route {
    name: String,
    provider: Arc<dyn Provider>,
    /// Whether the gateway warning was given for this route.
    gateway_warned: std::sync::atomic::AtomicBool,
    spill: bool,
    prices: Option<Prices>,
    max_tokens: u32,
    max_tokens_ceiling: u32,
    /// Its context window in tokens: configured, or the smallest a provider's
    /// context-length 400 named this run (0: unknown). See `context.rs`.
    window: std::sync::atomic::AtomicU64,
    /// What its attempts used so far, for cost estimates.
    observed: std::sync::Mutex<cost::Observed>,
    /// Its attempts in flight in this process (the load a latency sample was taken at).
    in_flight: AtomicUsize,
    /// Its effective limit under `maxConcurrency` (section 13), applied to the bulkhead.
    limit: std::sync::Mutex<limit::AdaptiveLimit>,
}

/// What the units of one pass share.
pub(crate) struct Shared<'a> {
    engine: &'a Engine,
    exec: Execution,
    retry: RetryPolicy,
    shedder: Shedder,
    start: Instant,
    review_deadline: Instant,
    /// Cancelled at review-budget expiry or on interruption.
    cancel: CancellationToken,
    interrupted: CancellationToken,
    sink: Sink,
    /// Attempts in flight in this pass.
    in_flight: AtomicUsize,
    /// The depth rule of tool loops: each unit's share of the slot time left.
    depth: depth::Depth,
}

impl Shared<'_> {
    fn review_remaining(&self, now: Instant) -> Duration {
        self.review_deadline.saturating_duration_since(now)
    }

    /// The review budget is spent (or the run interrupted): nothing new may start.
    fn budget_spent(&self, now: Instant) -> bool {
        self.cancel.is_cancelled() || now >= self.review_deadline
    }

    /// Rule 1: an attempt's clocks, each at most its deadline.
    fn limits(&self, deadline: Duration) -> Limits {
        Limits {
            connect: self.exec.connect_timeout.min(deadline),
            first_token: self.exec.first_token_timeout.min(deadline),
            idle: self.exec.idle_timeout.min(deadline),
            total: deadline,
        }
    }
}

/// Runs units over routes under the budgets of docs/design.md section 4, reporting through
/// events. One engine serves every pass of a review, with one route state: the policy
/// pieces ([`RoutePicker`], [`Bulkhead`], [`Breakers`], [`RetryPolicy`], [`Shedder`])
/// each hold one rule, and `unit.rs` drives them.
pub struct Engine {
    routes: Vec<Route>,
    /// Every route index in failover order (the routes of a unit with no restriction).
    all_routes: Vec<usize>,
    picker: RoutePicker,
    bulkhead: Box<dyn Bulkhead>,
    breakers: Box<dyn Breakers>,
    answerer: Option<Arc<dyn Answerer>>,
    /// The review's cost budget (every pass spends from it).
    cost: CostBudget,
    exec: Execution,
    sink: Sink,
    /// Woken on every breaker transition, so waiting units re-choose their route.
    changed: Notify,
    /// Routes paused by a back-pressure Retry-After.
    pacing: pacing::Pacing,
    /// Rate-limit windows shared with other processes (fleet mode), over `pacing`.
    windows: Option<Box<dyn SharedWindows>>,
    /// What a skill's tool loop calls (None: every unit is one request).
    toolbox: Option<Arc<crate::tools::Toolbox>>,
    /// Routes that cannot be connected to, and those dead for the run (§14).
    dead: dead::DeadRoutes,
}

impl Engine {
    /// An engine over `routes` (failover order) that reports to `sink`, with in-process
    /// bulkheads and breakers and the ordered failover rule.
    pub fn new(routes: Vec<EngineRoute>, exec: Execution, sink: Sink) -> Self {
        let bulkhead = LocalBulkhead::new(routes.iter().map(|r| r.max_concurrency));
        let spill: Vec<bool> = routes.iter().map(|r| r.spill).collect();
        let breakers =
            LocalBreakers::for_routing(routes.len(), exec.breaker, Instant::now(), exec.routing);
        let pacing = pacing::Pacing::new(routes.len());
        let dead = dead::DeadRoutes::new(routes.len());
        let engine = Engine {
            all_routes: (0..routes.len()).collect(),
            routes: routes
                .into_iter()
                .map(|r| Route {
                    name: r.provider.route().to_string(),
                    provider: r.provider,
                    gateway_warned: Default::default(),
                    spill: r.spill,
                    prices: r.prices,
                    max_tokens: r.max_tokens,
                    max_tokens_ceiling: r.max_tokens_ceiling,
                    window: r.context_window.map_or(0, u64::from).into(),
                    observed: Default::default(),
                    in_flight: AtomicUsize::new(0),
                    limit: std::sync::Mutex::new(limit::AdaptiveLimit::new(r.max_concurrency)),
                })
                .collect(),
            picker: RoutePicker::new(Ordered).with_spillover(spill, exec.routing),
            cost: CostBudget::new(exec.cost_budget),
            bulkhead: Box::new(bulkhead),
            breakers: Box::new(breakers),
            answerer: None,
            exec,
            sink,
            changed: Notify::new(),
            pacing,
            windows: None,
            toolbox: None,
            dead,
        };
        engine.apply_limits();
        engine
    }

    /// Gives the bulkhead every route's effective limit.
    fn apply_limits(&self) {
        for (i, r) in self.routes.iter().enumerate() {
            let limit = r.limit.lock().expect("limit lock").current();
            self.bulkhead.set_limit(i, limit);
        }
    }

    /// Replaces the failover ordering rule.
    pub fn with_route_order(mut self, order: impl RouteOrder + 'static) -> Self {
        let spill = self.routes.iter().map(|r| r.spill).collect();
        self.picker = RoutePicker::new(order).with_spillover(spill, self.exec.routing);
        self
    }

    /// Replaces the permit source (one per route, by index).
    pub fn with_bulkhead(mut self, bulkhead: impl Bulkhead + 'static) -> Self {
        self.bulkhead = Box::new(bulkhead);
        self.apply_limits();
        self
    }

    /// Replaces the breaker store (one per route, by index).
    pub fn with_breakers(mut self, breakers: impl Breakers + 'static) -> Self {
        self.breakers = Box::new(breakers);
        self
    }

    /// Keeps the routes' rate-limit windows in `windows` too (shared with other
    /// processes), the local pacing staying the floor.
    pub fn with_shared_windows(mut self, windows: impl SharedWindows + 'static) -> Self {
        self.windows = Some(Box::new(windows));
        self
    }

    /// Answers the tool calls of units that loop (docs/design.md §14) with `toolbox`.
    pub fn with_toolbox(mut self, toolbox: Arc<crate::tools::Toolbox>) -> Self {
        self.toolbox = Some(toolbox);
        self
    }

    /// Lets `answerer` answer units before they are dispatched.
    pub fn with_answerer(mut self, answerer: Arc<dyn Answerer>) -> Self {
        self.answerer = Some(answerer);
        self
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
        let idle = Arc::new(idle::IdleMeter::new(start));
        // The budget the clock can represent (a deadline saturates at the far future).
        let hunk_budget = self.exec.hunk_budget.min(clock::FAR_FUTURE);
        let review_deadline = deadline_after(start, budget);
        let slots = (0..self.routes.len()).map(|i| self.bulkhead.cap(i)).sum();
        let shared = Shared {
            engine: self,
            exec: self.exec,
            retry: RetryPolicy {
                max_attempts: self.exec.max_attempts,
                hunk_budget,
            },
            shedder: Shedder { hunk_budget },
            start,
            review_deadline,
            depth: depth::Depth::new(
                slots,
                units.len(),
                review_deadline,
                (self.exec.request_timeout, hunk_budget),
            ),
            cancel: interrupt.child_token(),
            interrupted: interrupt.clone(),
            sink: self.sink.clone().tee(aggregator.sink()).tee(idle.sink()),
            in_flight: AtomicUsize::new(0),
        };
        shared.sink.emit(Event::PassStarted {
            pass,
            units: units.len(),
            budget,
            routes: self.route_infos(),
        });
        let looping = self.toolbox.is_some();
        let work: Vec<(usize, Arc<UnitInfo>)> =
            units.into_iter().map(|u| unit_info(u, looping)).collect();
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
            elapsed: now.saturating_duration_since(start),
            budget,
            budget_expired,
            interrupted: interrupt.is_cancelled(),
            routes: self.route_summaries(now),
            route_order: self.routes.iter().map(|r| r.name.clone()).collect(),
            routing: self.exec.routing,
            idle_slot_time: idle.finish(now),
            cost_usd: self.cost.spent(),
        }
    }

    fn route_infos(&self) -> Vec<RouteInfo> {
        self.routes
            .iter()
            .enumerate()
            .map(|(i, r)| RouteInfo {
                name: r.name.clone(),
                max_concurrency: self.bulkhead.cap(i),
                spill: r.spill,
            })
            .collect()
    }

    fn route_summaries(&self, now: Instant) -> std::collections::BTreeMap<String, RouteSummary> {
        self.routes
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let b = self.breakers.figures(i, now);
                (
                    r.name.clone(),
                    RouteSummary {
                        breaker: b.state,
                        opens: b.opens,
                        time_open: b.time_open,
                        peak_in_flight: self.bulkhead.peak(i),
                        max_concurrency: self.bulkhead.cap(i),
                    },
                )
            })
            .collect()
    }
}

fn unit_info(u: UnitWork, looping: bool) -> (usize, Arc<UnitInfo>) {
    let info = UnitInfo {
        routes: u.routes,
        labels: u.labels,
        lines: u.lines,
        optional: u.optional,
        prompt: Arc::new(u.prompt),
        tools: u.tools.filter(|_| looping),
        split: u.split,
    };
    (u.index, Arc::new(info))
}

/// Runs every unit to its end; at the review deadline cancels what is in flight. Returns
/// whether the budget expired.
async fn drive(shared: &Shared<'_>, work: &[(usize, Arc<UnitInfo>)]) -> bool {
    let all =
        futures_util::future::join_all(work.iter().map(|(i, info)| unit::run(shared, *i, info)));
    tokio::pin!(all);
    // The deadline is polled first: an attempt whose own timer fires at the same instant
    // is cut by the review budget (cancelled), not counted as the route's timeout.
    tokio::select! {
        biased;
        _ = tokio::time::sleep_until(shared.review_deadline) => {
            let in_flight = shared.in_flight.load(Ordering::SeqCst);
            shared.sink.emit(Event::BudgetExpired { in_flight });
            shared.cancel.cancel();
            all.await;
            true
        }
        // Units whose attempts were cut by their own clocks at the review deadline (each
        // attempt's deadline is capped by it) ended because the budget ran out, too.
        _ = &mut all => {
            let expired = Instant::now() >= shared.review_deadline;
            if expired {
                shared.sink.emit(Event::BudgetExpired { in_flight: 0 });
            }
            expired
        }
        _ = shared.cancel.cancelled() => {
            all.await;
            false
        }
    }
}
