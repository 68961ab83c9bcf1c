//! One unit's life, read against docs/design.md section 4. The engine is the one retry owner:
//! it chooses a route that admits calls and takes its permit (`admission.rs`, over the
//! [`RoutePicker`](super::RoutePicker) and the [`Bulkhead`](super::Bulkhead)), makes one
//! attempt under nested deadlines, and after a failure asks the
//! [`RetryPolicy`](super::RetryPolicy) whether another attempt follows. Every unit ends
//! with exactly one status (section 5).

use super::admission::acquire;
use super::breaker::{BreakerState, Transition};
use super::breakers::Hold;
use super::bulkhead::Permit;
use super::clock::deadline_after;
use super::context::Fit;
use super::cost::{self, Reservation};
use super::events::{AttemptReason, Event};
use super::limit::{Sample, Signal};
use super::outcome::{AttemptLog, Move, UnitResult, UnitStatus};
use super::retry::Stop;
use super::{Shared, UnitInfo};
use crate::findings::Extracted;
use crate::provider::{AttemptRecord, AttemptRequest, Correction, Outcome};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::time::Instant;

/// Runs one unit to its end; its result goes out as `UnitFinished`.
pub(super) async fn run(sh: &Shared<'_>, index: usize, work: &UnitInfo) {
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
    let mut result = life(sh, index, work, 0).await;
    if !result.parts.is_empty() {
        super::context::name_parts(&mut result, work.lines);
    }
    emit_finished(sh, result);
}

