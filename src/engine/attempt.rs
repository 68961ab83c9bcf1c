//! One attempt on a slot's route (docs/design.md rules 1 and 3, sections 13–15): the
//! request under nested deadlines, cancelled with the review; what the route learns from
//! it (its limit, its pacing, the fleet's windows, the breaker's verdict, a dead route);
//! the events and the log that say so; and a typed [`Answer`] that tells the unit's
//! driver (`unit.rs`) what came back. What follows a failure is the driver's to decide.

use super::admission::{Slot, announce};
use super::breakers::Hold;
use super::cost::{self, Reservation};
use super::events::Event;
use super::limit::{Sample, Signal};
use super::outcome::AttemptLog;
use super::unit_state::UnitRun;
use super::{Route, Shared};
use crate::findings::Extracted;
use crate::provider::{Attempt, AttemptRecord, AttemptRequest, Outcome, ToolCall};
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::time::Instant;

/// What one attempt gave the unit: exactly one of these, each with its record.
pub(super) enum Answer {
    /// The model answered with findings (they may be none): the unit is reviewed.
    Findings {
        record: AttemptRecord,
        findings: Extracted,
    },
    /// The model answered with tool calls and no findings: its loop's next turn
    /// (section 14). `calls` may be empty; the loop says so.
    ToolCalls {
        record: AttemptRecord,
        text: String,
        calls: Vec<ToolCall>,
    },
    /// No answer the unit can use as it is.
    Failed(Failure),
}

/// An attempt that did not answer: how it ended, and what a broken-off answer held.
pub(super) struct Failure {
    pub(super) record: AttemptRecord,
    /// The findings complete before the answer broke off, when it held any (section 14).
    pub(super) partial: Option<Extracted>,
    /// The provider said the output cap cut the answer.
    pub(super) cut: bool,
}

impl Answer {
    /// Everything measured about the attempt, whatever it answered.
    pub(super) fn record(&self) -> &AttemptRecord {
        match self {
            Answer::Findings { record, .. }
            | Answer::ToolCalls { record, .. }
            | Answer::Failed(Failure { record, .. }) => record,
        }
    }

    /// The answer of an attempt that ended so: `sent` is the provider's, None when the
    /// review's cancel closed the connection first.
    fn of(record: AttemptRecord, sent: Option<Sent>) -> Answer {
        match sent {
            Some(s) if record.outcome == Outcome::Ok => match s.extracted {
                Some(findings) => Answer::Findings { record, findings },
                None => Answer::ToolCalls {
                    record,
                    text: s.text,
                    calls: s.calls,
                },
            },
            Some(s) => Answer::Failed(Failure {
                record,
                partial: s.extracted,
                cut: s.cut,
            }),
            None => Answer::Failed(Failure {
                record,
                partial: None,
                cut: false,
            }),
        }
    }
}

/// What the provider's answer held besides its record.
struct Sent {
    extracted: Option<Extracted>,
    text: String,
    calls: Vec<ToolCall>,
    cut: bool,
}

impl Sent {
    fn split(a: Attempt) -> (AttemptRecord, Sent) {
        let cut = a.finish.as_ref().is_some_and(|f| f.is_cut());
        let sent = Sent {
            extracted: a.extracted,
            text: a.text,
            calls: a.calls,
            cut,
        };
        (a.record, sent)
    }
}

