//! Honest outcomes (docs/design.md section 5): every unit ends with exactly one status, and
//! a finding, once received, is kept whatever happens later.

use crate::findings::ModelFinding;
use crate::provider::AttemptRecord;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// The review as a whole (docs/design.md section 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewOutcome {
    /// Every unit was reviewed (an empty plan is complete).
    Complete,
    /// Some units were reviewed, some were not.
    Partial,
    /// There were units and none was reviewed.
    Unavailable,
}

impl ReviewOutcome {
    /// The outcome as people read it in every human format: `complete`, and the ones
    /// that are not a clean review in capitals (`PARTIAL`, `UNAVAILABLE`).
    pub fn label(self) -> &'static str {
        match self {
            ReviewOutcome::Complete => "complete",
            ReviewOutcome::Partial => "PARTIAL",
            ReviewOutcome::Unavailable => "UNAVAILABLE",
        }
    }

    /// The outcome as the JSON report spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewOutcome::Complete => "complete",
            ReviewOutcome::Partial => "partial",
            ReviewOutcome::Unavailable => "unavailable",
        }
    }
}

/// A unit's status (docs/design.md section 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
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
    /// Every route it could go to refused to review it (a safety refusal, docs/design.md
    /// §15): never clean, and not an outage.
    Refused,
}

impl UnitStatus {
    /// The status as reports spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            UnitStatus::Reviewed => "reviewed",
            UnitStatus::TimedOut => "timed_out",
            UnitStatus::Unavailable => "unavailable",
            UnitStatus::Failed => "failed",
            UnitStatus::Cancelled => "cancelled",
            UnitStatus::Skipped => "skipped",
            UnitStatus::Refused => "refused",
        }
    }
}

/// One attempt as the unit saw it: the provider's record plus when it started.
#[derive(Debug, Clone)]
pub struct AttemptLog {
    /// 1-based.
    pub number: u32,
    /// Since the pass started.
    pub started: Duration,
    /// It went through as a half-open probe.
    pub probe: bool,
    /// What the attempt cost in USD (provider-reported, else tokens at the route's
    /// prices); None when neither is known.
    pub cost_usd: Option<f64>,
    /// What the provider measured.
    pub record: AttemptRecord,
}

/// A route change within a unit, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Move {
    /// The route that failed.
    pub from: String,
    /// The route tried next.
    pub to: String,
    /// The failure.
    pub reason: String,
}

/// How one unit ended: exactly one status, its attempts, and every finding received.
#[derive(Debug, Clone)]
pub struct UnitResult {
    /// The unit's index.
    pub unit: usize,
    /// Its final status.
    pub status: UnitStatus,
    /// The route that produced the result (None if none did).
    pub route: Option<String>,
    /// Why the unit ended as it did, for people.
    pub reason: String,
    /// Every attempt, in order.
    pub attempts: Vec<AttemptLog>,
    /// The route of each attempt, in order.
    pub routes_tried: Vec<String>,
    /// Route changes, with reasons.
    pub moves: Vec<Move>,
    /// The findings of the answer that reviewed it.
    pub findings: Vec<ModelFinding>,
    /// Findings the answer had that were out of range or invalid.
    pub dropped_findings: usize,
    /// The first of those, named (entry, title, why).
    pub dropped: Vec<crate::findings::Dropped>,
    /// Its result comes from an answer the output cap cut (section 14): the findings
    /// complete before the cut are kept, and the unit is never `reviewed` on it.
    pub answer_cut: bool,
    /// Findings past the route's `maxFindingsPerAnswer`, counted unread.
    pub findings_cut: usize,
    /// Set when the result is an earlier run's answer from the result cache (no request).
    pub from_cache: Option<FromCache>,
    /// Its tool loop's figures, when its skill reads the repository (docs/design.md §14).
    pub tool_loop: Option<ToolLoop>,
    /// When its prompt did not fit a model's context window (docs/design.md §14): the parts
    /// its chunk was split into, in line order, each a unit of its own in the report.
    /// The unit's own fields then sum them up (every attempt and finding once, the
    /// attempts made on the whole chunk in the first part).
    pub parts: Vec<UnitPart>,
}

