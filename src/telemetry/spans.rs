//! Spans from events: `warden.review` ⊃ `warden.unit` ⊃ `warden.attempt`, with the
//! OpenTelemetry GenAI attribute names where they exist and `warden.` for ours, plus one
//! tracing event per retry, failover, breaker transition, rejected route and expired
//! budget. The engine does not trace; this consumer turns its events into spans, so the
//! trace and every other view of the run say the same thing.

use crate::engine::{Event, ReviewInfo, UnitInfo, UnitResult};
use crate::provider::AttemptRecord;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing::Span;
use tracing::field::Empty;

/// Open spans by what they describe.
#[derive(Default)]
struct Open {
    review: Option<Span>,
    units: HashMap<usize, (Span, Arc<UnitInfo>)>,
    attempts: HashMap<(usize, u32), Span>,
}

/// The span consumer. With `content`, prompts go on attempt spans (opt-in).
pub(crate) struct Spans {
    content: bool,
    open: Mutex<Open>,
}

/// Integers go in as i64: OTLP has no unsigned type, and exporters turn u64 into text.
fn ms(d: Duration) -> i64 {
    d.as_millis() as i64
}

impl Spans {
    pub(crate) fn new(content: bool) -> Self {
        Spans {
            content,
            open: Mutex::new(Open::default()),
        }
    }

    pub(crate) fn on_event(&self, e: &Event) {
        let mut open = self.open.lock().expect("span lock");
        let review = open.review.clone().unwrap_or_else(Span::none);
        match e {
            Event::ReviewStarted(info) => open.review = Some(review_span(info)),
            Event::UnitQueued { unit, info } => {
                let span = unit_span(&review, *unit, info);
                open.units.insert(*unit, (span, info.clone()));
            }
            Event::AttemptStarted { unit, attempt, .. } => {
                let Some((parent, info)) = open.units.get(unit) else {
                    return;
                };
                let span = attempt_span(parent, e);
                if self.content {
                    span.record("warden.prompt", info.prompt.user.as_str());
                }
                open.attempts.insert((*unit, *attempt), span);
            }
            Event::AttemptFinished {
                unit,
                attempt,
                record,
            } => {
                if let Some(span) = open.attempts.remove(&(*unit, *attempt)) {
                    record_attempt(&span, record);
                }
            }
            Event::ToolCalled { unit, .. } => {
                if let Some((parent, _)) = open.units.get(unit) {
                    tool_span(parent, e);
                }
            }
            Event::UnitFinished { unit, result } => {
                if let Some((span, _)) = open.units.remove(unit) {
                    record_unit(&span, result);
                }
            }
            Event::ReviewFinished { outcome, reviewed } => {
                if let Some(span) = open.review.take() {
                    span.record("warden.outcome", outcome.as_str());
                    span.record("warden.reviewed", *reviewed as i64);
                }
            }
            _ => note(e, open.units.get(&unit_of(e)).map_or(&review, |u| &u.0)),
        }
    }
}

/// The unit an event is about (`usize::MAX` for run-level events).
fn unit_of(e: &Event) -> usize {
    match e {
        Event::RouteSkipped { unit, .. }
        | Event::Retry { unit, .. }
        | Event::Failover { unit, .. }
        | Event::BackPressure { unit, .. } => *unit,
        _ => usize::MAX,
    }
}

/// The tracing events: decisions and transitions, inside the span they concern.
fn note(e: &Event, parent: &Span) {
    match e {
        Event::RouteSkipped { route, breaker, .. } => tracing::info!(
            name: "warden.route.rejected",
            parent: parent,
            route = %route,
            breaker_state = breaker.as_str(),
            "breaker does not admit calls; trying the next route"
        ),
        Event::Retry {
            route,
            reason,
            wait,
            ..
        } => tracing::info!(
            name: "warden.retry",
            parent: parent,
            route = %route,
            wait_ms = ms(*wait),
            reason = %reason
        ),
        Event::Failover {
            from, to, reason, ..
        } => tracing::info!(
            name: "warden.failover",
            parent: parent,
            from = %from,
            to = %to,
            reason = %reason
        ),
        Event::Breaker {
            route,
            from,
            to,
            reason,
        } => tracing::info!(
            name: "warden.breaker.transition",
            parent: parent,
            route = %route,
            breaker_from = from.as_str(),
            breaker_to = to.as_str(),
            reason = %reason
        ),
        Event::BudgetExpired { in_flight } => tracing::warn!(
            name: "warden.budget.expired",
            parent: parent,
            in_flight = *in_flight as i64,
            "review budget expired; cancelling attempts in flight"
        ),
        // Section 13: the route's effective limit, its answers of back-pressure, its pauses.
        Event::LimitChanged {
            route,
            limit,
            ceiling,
            reason,
            ..
        } => tracing::info!(
            name: "warden.limit.changed",
            parent: parent,
            route = %route,
            limit = *limit as i64,
            ceiling = *ceiling as i64,
            reason = reason.as_str()
        ),
        Event::BackPressure {
            route,
            bounce,
            retry_after,
            ..
        } => tracing::info!(
            name: "warden.backpressure",
            parent: parent,
            route = %route,
            bounce = i64::from(*bounce),
            retry_after_ms = retry_after.map_or(-1, ms)
        ),
        Event::RoutePaused {
            route,
            until,
            at,
            reason,
            ..
        } => tracing::info!(
            name: "warden.route.paused",
            parent: parent,
            route = %route,
            paused_ms = ms(until.saturating_sub(*at)),
            reason = reason.as_str()
        ),
        Event::Warning { route, message } => tracing::warn!(
            name: "warden.warning",
            parent: parent,
            route = %route,
            message = %message
        ),
        _ => {}
    }
}

