//! Honest outcomes (DESIGN.md section 5): every unit ends with exactly one status, and
//! a finding, once received, is kept whatever happens later.

use crate::findings::ModelFinding;
use crate::provider::AttemptRecord;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum UnitStatus {
    /// A model answered and the answer parsed (it may have no findings).
    Reviewed,
    /// The hunk budget ran out (or too little of it was left for another attempt).
    TimedOut,
    /// Every allowed attempt failed as unavailable/timeout/rate limited, or no route
    /// admitted calls.
    Unavailable,
    /// A non-retryable error: auth, invalid model, quota, rejected request, bad answer.
    Failed,
    /// It had started when the review budget ran out or the run was interrupted.
    Cancelled,
    /// It never started (review budget spent, or shed as optional work).
    Skipped,
}

impl UnitStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            UnitStatus::Reviewed => "reviewed",
            UnitStatus::TimedOut => "timed_out",
            UnitStatus::Unavailable => "unavailable",
            UnitStatus::Failed => "failed",
            UnitStatus::Cancelled => "cancelled",
            UnitStatus::Skipped => "skipped",
        }
    }
}

/// One attempt as the unit saw it: the provider's record plus when it started.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttemptLog {
    pub number: u32,
    /// Since the review started.
    #[serde(serialize_with = "ms")]
    pub started: Duration,
    pub probe: bool,
    #[serde(flatten)]
    pub record: AttemptRecord,
}

/// A route change within a unit, and why.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Move {
    pub from: String,
    pub to: String,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnitResult {
    pub unit: usize,
    pub status: UnitStatus,
    /// The route that produced the result (None if none did).
    pub route: Option<String>,
    /// Why the unit ended as it did, for people.
    pub reason: String,
    pub attempts: Vec<AttemptLog>,
    pub routes_tried: Vec<String>,
    pub moves: Vec<Move>,
    pub findings: Vec<ModelFinding>,
    pub dropped_findings: usize,
    /// Set when the result is an earlier run's answer from the result cache (no request).
    pub from_cache: Option<FromCache>,
}

/// Who produced a cached result, and when.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct FromCache {
    /// When the model answered, Unix milliseconds.
    pub cached_at: u64,
    /// The model that answered.
    pub model: String,
}

/// Per-route figures the engine itself knows (the rest is derived from attempts).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteSummary {
    pub breaker: super::breaker::BreakerState,
    pub opens: u32,
    #[serde(serialize_with = "ms")]
    pub time_open: Duration,
    /// The most attempts this route had in flight at once.
    pub peak_in_flight: usize,
    pub max_concurrency: usize,
}

#[derive(Debug, Clone)]
pub struct EngineReport {
    pub units: Vec<UnitResult>,
    pub elapsed: Duration,
    pub budget: Duration,
    pub budget_expired: bool,
    pub interrupted: bool,
    pub routes: BTreeMap<String, RouteSummary>,
    /// Route names in failover order.
    pub route_order: Vec<String>,
}

fn ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_millis() as u64)
}
