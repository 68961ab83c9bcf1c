//! `warden merge`: the shard reports of one review (`--shard K/N`) joined into the whole
//! review's report. Units go back to plan order (shard K holds plan positions K-1, K-1+N,
//! ...), findings are deduplicated and sorted as one review would, route figures are
//! summed, and the outcome is recomputed. A shard that never reported makes the review
//! partial and is named; reports of different plans are refused.

use super::build::{counters, sort_findings};
use super::metrics::percentiles;
use super::{
    MissingShard, Report, RouteMetrics, SCHEMA_VERSION, Source, Summary, UnitReport, dedupe,
};
use crate::engine::{BreakerState, CacheLevel};
use crate::error::{Error, Result};
use crate::provider::Outcome;
use crate::shard::Shard;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn bad(path: &Path, message: impl Into<String>) -> Error {
    Error::Merge {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// Reads one shard report; an unsharded report counts as shard 1/1.
fn parse(path: &Path, text: &str) -> Result<(Shard, Report)> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        bad(
            path,
            format!("not JSON ({e}): give the report of `warden review --json`"),
        )
    })?;
    match value.get("schemaVersion").and_then(|v| v.as_u64()) {
        Some(v) if v == u64::from(SCHEMA_VERSION) => {}
        other => {
            return Err(bad(
                path,
                format!(
                    "schemaVersion {} is not {SCHEMA_VERSION}: give a JSON report of this warden version",
                    other.map_or("missing".to_string(), |v| v.to_string())
                ),
            ));
        }
    }
    let report: Report = serde_json::from_value(value)
        .map_err(|e| bad(path, format!("not a warden review report: {e}")))?;
    let shard = report.shard.unwrap_or(Shard {
        index: 1,
        count: 1,
        plan_units: report.units.len(),
    });
    Ok((shard, report))
}

/// Joins shard reports (each given as its file and text) into the whole review's report.
pub fn merge(inputs: &[(PathBuf, String)]) -> Result<Report> {
    let mut shards: BTreeMap<usize, (PathBuf, Shard, Report)> = BTreeMap::new();
    let mut first: Option<(PathBuf, Shard, String)> = None;
    for (path, text) in inputs {
        let (shard, report) = parse(path, text)?;
        match &first {
            None => first = Some((path.clone(), shard, report.plan_fingerprint.clone())),
            Some((p0, s0, fp0)) => {
                if *fp0 != report.plan_fingerprint
                    || s0.count != shard.count
                    || s0.plan_units != shard.plan_units
                {
                    return Err(bad(
                        path,
                        format!(
                            "a report of a different plan (fingerprint {}, shard {shard}) than {} (fingerprint {fp0}, shard {s0}): merge only the shards of one review",
                            report.plan_fingerprint,
                            p0.display()
                        ),
                    ));
                }
            }
        }
        if let Some((other, _, _)) = shards.get(&shard.index) {
            return Err(bad(
                path,
                format!(
                    "shard {shard} is given twice (also {}): give each shard once",
                    other.display()
                ),
            ));
        }
        shards.insert(shard.index, (path.clone(), shard, report));
    }
    let Some((_, whole, _)) = first else {
        return Err(Error::Usage(
            "warden merge needs at least one report".into(),
        ));
    };
    Ok(join(
        whole,
        shards.into_values().map(|(_, _, r)| r).collect(),
    ))
}

