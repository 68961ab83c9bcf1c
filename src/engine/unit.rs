//! One unit's life, read against docs/design.md section 4. The engine is the one retry owner:
//! it chooses a route that admits calls and takes its permit (`admission.rs`, over the
//! [`RoutePicker`](super::RoutePicker) and the [`Bulkhead`](super::Bulkhead)), makes one
//! attempt under nested deadlines (`attempt.rs`, which answers with a typed
//! [`Answer`]: findings, tool calls or a failure), and after a failure asks the
//! [`RetryPolicy`](super::RetryPolicy) whether another attempt follows. Every unit ends
//! with exactly one status (section 5). Its state is plain data (`unit_state.rs`); this
//! file drives it and is the only one that calls the others.

use super::admission::acquire;
use super::attempt::{Answer, Failure, attempt};
use super::clock::deadline_after;
use super::context::Fit;
use super::ends::cancelled;
use super::events::Event;
use super::outcome::{UnitPart, UnitResult, UnitStatus};
use super::retry::Stop;
use super::unit_state::{LastFailure, UnitRun};
use super::{Shared, UnitInfo};
use crate::findings::Extracted;
use crate::plan::split::Half;
use crate::provider::{AttemptRecord, Correction, Outcome, ToolCall};
use std::sync::Arc;
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
        match step(sh, &mut u).await {
            Next::Again => {}
            Next::Split(halves, why) => return split(sh, u, halves, why).await,
            Next::End(stop) => return u.finish(stop),
            Next::Reviewed(route, ex) => return reviewed(u, &route, ex),
        }
    }
}

/// What follows one step of a unit's life.
enum Next {
    /// Another attempt (a retry, a failover, a re-send, the loop's next turn).
    Again,
    /// Split it into these halves (section 14), for this reason.
    Split(Box<[Half; 2]>, String),
    /// It ends so.
    End(Stop),
    /// Reviewed by this route's answer.
    Reviewed(String, Extracted),
}

impl From<Fit> for Next {
    fn from(fit: Fit) -> Self {
        match fit {
            Fit::Send => Next::Again,
            Fit::Split(halves, why) => Next::Split(halves, why),
            Fit::Stop(stop) => Next::End(stop),
        }
    }
}