/// One part of a split unit: its new-file lines and how it ended.
#[derive(Debug, Clone)]
pub struct UnitPart {
    /// The new-file lines of the part's chunk.
    pub lines: (u32, u32),
    /// How it ended (its `parts` always empty: parts are flattened).
    pub result: UnitResult,
}

impl UnitResult {
    /// A unit that ended without an answer: no attempts known, no findings.
    pub(crate) fn unfinished(unit: usize, status: UnitStatus, reason: &str) -> UnitResult {
        UnitResult {
            unit,
            status,
            route: None,
            reason: reason.to_string(),
            attempts: Vec::new(),
            routes_tried: Vec::new(),
            moves: Vec::new(),
            findings: Vec::new(),
            dropped_findings: 0,
            dropped: Vec::new(),
            answer_cut: false,
            findings_cut: 0,
            from_cache: None,
            tool_loop: None,
            parts: Vec::new(),
        }
    }
}

/// One tool call as the unit's result keeps it: the result cache replays these on a new
/// head and compares the hashes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallLog {
    /// The tool's name.
    pub tool: String,
    /// The arguments as the model sent them.
    pub arguments: String,
    /// SHA-256 of the result the model read.
    pub hash: String,
}

/// A unit's tool loop (docs/design.md §14), as reports show it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ToolLoop {
    /// Turns the unit could use: its cap, lowered when the budget shed its tool turns.
    pub turns_allowed: u32,
    /// Requests that were answered (turns reached).
    pub turns_used: u32,
    /// Tool calls made (repeats answered from memory included).
    pub tool_calls: u32,
    /// Calls per tool.
    pub calls_by_tool: BTreeMap<String, u32>,
    /// Bytes of every tool result the model read.
    pub tool_bytes: u64,
    /// Identical calls answered from memory.
    pub repeated_calls: u32,
    /// Its tool turns were shed for lack of budget (a single-shot review, or cut short).
    pub shed_for_budget: bool,
    /// The route changed during the loop after this many turns (failover carried the
    /// transcript).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moved_after_turn: Option<u32>,
    /// Every call answered by a tool (not repeats), in order.
    #[serde(skip)]
    pub calls: Vec<CallLog>,
}

/// Who produced a cached result, and when.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct FromCache {
    /// When the model answered, Unix milliseconds.
    pub cached_at: u64,
    /// The model that answered.
    pub model: String,
    /// Which level of the cache held it.
    pub level: CacheLevel,
}

/// The level of the result cache that answered a unit.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CacheLevel {
    /// This machine's store (an earlier run here).
    Local,
    /// The fleet's shared store (a run on another machine or in another job).
    Shared,
}

impl CacheLevel {
    /// The level's name, as reports write it.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheLevel::Local => "local",
            CacheLevel::Shared => "shared",
        }
    }
}

/// Per-route figures the engine itself knows (the rest is derived from attempts).
#[derive(Debug, Clone)]
pub struct RouteSummary {
    /// The breaker's state at the end.
    pub breaker: super::breaker::BreakerState,
    /// Times it opened.
    pub opens: u32,
    /// Time spent not closed.
    pub time_open: Duration,
    /// The most attempts this route had in flight at once.
    pub peak_in_flight: usize,
    /// Its bulkhead size.
    pub max_concurrency: usize,
}

/// What one pass of the engine did.
#[derive(Debug, Clone)]
pub struct EngineReport {
    /// Every unit's result, in the order the units were given.
    pub units: Vec<UnitResult>,
    /// How long the pass took.
    pub elapsed: Duration,
    /// The budget it had.
    pub budget: Duration,
    /// The budget ran out (attempts in flight were cancelled).
    pub budget_expired: bool,
    /// A signal interrupted it.
    pub interrupted: bool,
    /// Figures per route name (the run's route state at the end of the pass).
    pub routes: BTreeMap<String, RouteSummary>,
    /// Route names in failover order.
    pub route_order: Vec<String>,
    /// The routing policy the pass ran under.
    pub routing: crate::config::Routing,
    /// Permit-time that routes taking spillover left unused while units waited for a
    /// preferred route (slot-seconds as a duration).
    pub idle_slot_time: Duration,
    /// The review's spend so far, USD (every pass up to this one).
    pub cost_usd: f64,
}