/// One attempt on the slot's route: it starts (event), the request goes out under its
/// deadline, the route learns from the outcome and gives its permit back, the outcome
/// is said and logged on the unit. `now`: when the unit took the slot.
pub(super) async fn attempt(
    sh: &Shared<'_>,
    u: &mut UnitRun<'_>,
    slot: Slot,
    now: Instant,
    hunk_end: Instant,
) -> Answer {
    let route = &sh.engine.routes[slot.route];
    let (number, deadline) = begin(sh, u, &slot, now, hunk_end);
    let req = request(sh, u, deadline);
    let (sent, load) = send(sh, route, &req).await;
    let finished = Instant::now();
    let (mut record, sent) = match sent {
        Some(a) => {
            let (record, sent) = Sent::split(a);
            (record, Some(sent))
        }
        None => {
            let ran = finished.saturating_duration_since(now);
            (cancelled_record(sh, slot.route, &req, ran), None)
        }
    };
    budget_cut(sh, &mut record, finished);
    let probe = slot.hold.probe();
    let reservation = settle_route(sh, slot, &record, now, load, finished).await;
    report(sh, u.index(), number, route, &record);
    let chars = req.prompt.chars() + u.looping.as_ref().map_or(0, |l| l.chars());
    let cost_usd = account_cost(sh, route, chars, &record, reservation);
    u.result.attempts.push(AttemptLog {
        number,
        started: now.saturating_duration_since(sh.start),
        probe,
        cost_usd,
        record: record.clone(),
    });
    Answer::of(record, sent)
}

/// Rule 1: the attempt's deadline, the least of the request deadline and what is left of
/// the unit's and the review's budgets. Numbers the attempt, notes its route on the unit
/// and says it started. Returns its number and deadline.
fn begin(
    sh: &Shared,
    u: &mut UnitRun,
    slot: &Slot,
    now: Instant,
    hunk_end: Instant,
) -> (u32, Duration) {
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
        reason: slot.reason.clone(),
        deadline,
        hunk_remaining,
        review_remaining,
        breaker: slot.breaker,
        probe: slot.hold.probe(),
    });
    (number, deadline)
}

/// The request: the unit's prompt, its tool transcript, its output cap, under `deadline`.
fn request(sh: &Shared, u: &UnitRun, deadline: Duration) -> AttemptRequest {
    let mut req = AttemptRequest::new((*u.work.prompt).clone(), u.work.lines, sh.limits(deadline));
    req.path = Some(u.work.labels.path.clone());
    req.conversation = u.looping.as_ref().and_then(|l| l.conversation());
    req.output_cap = u.output_cap;
    req
}

/// Rule 3: sends the request, counted in flight, cancelled with the review (None).
/// Returns the answer and the route's load when it started (itself included).
async fn send(sh: &Shared<'_>, route: &Route, req: &AttemptRequest) -> (Option<Attempt>, usize) {
    sh.in_flight.fetch_add(1, Ordering::SeqCst);
    let load = route.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    let result = tokio::select! {
        biased;
        _ = sh.cancel.cancelled() => None,
        a = route.provider.attempt(req) => Some(a),
    };
    // Dropping the attempt's future above has already closed its connection.
    sh.in_flight.fetch_sub(1, Ordering::SeqCst);
    route.in_flight.fetch_sub(1, Ordering::SeqCst);
    (result, load)
}

/// A timeout whose deadline was the review's: the review budget cut it, not the route.
fn budget_cut(sh: &Shared, record: &mut AttemptRecord, finished: Instant) {
    if record.outcome == Outcome::Timeout && sh.budget_spent(finished) {
        record.outcome = Outcome::Cancelled;
        record.stage = None;
        record.reason = "cancelled: the review budget ran out during the attempt".into();
    }
}

/// What the route learns from the attempt, in order: its limit and pacing, the fleet's
/// windows, its permit back, then a dead route and the breaker's verdict. Returns the
/// attempt's cost reservation, to settle.
async fn settle_route(
    sh: &Shared<'_>,
    slot: Slot,
    record: &AttemptRecord,
    started: Instant,
    load: usize,
    finished: Instant,
) -> Reservation {
    let route = &sh.engine.routes[slot.route];
    adapt_limit(sh, slot.route, record, started, load);
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
    judge(sh, slot.route, record, slot.hold, finished).await;
    slot.reservation
}