/// One step: the window check, a route and its permit, one attempt, and what its answer
/// asks for next.
async fn step(sh: &Shared<'_>, u: &mut UnitRun<'_>) -> Next {
    // Section 14: a prompt too long for its route's window is split (or fails over).
    match super::context::check(sh, u) {
        Fit::Send => {}
        other => return other.into(),
    }
    // Rules 6–9: a route that admits calls, and one of its permits, within the budgets.
    let slot = match acquire(sh, u).await {
        Ok(slot) => slot,
        Err(stop) => return Next::End(u.with_bounces(stop)),
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
    let in_flight = sh.depth.started(route);
    let answer = attempt(sh, u, slot, now, hunk_end).await;
    let record = answer.record();
    let ok = record.outcome == Outcome::Ok;
    in_flight.ended(route, record.duration, ok, record.backpressure);
    match answer {
        Answer::Findings { record, findings } => {
            turn_answered(u);
            Next::Reviewed(record.route, findings)
        }
        // A turn of tool calls: answered, then the next turn (section 14).
        Answer::ToolCalls { text, calls, .. } => {
            turn_answered(u);
            match next_turn(sh, u, text, calls).await {
                Ok(()) => Next::Again,
                Err(stop) => Next::End(stop),
            }
        }
        Answer::Failed(failure) => after_failure(sh, u, route, failure, started, hunk_end).await,
    }
}

/// The unit's loop, if any, counts an answered turn.
fn turn_answered(u: &mut UnitRun) {
    if let Some(l) = &mut u.looping {
        l.answered();
    }
}

/// After an attempt that did not answer: a re-send, the kept findings of a broken-off
/// answer, a refusal, back-pressure, a prompt too long, the budget's end, or rules 4–5.
async fn after_failure(
    sh: &Shared<'_>,
    u: &mut UnitRun<'_>,
    route: usize,
    failure: Failure,
    started: bool,
    hunk_end: Instant,
) -> Next {
    let Failure {
        record,
        partial,
        cut,
    } = failure;
    // Section 14: a refused parameter was fixed for the route (section 15: or the
    // route stopped offering tools); send again at once.
    if super::resend::again(&mut u.resends, &record) {
        return Next::Again;
    }
    // Section 14: a cut (or an object that did not end) keeps its findings; a cut is
    // retried once with twice the output cap.
    if record.outcome == Outcome::BadResponse && (cut || partial.is_some()) {
        let ex = partial.unwrap_or_default();
        return match super::cut::after_incomplete(sh, u, route, &record, ex, cut, hunk_end) {
            super::cut::Next::Retry => Next::Again,
            super::cut::Next::End(stop) => Next::End(stop),
        };
    }
    // Section 15: a refusal is the model's answer, not an outage: another route may
    // review the unit, this one is not asked again.
    if record.outcome == Outcome::Refused {
        return refused(sh, u, route, &record).map_or_else(Next::End, |()| Next::Again);
    }
    if record.backpressure {
        if let Err(stop) = bounced(sh, u, route, &record, started) {
            return Next::End(stop);
        }
        back_off(sh, u, &record).await;
        return Next::Again;
    }
    // Section 14: a prompt too long for the model is split, or goes to another route.
    if let Some(Correction::ContextLength { window }) = record.correction {
        return too_long(sh, u, route, &record, window);
    }
    // Section 5: cut by the review budget or a signal, the unit is cancelled.
    if record.outcome == Outcome::Cancelled || sh.budget_spent(Instant::now()) {
        return Next::End(cancelled(sh));
    }
    further_attempt(sh, u, route, &record, hunk_end)
}

/// Section 14: the route answered that the prompt exceeds its model's window: the unit
/// is split, fails over, or ends.
fn too_long(
    sh: &Shared,
    u: &mut UnitRun,
    route: usize,
    record: &AttemptRecord,
    window: Option<u64>,
) -> Next {
    match super::context::refused(sh, u, route, window) {
        Fit::Send => {}
        other => return other.into(),
    }
    u.last = Some(LastFailure {
        route,
        reason: format!("{}: {}", record.outcome, record.reason),
        retry_after: None,
    });
    Next::Again
}

/// Rules 4–5: only the engine decides whether another attempt follows.
fn further_attempt(
    sh: &Shared,
    u: &mut UnitRun,
    route: usize,
    record: &AttemptRecord,
    hunk_end: Instant,
) -> Next {
    let left = hunk_end.saturating_duration_since(Instant::now());
    let made = u.attempts_made();
    if let Err(stop) = sh.retry.further_attempt(record.outcome, made, left) {
        let reason = format!(
            "{}; last attempt on {}: {}",
            stop.reason, record.route, record.reason
        );
        return Next::End(Stop::new(stop.status, reason));
    }
    u.last = Some(LastFailure {
        route,
        reason: format!("{}: {}", record.outcome, record.reason),
        retry_after: record.retry_after,
    });
    Next::Again
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
async fn next_turn(
    sh: &Shared<'_>,
    u: &mut UnitRun<'_>,
    text: String,
    calls: Vec<ToolCall>,
) -> Result<(), Stop> {
    let unit = u.index();
    let until = u.wait_until(sh.review_deadline);
    let (Some(l), Some(tb)) = (u.looping.as_mut(), sh.engine.toolbox.as_ref()) else {
        return Err(Stop::new(
            UnitStatus::Failed,
            "the model answered with tool calls and no findings, and this unit has no tool loop",
        ));
    };
    l.answer(sh, unit, tb, (text, calls), until).await?;
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
