//! Per-route figures for every report: calls and outcomes, retries and failovers, and
//! p50/p95/max of attempt duration and time to first token (hdrhistogram).

use super::{AttemptReport, UnitReport};
use crate::engine::{BreakerState, EngineReport, RouteSummary, UnitStatus};
use crate::provider::{Outcome, Stage};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A route's timeouts by the clock that ran out.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct TimeoutsByStage {
    /// TCP/TLS connect.
    pub connect: usize,
    /// Time to first token.
    pub first_token: usize,
    /// Between tokens.
    pub idle: usize,
    /// The attempt's whole deadline.
    pub total: usize,
}

/// A route's breaker at the end of the run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BreakerReport {
    /// Its state.
    pub state: BreakerState,
    /// Times it opened.
    pub opens: u32,
    /// Time spent not closed.
    pub time_open_ms: u64,
}

/// One route's figures over the run (review and verification passes).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RouteMetrics {
    /// Attempts sent to this route (cancelled ones included).
    pub calls: usize,
    /// Attempts answered and parsed.
    pub ok: usize,
    /// Attempts timed out.
    pub timeouts: usize,
    /// Timeouts by clock.
    pub timeouts_by_stage: TimeoutsByStage,
    /// Attempts the provider could not serve (5xx, 529, connect errors, cut streams).
    pub unavailable: usize,
    /// Attempts answered 429.
    pub rate_limited: usize,
    /// auth, invalid_model, quota, bad_request, bad_response.
    pub failed: usize,
    /// Attempts cancelled (budget expiry or a signal).
    pub cancelled: usize,
    /// Attempts that repeated this route for the same unit after a failed one (a tool
    /// loop's next turn is no retry: see `turns`).
    pub retries: usize,
    /// Attempts that were a tool loop's next turn (the unit's attempt before was
    /// answered): work, not retries (docs/design.md §15).
    #[serde(default)]
    pub turns: usize,
    /// Units that moved away from / to this route after a failure.
    pub failovers_from: usize,
    /// Units that moved to this route after a failure elsewhere.
    pub failovers_to: usize,
    /// Median attempt duration (cancelled ones left out).
    pub p50_ms: Option<u64>,
    /// 95th percentile attempt duration.
    pub p95_ms: Option<u64>,
    /// Longest attempt.
    pub max_ms: Option<u64>,
    /// Median time to first token (streaming).
    pub ttft_p50_ms: Option<u64>,
    /// 95th percentile time to first token.
    pub ttft_p95_ms: Option<u64>,
    /// Units that tried this route and ended without a review.
    pub units_not_reviewed: usize,
    /// The most attempts in flight at once.
    pub peak_in_flight: usize,
    /// Its bulkhead size.
    pub max_concurrency: usize,
    /// Prompt tokens, as providers reported them.
    pub input_tokens: u64,
    /// Answer tokens, as providers reported them (reasoning included).
    pub output_tokens: u64,
    /// Prompt tokens read from the providers' prompt caches (part of `input_tokens`).
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Prompt tokens written to the caches (part of `input_tokens`).
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Hidden reasoning tokens (part of `output_tokens`).
    #[serde(default)]
    pub reasoning_tokens: u64,
    /// Cached reads ÷ input tokens (0 when no input was reported).
    #[serde(default)]
    pub cache_hit_share: f64,
    /// Cost, when providers report it (OpenRouter: USD credits).
    pub cost: Option<f64>,
    /// What this route's attempts cost, USD (provider-reported, else tokens at the
    /// route's prices; unknown counts as nothing).
    #[serde(default)]
    pub cost_usd: f64,
    /// Its breaker.
    pub breaker: BreakerReport,
    /// Its effective limit under `maxConcurrency` over the run (docs/design.md section 13),
    /// when the review's events were followed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<super::LimitFigures>,
    /// Its answers of back-pressure and the time its new attempts were paused.
    #[serde(default)]
    pub backpressure: super::BackpressureFigures,
}

/// Cached reads as a share of input tokens, to three places (0 without input).
pub(super) fn hit_share(cached: u64, input: u64) -> f64 {
    if input == 0 {
        return 0.0;
    }
    (cached.min(input) as f64 / input as f64 * 1000.0).round() / 1000.0
}

pub(super) fn percentiles(values: &[u64]) -> (Option<u64>, Option<u64>, Option<u64>) {
    if values.is_empty() {
        return (None, None, None);
    }
    let mut h = Histogram::<u64>::new(3).expect("3 significant figures is valid");
    for v in values {
        h.record(*v)
            .expect("auto-resizing histogram records any value");
    }
    (
        Some(h.value_at_quantile(0.5)),
        Some(h.value_at_quantile(0.95)),
        Some(h.max()),
    )
}