/// Joins checked shard reports (sorted by shard index) of one plan.
fn join(whole: Shard, reports: Vec<Report>) -> Report {
    let missing: Vec<MissingShard> = (1..=whole.count)
        .filter(|k| !reports.iter().any(|r| shard_index(r) == *k))
        .map(|k| MissingShard {
            index: k,
            count: whole.count,
            units: Shard::units_of(k, whole.count, whole.plan_units),
        })
        .collect();
    let mut units = plan_order(whole, &reports);
    let mut summary = Summary {
        units: whole.plan_units,
        findings_dropped: reports.iter().map(|r| r.summary.findings_dropped).sum(),
        findings_cut: reports.iter().map(|r| r.summary.findings_cut).sum(),
        ..Summary::default()
    };
    summary.tool_loops = super::ToolLoops::of(&units);
    for u in &units {
        summary.count(u.status);
        summary.from_cache += usize::from(u.source == Source::Cache);
        summary.from_shared_cache += usize::from(u.cache_level == Some(CacheLevel::Shared));
    }
    // A missing shard's units never ran here: they are counted as skipped.
    summary.skipped += missing.iter().map(|m| m.units).sum::<usize>();
    summary.findings_dropped += dedupe::remove_duplicates(&mut units);
    let mut findings: Vec<_> = units.iter().flat_map(|u| u.findings.clone()).collect();
    sort_findings(&mut findings);
    summary.findings = findings.len();
    let counters = counters(&units, &summary);
    let routes = merge_routes(&reports, &units);
    summary.cost_usd = super::usd(reports.iter().map(|r| r.summary.cost_usd).sum());
    let idle_slot_minutes = reports.iter().map(|r| r.routing.idle_slot_minutes).sum();
    let verification = merge_verification(&reports);
    // Shards run side by side: the review took as long as its slowest shard.
    let duration_ms = reports.iter().map(|r| r.duration_ms).max().unwrap_or(0);
    let budget_expired = reports.iter().any(|r| r.budget_expired);
    let interrupted = reports.iter().any(|r| r.interrupted);
    // Every shard's warnings, each once (shards share a config, so its warnings repeat).
    let mut warnings = Vec::new();
    for w in reports.iter().flat_map(|r| &r.warnings) {
        if !warnings.contains(w) {
            warnings.push(w.clone());
        }
    }
    let dropped: Vec<_> = reports
        .iter()
        .flat_map(|r| r.dropped_findings.iter().cloned())
        .collect();
    let mut base = reports.into_iter().next().expect("at least one report");
    base.dropped_findings = dropped;
    base.outcome = summary.outcome();
    base.summary = summary;
    base.counters = counters;
    base.units = units;
    base.findings = findings;
    base.routes = routes;
    base.routing.idle_slot_minutes = idle_slot_minutes;
    base.routing.hint = None;
    base.verification = verification;
    base.duration_ms = duration_ms;
    base.budget_expired = budget_expired;
    base.interrupted = interrupted;
    base.shard = None;
    base.missing_shards = missing;
    base.warnings = warnings;
    base
}

fn shard_index(r: &Report) -> usize {
    r.shard.map_or(1, |s| s.index)
}

/// Units back in plan order: plan position p is unit p / N of shard p % N + 1.
fn plan_order(whole: Shard, reports: &[Report]) -> Vec<UnitReport> {
    let by_index: BTreeMap<usize, &Report> = reports.iter().map(|r| (shard_index(r), r)).collect();
    (0..whole.plan_units)
        .filter_map(|p| {
            let r = by_index.get(&(p % whole.count + 1))?;
            r.units.get(p / whole.count).cloned()
        })
        .collect()
}

/// Route figures summed over the shards; percentiles recomputed from the units' attempts
/// (the review pass's); peaks and breakers taken at their highest.
fn merge_routes(reports: &[Report], units: &[UnitReport]) -> BTreeMap<String, RouteMetrics> {
    let mut out: BTreeMap<String, RouteMetrics> = BTreeMap::new();
    for r in reports {
        for (name, m) in &r.routes {
            match out.get_mut(name) {
                None => {
                    out.insert(name.clone(), m.clone());
                }
                Some(acc) => add_route(acc, m),
            }
        }
    }
    for (name, m) in out.iter_mut() {
        let attempts = units
            .iter()
            .flat_map(|u| &u.attempts)
            .filter(|a| &a.route == name);
        let durations: Vec<u64> = attempts
            .clone()
            .filter(|a| a.outcome != Outcome::Cancelled)
            .map(|a| a.duration_ms)
            .collect();
        let ttfts: Vec<u64> = attempts.filter_map(|a| a.ttft_ms).collect();
        if !durations.is_empty() {
            let (p50, p95, _) = percentiles(&durations);
            (m.p50_ms, m.p95_ms) = (p50, p95);
        }
        if !ttfts.is_empty() {
            let (t50, t95, _) = percentiles(&ttfts);
            (m.ttft_p50_ms, m.ttft_p95_ms) = (t50, t95);
        }
    }
    out
}

