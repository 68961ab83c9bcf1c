//! One unit's life, read against DESIGN.md section 4. The engine is the one retry owner:
//! it chooses a route that admits calls ([`RoutePicker`](super::RoutePicker)), takes its
//! permit ([`Bulkhead`](super::Bulkhead)), makes one attempt under nested deadlines, and
//! after a failure asks the [`RetryPolicy`](super::RetryPolicy) whether another attempt
//! follows. Every unit ends with exactly one status (section 5).

use super::breaker::{Admission, BreakerState, Transition};
use super::breakers::Hold;
use super::bulkhead::{AnyWaited, Permit, Wake, wait_for_any_permit};
use super::clock::deadline_after;
use super::cost::{self, Refusal, Reservation};
use super::events::{AttemptReason, Event};
use super::outcome::{AttemptLog, Move, UnitResult, UnitStatus};
use super::retry::Stop;
use super::route_picker::{OrderInput, Pick};
use super::{Shared, UnitInfo};
use crate::findings::Extracted;
use crate::provider::{AttemptRecord, AttemptRequest, Outcome};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::time::{Instant, sleep_until};

/// Runs one unit to its end; its result goes out as `UnitFinished`.
pub(super) async fn run(sh: &Shared<'_>, index: usize, work: &UnitInfo) {
    let mut u = UnitRun::new(index, work);
    // A unit answered before dispatch (a result cache) makes no request.
    if let Some(result) = sh
        .engine
        .answerer
        .as_ref()
        .and_then(|a| a.answer(index, work))
    {
        return emit_finished(
            sh,
            UnitResult {
                unit: index,
                ..result
            },
        );
    }
    loop {
        // Rules 6–9: a route that admits calls, and one of its permits, within the budgets.
        let slot = match acquire(sh, &mut u).await {
            Ok(slot) => slot,
            Err(stop) => return u.finish(sh, stop),
        };
        // Rule 2: the hunk budget starts when the first attempt starts.
        let now = Instant::now();
        let hunk_end = *u
            .hunk_end
            .get_or_insert_with(|| deadline_after(now, sh.exec.hunk_budget));
        // Rules 1 and 3: one request under nested deadlines, cancelled with the review.
        let route = slot.route;
        let (record, extracted) = attempt(sh, &mut u, slot, now, hunk_end).await;
        if record.outcome == Outcome::Ok {
            return u.reviewed(sh, &record.route, extracted.unwrap_or_default());
        }
        // Section 5: cut by the review budget or a signal, the unit is cancelled.
        if record.outcome == Outcome::Cancelled || sh.budget_spent(Instant::now()) {
            return u.finish(sh, cancelled(sh));
        }
        // Rules 4–5: only the engine decides whether another attempt follows.
        let left = hunk_end.saturating_duration_since(Instant::now());
        let made = u.result.attempts.len() as u32;
        if let Err(stop) = sh.retry.further_attempt(record.outcome, made, left) {
            let reason = format!(
                "{}; last attempt on {}: {}",
                stop.reason, record.route, record.reason
            );
            return u.finish(sh, Stop::new(stop.status, reason));
        }
        u.last = Some(LastFailure {
            route,
            reason: format!("{}: {}", record.outcome, record.reason),
            retry_after: record.retry_after,
        });
    }
}

/// The last failed attempt, which shapes the next one.
struct LastFailure {
    route: usize,
    reason: String,
    retry_after: Option<Duration>,
}

/// A route chosen for the next attempt, with its permit held.
struct Slot {
    route: usize,
    permit: Permit,
    /// What the breakers reserved for it (given back with its outcome).
    hold: Hold,
    breaker: BreakerState,
    reason: AttemptReason,
    /// The attempt's share of the cost budget, settled with its real cost.
    reservation: Reservation,
}