/// Figures per route over the review's units and, when it ran, the verification pass
/// (its requests count too).
pub(super) fn route_metrics(
    engine: &EngineReport,
    units: &[UnitReport],
    verification: Option<&EngineReport>,
) -> BTreeMap<String, RouteMetrics> {
    let later: Vec<AttemptReport> = verification
        .iter()
        .flat_map(|v| &v.units)
        .flat_map(|u| &u.attempts)
        .map(AttemptReport::from)
        .collect();
    let attempts: Vec<&AttemptReport> = units
        .iter()
        .flat_map(|u| &u.attempts)
        .chain(&later)
        .collect();
    let later_units: Vec<Vec<AttemptReport>> = verification
        .iter()
        .flat_map(|v| &v.units)
        .map(|u| u.attempts.iter().map(AttemptReport::from).collect())
        .collect();
    let tried: Vec<Vec<&AttemptReport>> = units
        .iter()
        .map(|u| u.attempts.iter().collect())
        .chain(later_units.iter().map(|a| a.iter().collect()))
        .collect();
    engine
        .route_order
        .iter()
        .map(|name| {
            // Passes share one route state, so the last pass's summary covers the run.
            let summary = verification
                .and_then(|v| v.routes.get(name))
                .unwrap_or(&engine.routes[name]);
            let mine: Vec<&AttemptReport> = attempts
                .iter()
                .copied()
                .filter(|a| &a.route == name)
                .collect();
            let not_reviewed = units
                .iter()
                .filter(|u| u.status != UnitStatus::Reviewed && u.routes_tried.contains(name))
                .count();
            let figures = figures(name, &mine, &tried, summary, not_reviewed);
            (name.clone(), figures)
        })
        .collect()
}

/// What a unit's attempt after another was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Next {
    /// A tool loop's next turn: the attempt before was answered.
    Turn,
    /// The same route again after a failed attempt.
    Retry,
    /// Another route after a failed attempt.
    Failover,
}

/// How the attempt `next` followed `prev` of the same unit.
pub(super) fn next_kind(prev: &AttemptReport, next: &AttemptReport) -> Next {
    if prev.outcome == Outcome::Ok {
        Next::Turn
    } else if prev.route == next.route {
        Next::Retry
    } else {
        Next::Failover
    }
}

/// Retries and turns on the route, and moves away from and to it, over every unit's
/// attempts.
fn moves(name: &str, tried: &[Vec<&AttemptReport>]) -> Moves {
    let mut m = Moves::default();
    for w in tried.iter().flat_map(|t| t.windows(2)) {
        match next_kind(w[0], w[1]) {
            Next::Turn if w[1].route == name => m.turns += 1,
            Next::Retry if w[0].route == name => m.retries += 1,
            Next::Failover if w[0].route == name => m.from += 1,
            Next::Failover if w[1].route == name => m.to += 1,
            _ => {}
        }
    }
    m
}

#[derive(Default)]
struct Moves {
    retries: usize,
    turns: usize,
    from: usize,
    to: usize,
}

fn figures(
    name: &str,
    attempts: &[&AttemptReport],
    tried: &[Vec<&AttemptReport>],
    summary: &RouteSummary,
    units_not_reviewed: usize,
) -> RouteMetrics {
    let count = |o: Outcome| attempts.iter().filter(|a| a.outcome == o).count();
    let stage = |s: Stage| {
        attempts
            .iter()
            .filter(|a| a.outcome == Outcome::Timeout && a.stage == Some(s))
            .count()
    };
    let durations: Vec<u64> = attempts
        .iter()
        .filter(|a| a.outcome != Outcome::Cancelled)
        .map(|a| a.duration_ms)
        .collect();
    let ttfts: Vec<u64> = attempts.iter().filter_map(|a| a.ttft_ms).collect();
    let (p50, p95, max) = percentiles(&durations);
    let (t50, t95, _) = percentiles(&ttfts);
    let Moves {
        retries,
        turns,
        from,
        to,
    } = moves(name, tried);
    let costs: Vec<f64> = attempts.iter().filter_map(|a| a.cost).collect();
    let input: u64 = attempts.iter().filter_map(|a| a.input_tokens).sum();
    let cached: u64 = attempts.iter().filter_map(|a| a.cached_input_tokens).sum();
    RouteMetrics {
        calls: attempts.len(),
        ok: count(Outcome::Ok),
        timeouts: count(Outcome::Timeout),
        timeouts_by_stage: TimeoutsByStage {
            connect: stage(Stage::Connect),
            first_token: stage(Stage::FirstToken),
            idle: stage(Stage::Idle),
            total: stage(Stage::Total),
        },
        unavailable: count(Outcome::Unavailable),
        rate_limited: count(Outcome::RateLimited),
        failed: attempts.iter().filter(|a| a.outcome.is_failure()).count(),
        cancelled: count(Outcome::Cancelled),
        retries,
        turns,
        failovers_from: from,
        failovers_to: to,
        p50_ms: p50,
        p95_ms: p95,
        max_ms: max,
        ttft_p50_ms: t50,
        ttft_p95_ms: t95,
        units_not_reviewed,
        peak_in_flight: summary.peak_in_flight,
        max_concurrency: summary.max_concurrency,
        input_tokens: input,
        output_tokens: attempts.iter().filter_map(|a| a.output_tokens).sum(),
        cached_input_tokens: cached,
        cache_write_tokens: attempts.iter().filter_map(|a| a.cache_write_tokens).sum(),
        reasoning_tokens: attempts.iter().filter_map(|a| a.reasoning_tokens).sum(),
        cache_hit_share: hit_share(cached, input),
        cost: (!costs.is_empty()).then(|| costs.iter().sum()),
        cost_usd: super::usd(attempts.iter().filter_map(|a| a.cost_usd).sum()),
        breaker: BreakerReport {
            state: summary.breaker,
            opens: summary.opens,
            time_open_ms: summary.time_open.as_millis() as u64,
        },
        limit: None,
        backpressure: Default::default(),
    }
}