fn add_route(acc: &mut RouteMetrics, m: &RouteMetrics) {
    acc.calls += m.calls;
    acc.ok += m.ok;
    acc.timeouts += m.timeouts;
    acc.timeouts_by_stage.connect += m.timeouts_by_stage.connect;
    acc.timeouts_by_stage.first_token += m.timeouts_by_stage.first_token;
    acc.timeouts_by_stage.idle += m.timeouts_by_stage.idle;
    acc.timeouts_by_stage.total += m.timeouts_by_stage.total;
    acc.unavailable += m.unavailable;
    acc.rate_limited += m.rate_limited;
    acc.failed += m.failed;
    acc.cancelled += m.cancelled;
    acc.retries += m.retries;
    acc.turns += m.turns;
    acc.failovers_from += m.failovers_from;
    acc.failovers_to += m.failovers_to;
    acc.max_ms = acc.max_ms.max(m.max_ms);
    acc.units_not_reviewed += m.units_not_reviewed;
    acc.peak_in_flight = acc.peak_in_flight.max(m.peak_in_flight);
    acc.max_concurrency = acc.max_concurrency.max(m.max_concurrency);
    acc.input_tokens += m.input_tokens;
    acc.output_tokens += m.output_tokens;
    acc.cached_input_tokens += m.cached_input_tokens;
    acc.cache_write_tokens += m.cache_write_tokens;
    acc.reasoning_tokens += m.reasoning_tokens;
    acc.cache_hit_share = super::metrics::hit_share(acc.cached_input_tokens, acc.input_tokens);
    acc.cost = match (acc.cost, m.cost) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    };
    acc.cost_usd = super::usd(acc.cost_usd + m.cost_usd);
    // Shards ran apart: the lowest and highest limit of any, the highest median.
    acc.limit = match (acc.limit, m.limit) {
        (Some(a), Some(b)) => Some(super::LimitFigures {
            min: a.min.min(b.min),
            median: a.median.max(b.median),
            max: a.max.max(b.max),
        }),
        (a, b) => a.or(b),
    };
    acc.backpressure.answers += m.backpressure.answers;
    acc.backpressure.paused_ms = acc.backpressure.paused_ms.max(m.backpressure.paused_ms);
    acc.breaker.opens += m.breaker.opens;
    acc.breaker.time_open_ms = acc.breaker.time_open_ms.max(m.breaker.time_open_ms);
    if severity(m.breaker.state) > severity(acc.breaker.state) {
        acc.breaker.state = m.breaker.state;
    }
}

/// A breaker's state by how much it blocks, for "the worst any shard ended with".
fn severity(s: BreakerState) -> u8 {
    match s {
        BreakerState::Closed => 0,
        BreakerState::HalfOpen => 1,
        BreakerState::Open => 2,
        BreakerState::ForcedOpen => 3,
    }
}

fn merge_verification(reports: &[Report]) -> Option<crate::verify::Summary> {
    let mut acc: Option<crate::verify::Summary> = None;
    for v in reports.iter().filter_map(|r| r.verification.as_ref()) {
        let a = acc.get_or_insert_with(Default::default);
        a.units += v.units;
        a.completed += v.completed;
        a.confirmed += v.confirmed;
        a.rejected += v.rejected;
        a.unverified += v.unverified;
        for (k, n) in &v.by_status {
            *a.by_status.entry(k.clone()).or_default() += n;
        }
    }
    acc
}