/// A unit in flight: its result so far, its hunk deadline once started, its last failure.
struct UnitRun<'w> {
    work: &'w UnitInfo,
    result: UnitResult,
    hunk_end: Option<Instant>,
    last: Option<LastFailure>,
    /// It waited for an open breaker to half-open (a first attempt may).
    waited_for_open_routes: bool,
}

impl<'w> UnitRun<'w> {
    fn new(index: usize, work: &'w UnitInfo) -> Self {
        UnitRun {
            work,
            result: UnitResult {
                unit: index,
                status: UnitStatus::Skipped,
                route: None,
                reason: String::new(),
                attempts: Vec::new(),
                routes_tried: Vec::new(),
                moves: Vec::new(),
                findings: Vec::new(),
                dropped_findings: 0,
                from_cache: None,
            },
            hunk_end: None,
            last: None,
            waited_for_open_routes: false,
        }
    }

    fn index(&self) -> usize {
        self.result.unit
    }

    /// Waits end at the hunk deadline once the unit started, else at the review deadline.
    fn wait_until(&self, review_deadline: Instant) -> Instant {
        self.hunk_end
            .map_or(review_deadline, |h| h.min(review_deadline))
    }

    /// Why the unit stops when the review budget ran out or the run was interrupted.
    fn stop_on_cancel(&self, sh: &Shared) -> Stop {
        if self.hunk_end.is_some() {
            cancelled(sh)
        } else if self.waited_for_open_routes {
            all_open()
        } else {
            not_started(sh)
        }
    }

    /// Records that an attempt goes to `route` (and the move, if it changed).
    fn note_route(&mut self, route: &str) {
        let r = &mut self.result;
        if let Some(prev) = r.routes_tried.last()
            && prev != route
        {
            r.moves.push(Move {
                from: prev.clone(),
                to: route.to_string(),
                reason: self
                    .last
                    .as_ref()
                    .map(|l| l.reason.clone())
                    .unwrap_or_default(),
            });
        }
        r.routes_tried.push(route.to_string());
    }

    fn reviewed(mut self, sh: &Shared, route: &str, ex: Extracted) {
        self.result.findings = ex.findings;
        self.result.dropped_findings = ex.dropped_out_of_range + ex.dropped_invalid;
        self.result.route = Some(route.to_string());
        self.finish(
            sh,
            Stop::new(UnitStatus::Reviewed, format!("reviewed by {route}")),
        );
    }

    fn finish(mut self, sh: &Shared, stop: Stop) {
        self.result.status = stop.status;
        self.result.reason = stop.reason;
        emit_finished(sh, self.result);
    }
}

fn emit_finished(sh: &Shared, result: UnitResult) {
    sh.sink.emit(Event::UnitFinished {
        unit: result.unit,
        result: Arc::new(result),
    });
}