/// The breaker's verdict on the attempt, and a route dead for the run (§14). Back-pressure
/// and corrections are no verdict on the route's health (section 13): the breaker gets
/// back what it reserved and counts nothing, as for a cancelled attempt.
async fn judge(
    sh: &Shared<'_>,
    index: usize,
    record: &AttemptRecord,
    hold: Hold,
    finished: Instant,
) {
    let name = &sh.engine.routes[index].name;
    let verdict_outcome = if super::resend::no_verdict(record) {
        Outcome::Cancelled
    } else {
        record.outcome
    };
    // §14: a probe that cannot connect after attempts that could not: dead for the run.
    // Taken in before the breaker's verdict wakes the units waiting for it, so they see
    // whether the probe failed with a fact (§15).
    let dead = sh.engine.dead.record(index, record, hold.probe());
    let verdict = sh
        .engine
        .breakers
        .record_async(index, finished, verdict_outcome, hold)
        .await;
    if let Some(t) = verdict {
        announce(sh, name, t);
    }
    if let Some(dead) = dead {
        let reason = format!(
            "dead for the run: {} (its half-open probe could not connect either)",
            dead.describe()
        );
        if let Some(t) = sh.engine.breakers.force_open(index, finished, reason) {
            announce(sh, name, t);
        }
    }
}

/// The attempt ended: the event that says how, and the warnings its answer carries.
fn report(sh: &Shared, unit: usize, number: u32, route: &Route, record: &AttemptRecord) {
    sh.sink.emit(Event::AttemptFinished {
        unit,
        attempt: number,
        record: record.clone(),
    });
    warn_of_gateway(sh, route, record);
    if let Some(message) = &record.warning {
        sh.sink.emit(Event::Warning {
            route: route.name.clone(),
            message: message.clone(),
        });
    }
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
    route: &Route,
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
fn warn_of_gateway(sh: &Shared, route: &Route, record: &AttemptRecord) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::FinishReason;

    fn provider_answer(outcome: Outcome, extracted: Option<Extracted>) -> Attempt {
        let mut record = AttemptRecord::new("r", "sim", "m", Duration::from_secs(1));
        record.outcome = outcome;
        let mut a = Attempt::new(record, extracted);
        a.text = "looking".into();
        a.calls = vec![ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: "{}".into(),
        }];
        a
    }

    fn answer(a: Attempt) -> Answer {
        let (record, sent) = Sent::split(a);
        Answer::of(record, Some(sent))
    }

    #[test]
    fn an_ok_answer_is_findings_when_it_holds_them_else_its_tool_calls() {
        let with = answer(provider_answer(Outcome::Ok, Some(Extracted::default())));
        assert!(matches!(with, Answer::Findings { .. }));
        match answer(provider_answer(Outcome::Ok, None)) {
            Answer::ToolCalls { text, calls, .. } => {
                assert_eq!(text, "looking");
                assert_eq!(calls.len(), 1);
                assert_eq!(calls[0].name, "read_file");
            }
            _ => panic!("an ok answer without findings is a turn of tool calls"),
        }
    }

    #[test]
    fn a_failed_answer_keeps_its_partial_findings_and_says_whether_it_was_cut() {
        let mut a = provider_answer(Outcome::BadResponse, Some(Extracted::default()));
        a.finish = Some(FinishReason::Length);
        match answer(a) {
            Answer::Failed(f) => {
                assert!(f.cut);
                assert!(f.partial.is_some());
                assert_eq!(f.record.outcome, Outcome::BadResponse);
            }
            _ => panic!("a bad response is a failure"),
        }
        let mut a = provider_answer(Outcome::Unavailable, None);
        a.finish = Some(FinishReason::Stop);
        let Answer::Failed(f) = answer(a) else {
            panic!("an unavailable route is a failure");
        };
        assert!(!f.cut && f.partial.is_none());
    }

    #[test]
    fn an_attempt_the_review_cancelled_is_a_failure_without_findings() {
        let mut record = AttemptRecord::new("r", "sim", "m", Duration::from_secs(1));
        record.outcome = Outcome::Cancelled;
        let a = Answer::of(record, None);
        assert_eq!(a.record().outcome, Outcome::Cancelled);
        let Answer::Failed(f) = a else {
            panic!("a cancelled attempt is a failure");
        };
        assert!(!f.cut && f.partial.is_none());
    }
}