/// One unit's attempts until it ends (or, split for a context window, its halves'),
/// its attempts numbered after `number_from`.
pub(super) async fn life(
    sh: &Shared<'_>,
    index: usize,
    work: &UnitInfo,
    number_from: u32,
) -> UnitResult {
    let mut u = UnitRun::new(index, work);
    u.number_from = number_from;
    u.looping = super::turns::start(sh, work);
    loop {
        // Section 14: a prompt too long for its route's window is split (or fails over).
        match super::context::check(sh, &mut u) {
            Fit::Send => {}
            Fit::Split(halves, why) => return super::context::split(sh, u, halves, why).await,
            Fit::Stop(stop) => return u.finish(sh, stop),
        }
        // Rules 6–9: a route that admits calls, and one of its permits, within the budgets.
        let slot = match acquire(sh, &mut u).await {
            Ok(slot) => slot,
            Err(stop) => {
                let stop = u.with_bounces(stop);
                return u.finish(sh, stop);
            }
        };
        // Rule 2: the hunk budget starts when the first attempt starts (section 13: the
        // first attempt that is not answered with back-pressure; see `bounced`).
        let now = Instant::now();
        let started = u.hunk_end.is_some();
        let hunk_end = *u
            .hunk_end
            .get_or_insert_with(|| deadline_after(now, sh.exec.hunk_budget));
        // Section 14: a tool loop's turn may be its final one (tools off, submit forced).
        if let Some(l) = &mut u.looping {
            l.before_request(sh, slot.route, hunk_end, now);
        }
        // Rules 1 and 3: one request under nested deadlines, cancelled with the review.
        let route = slot.route;
        let (record, extracted, cut) = attempt(sh, &mut u, slot, now, hunk_end).await;
        sh.depth
            .observe(route, record.duration, record.outcome == Outcome::Ok);
        if record.outcome == Outcome::Ok {
            if let Some(l) = &mut u.looping {
                l.answered();
            }
            let Some(ex) = extracted else {
                // A turn of tool calls: answered, then the next turn (section 14).
                match super::turns::next_turn(sh, &mut u).await {
                    Ok(()) => continue,
                    Err(stop) => return u.finish(sh, stop),
                }
            };
            return u.reviewed(sh, &record.route, ex);
        }
        // Section 14: a refused parameter was fixed for the route (section 15: or the
        // route stopped offering tools); send again at once.
        if super::resend::again(&mut u, &record) {
            continue;
        }
        // Section 14: a cut (or an object that did not end) keeps its findings; a cut is
        // retried once with twice the output cap.
        if record.outcome == Outcome::BadResponse && (cut || extracted.is_some()) {
            let ex = extracted.unwrap_or_default();
            match super::cut::after_incomplete(sh, &mut u, route, &record, ex, cut, hunk_end) {
                super::cut::Next::Retry => continue,
                super::cut::Next::End(stop) => return u.finish(sh, stop),
            }
        }
        // Section 15: a refusal is the model's answer, not an outage: another route may
        // review the unit, this one is not asked again.
        if record.outcome == Outcome::Refused {
            if let Err(stop) = refused(sh, &mut u, route, &record) {
                return u.finish(sh, stop);
            }
            continue;
        }
        if record.backpressure {
            if let Err(stop) = bounced(sh, &mut u, route, &record, started) {
                return u.finish(sh, stop);
            }
            back_off(sh, &u, &record).await;
            continue;
        }
        // Section 14: a prompt too long for the model is split, or goes to another route.
        if let Some(Correction::ContextLength { window }) = record.correction {
            match super::context::refused(sh, &mut u, route, window) {
                Fit::Send => {}
                Fit::Split(halves, why) => return super::context::split(sh, u, halves, why).await,
                Fit::Stop(stop) => return u.finish(sh, stop),
            }
            u.last = Some(LastFailure {
                route,
                reason: format!("{}: {}", record.outcome, record.reason),
                retry_after: None,
            });
            continue;
        }
        // Section 5: cut by the review budget or a signal, the unit is cancelled.
        if record.outcome == Outcome::Cancelled || sh.budget_spent(Instant::now()) {
            return u.finish(sh, cancelled(sh));
        }
        // Rules 4–5: only the engine decides whether another attempt follows.
        let left = hunk_end.saturating_duration_since(Instant::now());
        let made = u.attempts_made();
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

/// Section 13: an answer of back-pressure ("not now", before any model work) is a wait,
/// not a failure. It uses none of `maxAttempts`, is no breaker verdict (see `attempt`),
/// and does not start the hunk budget: a unit that had not started is again a unit that
/// has not started, so its hunk budget starts with the first attempt that is not
/// bounced. The unit goes back to the head of the queue (permit waits serve it before
/// units not yet dispatched), and a Retry-After pauses the route's new attempts until
/// then ([`super::pacing::Pacing`]). After `[execution] maxBounces` the unit ends `unavailable`;
/// the review budget bounds the waits as any other.
fn bounced(
    sh: &Shared,
    u: &mut UnitRun,
    route: usize,
    record: &AttemptRecord,
    started: bool,
) -> Result<(), Stop> {
    if !started {
        u.hunk_end = None;
    }
    u.bounces += 1;
    let now = Instant::now();
    let paused_until = record
        .retry_after
        .map(|ra| sh.engine.pacing.pause(route, now, ra));
    sh.sink.emit(Event::BackPressure {
        unit: u.index(),
        route: record.route.clone(),
        route_index: route,
        bounce: u.bounces,
        retry_after: record.retry_after,
        paused_until: paused_until.map(|t| t.saturating_duration_since(sh.start)),
        at: now.saturating_duration_since(sh.start),
    });
    if let Some(until) = paused_until {
        // Units waiting for this route's permits choose again (other routes, or later).
        let reason = super::pacing::PauseReason::RetryAfter;
        super::admission::announce_pause(sh, route, super::pacing::Paused { until, reason });
    }
    if sh.budget_spent(now) {
        return Err(u.with_bounces(u.stop_on_cancel(sh)));
    }
    if u.bounces >= sh.engine.exec.max_bounces {
        return Err(Stop::new(
            UnitStatus::Unavailable,
            format!(
                "rate limited {} times (back-pressure); last on {}: {}",
                u.bounces, record.route, record.reason
            ),
        ));
    }
    Ok(())
}

/// Section 15: the model refused the unit. The route is passed over for it from now on
/// (no retry there); while another route may serve it, it fails over; else it ends
/// `refused`, naming the route and what the provider said.
fn refused(sh: &Shared, u: &mut UnitRun, route: usize, record: &AttemptRecord) -> Result<(), Stop> {
    u.refused_by.push(route);
    let reason = format!("{}: {}", record.outcome, record.reason);
    if u.allowed(sh).is_empty() {
        return Err(Stop::new(
            UnitStatus::Refused,
            format!("refused by {}: {}", record.route, record.reason),
        ));
    }
    u.last = Some(LastFailure {
        route,
        reason,
        retry_after: None,
    });
    Ok(())
}

/// The first wait after back-pressure that does not say when to come back; doubled with
/// each further bounce, up to [`MAX_BOUNCE_BACKOFF`].
const BOUNCE_BACKOFF: Duration = Duration::from_millis(250);

/// The longest wait between two bounces without a Retry-After: with the default 8 bounces
/// a unit waits out about 16 s of "not now" before it ends `unavailable`.
const MAX_BOUNCE_BACKOFF: Duration = Duration::from_secs(4);

/// Back-pressure without a Retry-After (a 529, a 429 that does not say when, or says
/// `0` or `1 ms`) is still "not now": without a wait, a unit would spend its bounces
/// within a few round trips and end `unavailable` while the budget lasts. The unit (not
/// the route: the limit already shrank for it) waits an exponential backoff, within its
/// deadlines. A Retry-After of at least [`BOUNCE_BACKOFF`] is taken at its word: the
/// route's pause is the wait.
async fn back_off(sh: &Shared<'_>, u: &UnitRun<'_>, record: &AttemptRecord) {
    if record.retry_after.is_some_and(|d| d >= BOUNCE_BACKOFF) {
        return;
    }
    let doublings = u.bounces.saturating_sub(1).min(8);
    let wait = BOUNCE_BACKOFF
        .saturating_mul(1 << doublings)
        .min(MAX_BOUNCE_BACKOFF);
    let until = deadline_after(Instant::now(), wait).min(u.wait_until(sh.review_deadline));
    tokio::select! {
        _ = tokio::time::sleep_until(until) => {}
        _ = sh.cancel.cancelled() => {}
    }
}

/// The last failed attempt, which shapes the next one.
pub(super) struct LastFailure {
    pub(super) route: usize,
    pub(super) reason: String,
    pub(super) retry_after: Option<Duration>,
}

/// A route chosen for the next attempt, with its permit held.
pub(super) struct Slot {
    pub(super) route: usize,
    pub(super) permit: Permit,
    /// What the breakers reserved for it (given back with its outcome).
    pub(super) hold: Hold,
    pub(super) breaker: BreakerState,
    pub(super) reason: AttemptReason,
    /// The attempt's share of the cost budget, settled with its real cost.
    pub(super) reservation: Reservation,
}

/// A unit in flight: its result so far, its hunk deadline once started, its last failure.
pub(super) struct UnitRun<'w> {
    pub(super) work: &'w UnitInfo,
    pub(super) result: UnitResult,
    pub(super) hunk_end: Option<Instant>,
    pub(super) last: Option<LastFailure>,
    /// It waited for an open breaker to half-open (a first attempt may).
    pub(super) waited_for_open_routes: bool,
    /// Its routes' probes failed with a fact (summed, see `dead::DeadRoutes`) when it first
    /// waited for a breaker to half-open: more later means such a round failed while it
    /// waited, and it waits no further round (docs/design.md §14, §15). Probes that time out do
    /// not count: a slow route is waited on while the budget lasts.
    pub(super) failed_probes_when_waiting: Option<u32>,
    /// Answers of back-pressure so far (section 13).
    pub(super) bounces: u32,
    /// Its tool loop, when its skill reads the repository (section 14).
    pub(super) looping: Option<super::turns::LoopState>,
    /// Where the current turn's attempts start in `result.attempts` (a failed turn is
    /// retried under `maxAttempts`, not the unit).
    pub(super) turn_from: usize,
    /// The last answer's text and tool calls, for the loop.
    pub(super) answered: Option<(String, Vec<crate::provider::ToolCall>)>,
    /// Attempts sent again after the route fixed a refused parameter (section 14).
    pub(super) resends: u32,
    /// The output cap of its next attempts, once a cut raised it (section 14).
    pub(super) output_cap: Option<u32>,
    /// Its one retry after a cut was made.
    pub(super) cut_retried: bool,
    /// Routes whose context window its prompt does not fit (section 14): passed over.
    pub(super) too_small: Vec<usize>,
    /// Routes whose model refused it (section 15): not asked again.
    pub(super) refused_by: Vec<usize>,
    /// Attempts of the unit made before this run of it (a half follows the whole).
    pub(super) number_from: u32,
    /// Said after its reason: its tool loop was dropped for a context window (§14).
    pub(super) window_note: Option<String>,
}

impl<'w> UnitRun<'w> {
    pub(super) fn new(index: usize, work: &'w UnitInfo) -> Self {
        UnitRun {
            work,
            result: UnitResult::unfinished(index, UnitStatus::Skipped, ""),
            hunk_end: None,
            last: None,
            waited_for_open_routes: false,
            failed_probes_when_waiting: None,
            bounces: 0,
            looping: None,
            turn_from: 0,
            answered: None,
            resends: 0,
            output_cap: None,
            cut_retried: false,
            too_small: Vec::new(),
            refused_by: Vec::new(),
            number_from: 0,
            window_note: None,
        }
    }

    /// The routes the unit may use, in its order.
    pub(super) fn base_routes<'s>(&'s self, sh: &'s Shared) -> &'s [usize] {
        if self.work.routes.is_empty() {
            &sh.engine.all_routes
        } else {
            &self.work.routes
        }
    }

    /// The routes the unit may use whose window its prompt does not exceed (or unknown).
    pub(super) fn allowed(&self, sh: &Shared) -> Vec<usize> {
        let base = self.base_routes(sh);
        base.iter()
            .copied()
            .filter(|r| !self.too_small.contains(r) && !self.refused_by.contains(r))
            .collect()
    }

    /// The number of the unit's next attempt.
    pub(super) fn next_number(&self) -> u32 {
        self.number_from + self.result.attempts.len() as u32 + 1
    }

    /// Neither started nor bounced: it waits behind the units already in line (a started
    /// or bounced unit goes first, at the head of the queue).
    pub(super) fn fresh(&self) -> bool {
        self.hunk_end.is_none() && self.bounces == 0
    }

    /// Attempts that count toward `maxAttempts`: back-pressure answers do not, nor the
    /// answered turns of a tool loop before this one.
    pub(super) fn attempts_made(&self) -> u32 {
        let a = &self.result.attempts[self.turn_from.min(self.result.attempts.len())..];
        a.iter()
            .filter(|a| super::resend::counts(&a.record))
            .count() as u32
    }

    pub(super) fn index(&self) -> usize {
        self.result.unit
    }

    /// Waits end at the hunk deadline once the unit started, else at the review deadline.
    pub(super) fn wait_until(&self, review_deadline: Instant) -> Instant {
        self.hunk_end
            .map_or(review_deadline, |h| h.min(review_deadline))
    }

    /// Why the unit stops when the review budget ran out or the run was interrupted.
    pub(super) fn stop_on_cancel(&self, sh: &Shared) -> Stop {
        if self.hunk_end.is_some() {
            cancelled(sh)
        } else if self.waited_for_open_routes {
            all_open()
        } else {
            not_started(sh)
        }
    }

    /// A unit that ends after answers of back-pressure says how many (a unit skipped for
    /// the budget after five "not now" was not merely late).
    pub(super) fn with_bounces(&self, stop: Stop) -> Stop {
        if self.bounces == 0 || stop.reason.contains("(back-pressure)") {
            return stop;
        }
        let n = self.bounces;
        let s = if n == 1 { "" } else { "s" };
        Stop::new(
            stop.status,
            format!("{} (rate limited {n} time{s}, back-pressure)", stop.reason),
        )
    }

    /// Records that an attempt goes to `route` (and the move, if it changed).
    pub(super) fn note_route(&mut self, route: &str) {
        let r = &mut self.result;
        if let Some(prev) = r.routes_tried.last()
            && prev != route
        {
            if let Some(l) = &mut self.looping {
                l.moved();
            }
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

    pub(super) fn reviewed(mut self, sh: &Shared, route: &str, ex: Extracted) -> UnitResult {
        // A complete answer after a cut: the cut answer's findings stay (section 5).
        super::cut::keep(&mut self, ex);
        self.result.answer_cut = false;
        self.result.route = Some(route.to_string());
        self.finish(
            sh,
            Stop::new(UnitStatus::Reviewed, format!("reviewed by {route}")),
        )
    }

    pub(super) fn finish(mut self, _sh: &Shared, stop: Stop) -> UnitResult {
        self.result.status = stop.status;
        self.result.reason = match self.window_note.take() {
            Some(note) => format!("{} ({note})", stop.reason),
            None => stop.reason,
        };
        self.into_result()
    }

    /// The result so far (its tool loop's figures closed).
    pub(super) fn into_result(mut self) -> UnitResult {
        if let Some(l) = self.looping.take() {
            l.close(&mut self.result);
        }
        self.result
    }
}

fn emit_finished(sh: &Shared, result: UnitResult) {
    sh.depth.unit_finished();
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
) -> (AttemptRecord, Option<Extracted>, bool) {
    let route = &sh.engine.routes[slot.route];
    let hunk_remaining = hunk_end.saturating_duration_since(now);
    let review_remaining = sh.review_remaining(now);
    let deadline = sh
        .exec
        .request_timeout
        .min(hunk_remaining)
        .min(review_remaining);
    let number = u.next_number();
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
    let mut req = AttemptRequest::new((*u.work.prompt).clone(), u.work.lines, sh.limits(deadline));
    req.path = Some(u.work.labels.path.clone());
    req.conversation = u.looping.as_ref().and_then(|l| l.conversation());
    req.output_cap = u.output_cap;
    sh.in_flight.fetch_add(1, Ordering::SeqCst);
    let load = route.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    let result = tokio::select! {
        biased;
        _ = sh.cancel.cancelled() => None,
        a = route.provider.attempt(&req) => Some(a),
    };
    // Dropping the attempt's future above has already closed its connection.
    sh.in_flight.fetch_sub(1, Ordering::SeqCst);
    route.in_flight.fetch_sub(1, Ordering::SeqCst);
    let finished = Instant::now();
    let ran = finished.saturating_duration_since(now);
    let (mut record, extracted, cut) = match result {
        Some(a) => {
            let cut = a.finish.as_ref().is_some_and(|f| f.is_cut());
            u.answered = Some((a.text, a.calls));
            (a.record, a.extracted, cut)
        }
        None => (cancelled_record(sh, slot.route, &req, ran), None, false),
    };
    if record.outcome == Outcome::Timeout && sh.budget_spent(finished) {
        // Its deadline was the review's: the review budget cut it, not the route.
        record.outcome = Outcome::Cancelled;
        record.stage = None;
        record.reason = "cancelled: the review budget ran out during the attempt".into();
    }
    // Back-pressure is no verdict on the route's health (section 13): the breaker gets
    // back what it reserved and counts nothing, as for a cancelled attempt.
    let verdict_outcome = if super::resend::no_verdict(&record) {
        Outcome::Cancelled
    } else {
        record.outcome
    };
    adapt_limit(sh, slot.route, &record, now, load);
    if let Some(info) = &record.rate_limit {
        let others = route.in_flight.load(Ordering::SeqCst) as u64;
        sh.engine.pacing.observe(slot.route, info, finished, others);
    }
    // Fleet mode: the answer's headers go to the shared windows before the permit goes
    // back, and the attempt is no longer in flight there.
    if let Some(shared) = &sh.engine.windows {
        let info = record.rate_limit.as_deref().cloned();
        shared.settle(slot.route, info).await;
    }
    drop(slot.permit);
    // §14: a probe that cannot connect after attempts that could not: dead for the run.
    // Taken in before the breaker's verdict wakes the units waiting for it, so they see
    // whether the probe failed with a fact (§15).
    let dead = sh
        .engine
        .dead
        .record(slot.route, &record, slot.hold.probe());
    let verdict = sh
        .engine
        .breakers
        .record_async(slot.route, finished, verdict_outcome, slot.hold)
        .await;
    if let Some(t) = verdict {
        announce(sh, &route.name, t);
    }
    if let Some(dead) = dead {
        let reason = format!(
            "dead for the run: {} (its half-open probe could not connect either)",
            dead.describe()
        );
        if let Some(t) = sh.engine.breakers.force_open(slot.route, finished, reason) {
            announce(sh, &route.name, t);
        }
    }
    sh.sink.emit(Event::AttemptFinished {
        unit: u.index(),
        attempt: number,
        record: record.clone(),
    });
    warn_of_gateway(sh, route, &record);
    if let Some(message) = &record.warning {
        sh.sink.emit(Event::Warning {
            route: route.name.clone(),
            message: message.clone(),
        });
    }
    let chars = req.prompt.chars() + u.looping.as_ref().map_or(0, |l| l.chars());
    let cost_usd = account_cost(sh, route, chars, &record, slot.reservation);
    u.result.attempts.push(AttemptLog {
        number,
        started: now.saturating_duration_since(sh.start),
        probe: slot.hold.probe(),
        cost_usd,
        record: record.clone(),
    });
    (record, extracted, cut)
}

/// Section 13: the route's effective limit learns from the attempt (`load`: the route's
/// attempts in flight when it started, itself included); a change goes to the bulkhead
/// (before this attempt's permit comes back, so a lower limit keeps it) and out as an
/// event.
fn adapt_limit(sh: &Shared, route: usize, record: &AttemptRecord, started: Instant, load: usize) {
    let signal = if record.backpressure {
        Signal::BackPressure
    } else if record.outcome == Outcome::Ok {
        Signal::Answer(record.duration)
    } else {
        Signal::Nothing
    };
    let r = &sh.engine.routes[route];
    let now = Instant::now();
    let sample = Sample {
        started,
        in_flight: load,
        signal,
    };
    let mut limit = r.limit.lock().expect("limit lock");
    let Some((to, reason)) = limit.record(sample, now) else {
        return;
    };
    let ceiling = limit.ceiling();
    sh.engine.bulkhead.set_limit(route, to);
    drop(limit);
    sh.sink.emit(Event::LimitChanged {
        route: r.name.clone(),
        route_index: route,
        limit: to,
        ceiling,
        reason,
        at: now.saturating_duration_since(sh.start),
    });
}

/// What the attempt cost; the route learns its usage for later estimates, and the cost
/// budget swaps the attempt's reservation for its real cost.
fn account_cost(
    sh: &Shared,
    route: &super::Route,
    chars: usize,
    record: &AttemptRecord,
    reservation: Reservation,
) -> Option<f64> {
    let cost_usd = cost::attempt_cost(record.usage, route.prices);
    route
        .observed
        .lock()
        .expect("observed usage")
        .learn(chars, record.usage, cost_usd);
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

/// Tells the event stream about a breaker transition, and wakes the units waiting for a
/// route (they choose again).
pub(super) fn announce(sh: &Shared, route: &str, t: Transition) {
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

pub(super) fn not_started(sh: &Shared) -> Stop {
    Stop::new(
        UnitStatus::Skipped,
        if sh.interrupted.is_cancelled() {
            "interrupted before the unit started"
        } else {
            "the review budget ran out before the unit started"
        },
    )
}

pub(super) fn all_open() -> Stop {
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