/// One attempt on the slot's route: events, the request under its deadline, the
/// breaker's verdict. Returns the record and, when it is ok, the findings.
async fn attempt(
    sh: &Shared<'_>,
    u: &mut UnitRun<'_>,
    slot: Slot,
    now: Instant,
    hunk_end: Instant,
) -> (AttemptRecord, Option<Extracted>) {
    let route = &sh.engine.routes[slot.route];
    let hunk_remaining = hunk_end.saturating_duration_since(now);
    let review_remaining = sh.review_remaining(now);
    let deadline = sh
        .exec
        .request_timeout
        .min(hunk_remaining)
        .min(review_remaining);
    let number = u.result.attempts.len() as u32 + 1;
    u.note_route(&route.name);
    sh.sink.emit(Event::AttemptStarted {
        unit: u.index(),
        attempt: number,
        route: route.name.clone(),
        provider: route.provider.kind(),
        model: route.provider.model().to_string(),
        reason: slot.reason,
        deadline,
        hunk_remaining,
        review_remaining,
        breaker: slot.breaker,
        probe: slot.hold.probe(),
    });
    let req = AttemptRequest {
        prompt: (*u.work.prompt).clone(),
        lines: u.work.lines,
        limits: sh.limits(deadline),
    };
    sh.in_flight.fetch_add(1, Ordering::SeqCst);
    let result = tokio::select! {
        biased;
        _ = sh.cancel.cancelled() => None,
        a = route.provider.attempt(&req) => Some(a),
    };
    // Dropping the attempt's future above has already closed its connection.
    sh.in_flight.fetch_sub(1, Ordering::SeqCst);
    drop(slot.permit);
    let finished = Instant::now();
    let ran = finished.saturating_duration_since(now);
    let (mut record, extracted) = match result {
        Some(a) => (a.record, a.extracted),
        None => (cancelled_record(sh, slot.route, &req, ran), None),
    };
    if record.outcome == Outcome::Timeout && sh.budget_spent(finished) {
        // Its deadline was the review's: the review budget cut it, not the route.
        record.outcome = Outcome::Cancelled;
        record.stage = None;
        record.reason = "cancelled: the review budget ran out during the attempt".into();
    }
    let verdict = sh
        .engine
        .breakers
        .record_async(slot.route, finished, record.outcome, slot.hold)
        .await;
    if let Some(t) = verdict {
        announce(sh, &route.name, t);
    }
    sh.sink.emit(Event::AttemptFinished {
        unit: u.index(),
        attempt: number,
        record: record.clone(),
    });
    warn_of_gateway(sh, route, &record);
    let cost_usd = account_cost(sh, route, &req, &record, slot.reservation);
    u.result.attempts.push(AttemptLog {
        number,
        started: now.saturating_duration_since(sh.start),
        probe: slot.hold.probe(),
        cost_usd,
        record: record.clone(),
    });
    (record, extracted)
}

/// Chooses a route that admits calls and takes one of its permits; waits count against
/// the review budget (and the hunk budget once the unit has started).
async fn acquire(sh: &Shared<'_>, u: &mut UnitRun<'_>) -> Result<Slot, Stop> {
    let until = u.wait_until(sh.review_deadline);
    let mut announced = false;
    loop {
        // Enabled before choosing, so a breaker change during the choice is not missed.
        let changed = sh.engine.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        if sh.cancel.is_cancelled() {
            return Err(u.stop_on_cancel(sh));
        }
        let allowed = if u.work.routes.is_empty() {
            &sh.engine.all_routes
        } else {
            &u.work.routes
        };
        let input = OrderInput {
            allowed,
            last_failed: u.last.as_ref().map(|l| l.route),
        };
        let now = Instant::now();
        let (route, preferred_reopen, spill) =
            match sh.engine.picker.pick(&*sh.engine.breakers, input, now) {
                Pick::Route {
                    route,
                    passed_over,
                    preferred_reopen,
                    spill,
                } => {
                    passed_over_events(sh, u.index(), &passed_over);
                    (route, preferred_reopen, spill)
                }
                Pick::NoneAdmits { reopen } => {
                    wait_for_reopen(sh, u, reopen, until, changed).await?;
                    continue;
                }
            };
        let Some(reason) = reason_for(sh, u, route, until, &mut announced).await? else {
            continue;
        };
        let wake = Wake {
            changed,
            preferred_reopen,
            until,
            cancel: &sh.cancel,
        };
        // Ordered: this route's permit. Spillover: the first free one of this route and
        // the later routes that take spillover, else whichever frees first.
        let candidates: Vec<usize> = std::iter::once(route).chain(spill).collect();
        let (route, permit) = match wait_for_any_permit(
            &*sh.engine.bulkhead,
            &candidates,
            u.hunk_end.is_none(),
            wake,
        )
        .await
        {
            AnyWaited::Permit(r, p) => (r, p),
            AnyWaited::Rechoose => continue,
            AnyWaited::Expired if sh.budget_spent(Instant::now()) => {
                return Err(u.stop_on_cancel(sh));
            }
            AnyWaited::Expired if u.hunk_end.is_some() => {
                return Err(Stop::new(
                    UnitStatus::TimedOut,
                    "the hunk budget ran out waiting for a route's concurrency permit",
                ));
            }
            AnyWaited::Expired => return Err(not_started(sh)),
        };
        match admit(sh, u, route, permit, reason).await? {
            Admitted::Slot(slot) => return Ok(slot),
            Admitted::Rechoose => continue,
            Admitted::CostInFlight => wait_for_settlement(sh, until).await,
        }
    }
}