fn review_span(info: &ReviewInfo) -> Span {
    tracing::info_span!(
        parent: None,
        "warden.review",
        warden.target = %info.target,
        warden.units = info.units as i64,
        warden.review_budget_ms = ms(info.review_budget),
        warden.hunk_budget_ms = ms(info.hunk_budget),
        warden.request_timeout_ms = ms(info.request_timeout),
        warden.outcome = Empty,
        warden.reviewed = Empty,
    )
}

fn unit_span(review: &Span, index: usize, info: &UnitInfo) -> Span {
    let l = &info.labels;
    tracing::info_span!(
        parent: review,
        "warden.unit",
        warden.unit.index = index as i64,
        warden.skill = %l.skill,
        code.file.path = %l.path,
        warden.start_line = i64::from(info.lines.0),
        warden.end_line = i64::from(info.lines.1),
        warden.priority = i64::from(l.priority),
        warden.optional = info.optional,
        warden.status = Empty,
        warden.route = Empty,
        warden.findings = Empty,
        warden.status_reason = Empty,
    )
}

/// One tool call of a unit's loop (docs/design.md §14): the GenAI conventions' `execute_tool`
/// span, closed at once (the call already ran; its duration is recorded).
fn tool_span(unit: &Span, e: &Event) {
    let Event::ToolCalled {
        turn,
        tool,
        bytes,
        error,
        repeat,
        duration,
        ..
    } = e
    else {
        return;
    };
    let _span = tracing::info_span!(
        parent: unit,
        "warden.tool",
        otel.name = %format!("execute_tool {tool}"),
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %tool,
        warden.turn = i64::from(*turn),
        warden.bytes = *bytes as i64,
        warden.duration_ms = ms(*duration),
        warden.tool_error = *error,
        warden.repeat = *repeat,
    );
}

fn attempt_span(unit: &Span, e: &Event) -> Span {
    let Event::AttemptStarted {
        attempt,
        route,
        provider,
        model,
        reason,
        deadline,
        hunk_remaining,
        review_remaining,
        breaker,
        probe,
        ..
    } = e
    else {
        return Span::none();
    };
    let (reason_kind, reason_detail) = reason.describe();
    tracing::info_span!(
        parent: unit,
        "warden.attempt",
        otel.name = %format!("chat {model}"),
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = *provider,
        gen_ai.request.model = %model,
        gen_ai.response.model = Empty,
        gen_ai.response.id = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        http.response.status_code = Empty,
        warden.route = %route,
        warden.attempt = i64::from(*attempt),
        warden.deadline_ms = ms(*deadline),
        warden.hunk_remaining_ms = ms(*hunk_remaining),
        warden.review_remaining_ms = ms(*review_remaining),
        warden.attempt_reason = reason_kind,
        warden.attempt_reason_detail = %reason_detail,
        warden.breaker_state = breaker.as_str(),
        warden.probe = *probe,
        warden.headers_ms = Empty,
        warden.ttft_ms = Empty,
        warden.first_content_ms = Empty,
        warden.duration_ms = Empty,
        warden.bytes = Empty,
        warden.cost = Empty,
        warden.outcome = Empty,
        warden.stage = Empty,
        warden.outcome_reason = Empty,
        warden.prompt = Empty,
    )
}

/// Stamps what the attempt measured onto its span.
fn record_attempt(span: &Span, r: &AttemptRecord) {
    span.record("warden.outcome", r.outcome.as_str());
    span.record("warden.outcome_reason", r.reason.as_str());
    span.record("warden.duration_ms", ms(r.duration));
    span.record("warden.bytes", r.bytes as i64);
    if let Some(s) = r.stage {
        span.record("warden.stage", s.as_str());
    }
    if let Some(m) = &r.model_answered {
        span.record("gen_ai.response.model", m.as_str());
    }
    if let Some(id) = &r.request_id {
        span.record("gen_ai.response.id", id.as_str());
    }
    if let Some(s) = r.http_status {
        span.record("http.response.status_code", i64::from(s));
    }
    if let Some(h) = r.headers {
        span.record("warden.headers_ms", ms(h));
    }
    if let Some(t) = r.ttft {
        span.record("warden.ttft_ms", ms(t));
    }
    if let Some(t) = r.first_content {
        span.record("warden.first_content_ms", ms(t));
    }
    if let Some(u) = r.usage {
        if let Some(i) = u.input_tokens {
            span.record("gen_ai.usage.input_tokens", i as i64);
        }
        if let Some(o) = u.output_tokens {
            span.record("gen_ai.usage.output_tokens", o as i64);
        }
        if let Some(c) = u.cost {
            span.record("warden.cost", c);
        }
    }
}

fn record_unit(span: &Span, r: &UnitResult) {
    span.record("warden.status", r.status.as_str());
    span.record("warden.status_reason", r.reason.as_str());
    span.record("warden.findings", r.findings.len() as i64);
    if let Some(route) = &r.route {
        span.record("warden.route", route.as_str());
    }
    if r.status == crate::engine::UnitStatus::Skipped {
        tracing::info!(name: "warden.unit.skipped", parent: span, reason = %r.reason);
    }
}
