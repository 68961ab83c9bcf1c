//! One unit's life, read against docs/design.md section 4. The engine is the one retry owner:
//! it chooses a route that admits calls and takes its permit (`admission.rs`, over the
//! [`RoutePicker`](super::RoutePicker) and the [`Bulkhead`](super::Bulkhead)), makes one
//! attempt under nested deadlines, and after a failure asks the
//! [`RetryPolicy`](super::RetryPolicy) whether another attempt follows. Every unit ends
//! with exactly one status (section 5).

use super::admission::{Slot, acquire, announce};
use super::clock::deadline_after;
use super::context::Fit;
use super::cost::{self, Reservation};
use super::ends::cancelled;
use super::events::Event;
use super::limit::{Sample, Signal};
use super::outcome::{AttemptLog, UnitPart, UnitResult, UnitStatus};
use super::retry::Stop;
use super::unit_state::{LastFailure, UnitRun};
use super::{Shared, UnitInfo};
use crate::findings::Extracted;
use crate::plan::split::Half;
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
            Fit::Split(halves, why) => return split(sh, u, halves, why).await,
            Fit::Stop(stop) => return u.finish(stop),
        }
        // Rules 6–9: a route that admits calls, and one of its permits, within the budgets.
        let slot = match acquire(sh, &mut u).await {
            Ok(slot) => slot,
            Err(stop) => {
                let stop = u.with_bounces(stop);
                return u.finish(stop);
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
                match next_turn(sh, &mut u).await {
                    Ok(()) => continue,
                    Err(stop) => return u.finish(stop),
                }
            };
            return reviewed(u, &record.route, ex);
        }
        // Section 14: a refused parameter was fixed for the route (section 15: or the
        // route stopped offering tools); send again at once.
        if super::resend::again(&mut u.resends, &record) {
            continue;
        }
        // Section 14: a cut (or an object that did not end) keeps its findings; a cut is
        // retried once with twice the output cap.
        if record.outcome == Outcome::BadResponse && (cut || extracted.is_some()) {
            let ex = extracted.unwrap_or_default();
            match super::cut::after_incomplete(sh, &mut u, route, &record, ex, cut, hunk_end) {
                super::cut::Next::Retry => continue,
                super::cut::Next::End(stop) => return u.finish(stop),
            }
        }
        // Section 15: a refusal is the model's answer, not an outage: another route may
        // review the unit, this one is not asked again.
        if record.outcome == Outcome::Refused {
            if let Err(stop) = refused(sh, &mut u, route, &record) {
                return u.finish(stop);
            }
            continue;
        }
        if record.backpressure {
            if let Err(stop) = bounced(sh, &mut u, route, &record, started) {
                return u.finish(stop);
            }
            back_off(sh, &u, &record).await;
            continue;
        }
        // Section 14: a prompt too long for the model is split, or goes to another route.
        if let Some(Correction::ContextLength { window }) = record.correction {
            match super::context::refused(sh, &mut u, route, window) {
                Fit::Send => {}
                Fit::Split(halves, why) => return split(sh, u, halves, why).await,
                Fit::Stop(stop) => return u.finish(stop),
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
            return u.finish(cancelled(sh));
        }
        // Rules 4–5: only the engine decides whether another attempt follows.
        let left = hunk_end.saturating_duration_since(Instant::now());
        let made = u.attempts_made();
        if let Err(stop) = sh.retry.further_attempt(record.outcome, made, left) {
            let reason = format!(
                "{}; last attempt on {}: {}",
                stop.reason, record.route, record.reason
            );
            return u.finish(Stop::new(stop.status, reason));
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

/// After an `ok` turn without findings: its calls are answered and the next turn
/// follows. The next attempt is a new turn, not a retry: `maxAttempts` counts again.
async fn next_turn(sh: &Shared<'_>, u: &mut UnitRun<'_>) -> Result<(), Stop> {
    let answered = u.answered.take().unwrap_or_default();
    let unit = u.index();
    let until = u.wait_until(sh.review_deadline);
    let (Some(l), Some(tb)) = (u.looping.as_mut(), sh.engine.toolbox.as_ref()) else {
        return Err(Stop::new(
            UnitStatus::Failed,
            "the model answered with tool calls and no findings, and this unit has no tool loop",
        ));
    };
    l.answer(sh, unit, tb, answered, until).await?;
    u.turn_from = u.result.attempts.len();
    u.last = None;
    Ok(())
}

/// Runs the halves as units of their own, one after the other, and sums them up.
async fn split(sh: &Shared<'_>, u: UnitRun<'_>, halves: Box<[Half; 2]>, why: String) -> UnitResult {
    let index = u.index();
    let mut made = u.next_number() - 1;
    let mut parts: Vec<UnitPart> = Vec::new();
    for h in *halves {
        let info = UnitInfo {
            lines: h.lines,
            prompt: Arc::new(h.prompt),
            split: h.rest,
            ..u.work.clone()
        };
        let r = Box::pin(life(sh, index, &info, made)).await;
        made += r.attempts.len() as u32;
        if r.parts.is_empty() {
            parts.push(UnitPart {
                lines: h.lines,
                result: r,
            });
        } else {
            parts.extend(r.parts);
        }
    }
    super::context::combine(u.into_result(), parts, why)
}

/// The unit is reviewed by `route`'s answer. A complete answer after a cut: the cut
/// answer's findings stay (section 5).
fn reviewed(mut u: UnitRun, route: &str, ex: Extracted) -> UnitResult {
    super::cut::keep(&mut u, ex);
    u.result.answer_cut = false;
    u.result.route = Some(route.to_string());
    u.finish(Stop::new(
        UnitStatus::Reviewed,
        format!("reviewed by {route}"),
    ))
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