/// What [`admit`] decided.
enum Admitted {
    /// The attempt may start.
    Slot(Slot),
    /// Choose the route again (cancelled, or the breaker said no).
    Rechoose,
    /// The cost budget is held by attempts in flight: wait for one to settle.
    CostInFlight,
}

/// Why the cost budget did not let an attempt start.
enum CostWait {
    /// Spend so far leaves no room: the unit ends.
    Stop(Stop),
    /// Reservations of attempts in flight are in the way; one may settle lower.
    InFlight,
}

/// Rule of `[execution] costBudget`: sets this attempt's estimate aside, or says why not.
/// A unit not started for cost is `skipped`; a started one that cannot afford a further
/// attempt is `unavailable`.
fn reserve_cost(sh: &Shared, u: &UnitRun, route: usize) -> Result<Reservation, CostWait> {
    let budget = &sh.engine.cost;
    let r = &sh.engine.routes[route];
    let chars = u.work.prompt.chars();
    let estimate =
        r.observed
            .lock()
            .expect("observed usage")
            .estimate(chars, r.prices, r.max_tokens);
    budget.reserve(estimate).map_err(|refusal| match refusal {
        Refusal::InFlight => CostWait::InFlight,
        Refusal::Spent {
            spent,
            estimate,
            limit,
        } => {
            let why = format!(
                "cost budget: ${spent:.4} spent and this attempt on {} is estimated at ${estimate:.4}, past the ${limit:.2} costBudget",
                r.name
            );
            let status = if u.hunk_end.is_some() {
                UnitStatus::Unavailable
            } else {
                UnitStatus::Skipped
            };
            CostWait::Stop(Stop::new(status, why))
        }
    })
}

/// Waits until an attempt in flight settles its reservation (or the budget ends).
async fn wait_for_settlement(sh: &Shared<'_>, until: Instant) {
    let settled = sh.engine.cost.settled.notified();
    tokio::select! {
        biased;
        _ = sh.cancel.cancelled() => {}
        _ = settled => {}
        _ = sleep_until(until) => {}
    }
}

/// With a permit in hand: the last checks before an attempt starts (budget, shedding,
/// the half-budget rule), then the breaker's admission. `Ok(None)`: choose again.
async fn admit(
    sh: &Shared<'_>,
    u: &UnitRun<'_>,
    route: usize,
    permit: Permit,
    reason: AttemptReason,
) -> Result<Admitted, Stop> {
    let now = Instant::now();
    if sh.cancel.is_cancelled() {
        return Ok(Admitted::Rechoose); // reported at the top of the loop
    }
    if sh.budget_spent(now) {
        return Err(u.stop_on_cancel(sh));
    }
    let started = u.hunk_end.is_some();
    if let Some(stop) = sh
        .shedder
        .shed(u.work.optional, started, sh.review_remaining(now))
    {
        return Err(stop);
    }
    if let Some(h) = u.hunk_end {
        let left = h.saturating_duration_since(now);
        sh.retry.half_left(left, "after waiting for a permit")?;
    }
    let reservation = match reserve_cost(sh, u, route) {
        Ok(r) => r,
        Err(CostWait::Stop(stop)) => return Err(stop),
        Err(CostWait::InFlight) => return Ok(Admitted::CostInFlight),
    };
    let breakers = &sh.engine.breakers;
    let (admission, transition, hold) = breakers.admit_async(route, now).await;
    if let Some(t) = transition {
        announce(sh, &sh.engine.routes[route].name, t);
    }
    Ok(match admission {
        Admission::No => {
            sh.engine.cost.settle(reservation, None);
            Admitted::Rechoose
        }
        Admission::Yes | Admission::Probe => Admitted::Slot(Slot {
            route,
            permit,
            hold,
            breaker: breakers.state(route),
            reason,
            reservation,
        }),
    })
}

/// Why the next attempt is made (first, retry, failover), announcing a retry or failover
/// once. A retry of the same route sleeps on a Retry-After only when half the hunk
/// budget is left after it (rule 6). `Ok(None)`: cancelled while sleeping, choose again.
async fn reason_for(
    sh: &Shared<'_>,
    u: &UnitRun<'_>,
    route: usize,
    until: Instant,
    announced: &mut bool,
) -> Result<Option<AttemptReason>, Stop> {
    let Some(l) = &u.last else {
        return Ok(Some(AttemptReason::First));
    };
    let to = &sh.engine.routes[route].name;
    if route != l.route {
        let from = sh.engine.routes[l.route].name.clone();
        if !std::mem::replace(announced, true) {
            sh.sink.emit(Event::Failover {
                unit: u.index(),
                from: from.clone(),
                to: to.clone(),
                reason: l.reason.clone(),
            });
        }
        let after = l.reason.clone();
        return Ok(Some(AttemptReason::Failover { from, after }));
    }
    let wait = l.retry_after.unwrap_or(Duration::ZERO);
    let hunk_remaining = until.saturating_duration_since(Instant::now());
    if !wait.is_zero() && !sh.retry.retry_after_fits(wait, hunk_remaining) {
        return Err(Stop::new(
            UnitStatus::Unavailable,
            format!(
                "rate limited with Retry-After {}, more than the hunk budget allows ({} left), and no other route admits calls",
                crate::config::format_duration(wait),
                crate::config::format_duration(hunk_remaining),
            ),
        ));
    }
    if !std::mem::replace(announced, true) {
        sh.sink.emit(Event::Retry {
            unit: u.index(),
            route: to.clone(),
            reason: l.reason.clone(),
            wait,
        });
        if !wait.is_zero() {
            tokio::select! {
                biased;
                _ = sh.cancel.cancelled() => return Ok(None),
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }
    let after = l.reason.clone();
    Ok(Some(AttemptReason::Retry { after }))
}

/// No route admits calls. A first attempt waits, within its budget, for an open breaker
/// to half-open; a further attempt does not wait (the unit is unavailable now).
async fn wait_for_reopen(
    sh: &Shared<'_>,
    u: &mut UnitRun<'_>,
    reopen: Option<Instant>,
    until: Instant,
    changed: std::pin::Pin<&mut tokio::sync::futures::Notified<'_>>,
) -> Result<(), Stop> {
    if let Some(l) = &u.last {
        return Err(Stop::new(
            UnitStatus::Unavailable,
            format!("no route admits calls (breakers open) after {}", l.reason),
        ));
    }
    if sh.engine.routes.is_empty() {
        return Err(Stop::new(
            UnitStatus::Unavailable,
            "no routes are configured",
        ));
    }
    // A half-open route with its probe in flight decides soon: wait for its verdict.
    let probing =
        (0..sh.engine.routes.len()).any(|r| sh.engine.breakers.state(r) == BreakerState::HalfOpen);
    let wake_at = match (reopen, probing) {
        (_, true) => reopen.unwrap_or(until).min(until),
        (Some(t), false) => t,
        (None, false) => {
            return Err(Stop::new(
                UnitStatus::Unavailable,
                "every route is forced open (auth or invalid model)",
            ));
        }
    };
    // No idle waiting: a breaker that reopens only after this unit's deadline cannot
    // serve it, so the unit ends now instead of holding the review open.
    if !probing && wake_at >= until {
        let which = if u.hunk_end.is_some() {
            "hunk"
        } else {
            "review"
        };
        return Err(Stop::new(
            UnitStatus::Unavailable,
            format!(
                "every route's breaker is open until after the {which} deadline (the soonest reopens {} after it)",
                crate::config::format_duration(wake_at.saturating_duration_since(until))
            ),
        ));
    }
    u.waited_for_open_routes = true;
    tokio::select! {
        biased;
        _ = sh.cancel.cancelled() => {}
        _ = changed => {}
        _ = sleep_until(wake_at.min(until)) => {}
    }
    if Instant::now() >= until && !sh.cancel.is_cancelled() {
        return Err(all_open());
    }
    Ok(())
}

/// What the attempt cost; the route learns its usage for later estimates, and the cost
/// budget swaps the attempt's reservation for its real cost.
fn account_cost(
    sh: &Shared,
    route: &super::Route,
    req: &AttemptRequest,
    record: &AttemptRecord,
    reservation: Reservation,
) -> Option<f64> {
    let cost_usd = cost::attempt_cost(record.usage, route.prices);
    route.observed.lock().expect("observed usage").learn(
        req.prompt.chars(),
        record.usage,
        cost_usd,
    );
    sh.engine.cost.settle(reservation, cost_usd);
    cost_usd
}

/// Once per run and route: an `openai` route answered by a LiteLLM gateway may be
/// retried by the gateway inside one warden attempt.
fn warn_of_gateway(sh: &Shared, route: &super::Route, record: &AttemptRecord) {
    if record.gateway == Some("litellm")
        && route.provider.kind() != "litellm"
        && !route.gateway_warned.swap(true, Ordering::SeqCst)
    {
        sh.sink.emit(Event::Warning {
            route: route.name.clone(),
            message: "responses carry x-litellm-* headers: a LiteLLM gateway may retry and fall back behind warden's back, hiding calls and time inside one attempt; set provider = \"litellm\" on this route so warden stays the one retry owner".into(),
        });
    }
}

fn passed_over_events(sh: &Shared, unit: usize, passed_over: &[usize]) {
    for r in passed_over {
        sh.sink.emit(Event::RouteSkipped {
            unit,
            route: sh.engine.routes[*r].name.clone(),
            breaker: sh.engine.breakers.state(*r),
        });
    }
}

/// Tells the event stream about a breaker transition, and wakes the units waiting for a
/// route (they choose again).
fn announce(sh: &Shared, route: &str, t: Transition) {
    sh.sink.emit(Event::Breaker {
        route: route.to_string(),
        from: t.from,
        to: t.to,
        reason: t.reason,
    });
    sh.engine.changed.notify_waiters();
}

fn cancelled(sh: &Shared) -> Stop {
    Stop::new(
        UnitStatus::Cancelled,
        if sh.interrupted.is_cancelled() {
            "interrupted during an attempt"
        } else {
            "the review budget ran out during an attempt"
        },
    )
}

fn not_started(sh: &Shared) -> Stop {
    Stop::new(
        UnitStatus::Skipped,
        if sh.interrupted.is_cancelled() {
            "interrupted before the unit started"
        } else {
            "the review budget ran out before the unit started"
        },
    )
}

fn all_open() -> Stop {
    Stop::new(
        UnitStatus::Unavailable,
        "every route's breaker stayed open until the budget ran out",
    )
}

fn cancelled_record(
    sh: &Shared,
    route: usize,
    req: &AttemptRequest,
    ran: Duration,
) -> AttemptRecord {
    let r = &sh.engine.routes[route];
    AttemptRecord {
        duration: ran,
        outcome: Outcome::Cancelled,
        reason: "cancelled: the connection was closed".into(),
        ..AttemptRecord::new(
            &r.name,
            r.provider.kind(),
            r.provider.model(),
            req.limits.total,
        )
    }
}
