//! The outcome model every report is rendered from (JSON schemaVersion 1 of docs/design.md
//! section 8), built from the plan and the engine's report. Renderers never decide
//! policy; they only show this model.

mod build;
mod cuts;
mod dedupe;
mod dropped;
mod format;
mod inputs;
mod load;
mod merge;
mod metrics;
pub mod published;
mod redact;
mod rules;
mod setup;
mod source;
mod tool_loops;
mod vcs;
mod warnings;

pub use build::build;
pub use cuts::Cut;
pub use dropped::DroppedFinding;
pub use format::{Format, OutputSpec, OutputSpecError};
pub use inputs::{Inputs, RunFacts};
pub use load::{BackpressureFigures, LimitFigures, RouteLoad};
pub use merge::merge;
pub use metrics::{BreakerReport, RouteMetrics, TimeoutsByStage};
pub use redact::{configured_keys, redact, redact_text};
pub use rules::SkillInfo;
pub use source::SourceContext;
pub use tool_loops::ToolLoops;
pub use vcs::Vcs;
pub use warnings::{Warning, WarningSource, Warnings};

use crate::engine::{CacheLevel, UnitStatus};
use crate::provider::{Outcome, Stage};
use crate::scan::Skipped;
use crate::severity::{Confidence, Severity};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The JSON report's `schemaVersion` (docs/design.md section 8).
pub const SCHEMA_VERSION: u32 = 1;

pub use crate::engine::outcome::ReviewOutcome;

/// The outcome model every format renders: what was reviewed, what was not and why, every finding, and the routes' figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Always [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Complete, partial or unavailable.
    pub outcome: ReviewOutcome,
    /// What was compared, for people.
    pub target: String,
    /// The `warden plan …` command that shows this selection's plan (the text report's
    /// skipped-files hint names it); set by the command layer, not in JSON.
    #[serde(skip)]
    pub plan_command: Option<String>,
    /// How long the review took.
    pub duration_ms: u64,
    /// The review budget.
    pub budget_ms: u64,
    /// The budget ran out (attempts in flight were cancelled).
    pub budget_expired: bool,
    /// A signal interrupted the review.
    pub interrupted: bool,
    /// Units by status and findings.
    pub summary: Summary,
    /// Review-level counters across all routes.
    pub counters: Counters,
    /// Every unit of the plan, in dispatch order.
    pub units: Vec<UnitReport>,
    /// Every finding reported, most severe first.
    pub findings: Vec<Finding>,
    /// Files not reviewed, with reasons.
    pub skipped_files: Vec<Skipped>,
    /// Of those, the files cut by limits (`maxFiles`, sizes, lines), one entry per limit:
    /// every format a person reads counts and names them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cuts: Vec<Cut>,
    /// Entries of the models' answers that did not become findings (invalid, or outside
    /// the lines under review), named: every format a person reads lists them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped_findings: Vec<DroppedFinding>,
    /// Warnings of the run (config, routes, cache, fleet), as stderr showed them.
    #[serde(default)]
    pub warnings: Vec<Warning>,
    /// The verification pass, when enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verification: Option<crate::verify::Summary>,
    /// Route names in failover order (the `routes` object is keyed by name).
    pub route_order: Vec<String>,
    /// Figures per route name.
    pub routes: BTreeMap<String, RouteMetrics>,
    /// The routing policy and the capacity it left idle.
    #[serde(default)]
    pub routing: RoutingReport,
    /// The thresholds this report was filtered and judged with.
    pub fail_on: String,
    /// The default `reportOn` (skills may set their own).
    pub report_on: Severity,
    /// The default `minConfidence` (skills may set their own).
    pub min_confidence: Confidence,
    /// The skills that ran, as rules: what each checks, and where each came from.
    pub skills: Vec<SkillInfo>,
    /// Repository, revision and branch reviewed, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vcs: Option<Vcs>,
    /// Where config and skills came from, and which of them the change touches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trust: Option<crate::trust::TrustReport>,
    /// The whole plan's fingerprint (the same on every shard of one review).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub plan_fingerprint: String,
    /// Which part of the plan this report covers (`--shard K/N`); absent: all of it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub shard: Option<crate::shard::Shard>,
    /// A merged report: the shards that never reported (their units were not reviewed).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub missing_shards: Vec<MissingShard>,
    /// What `--publish` did on the pull request (docs/design.md §15).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publish: Option<published::Published>,
}

/// A shard a merged report lacks, and how many of the plan's units it had.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct MissingShard {
    /// The missing shard, 1-based.
    pub index: usize,
    /// How many shards there were.
    pub count: usize,
    /// Its units, none of them reviewed.
    pub units: usize,
}

/// Units by final status, and findings.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Units planned.
    pub units: usize,
    /// Units reviewed.
    pub reviewed: usize,
    /// Units whose hunk budget ran out.
    pub timed_out: usize,
    /// Units no route could serve.
    pub unavailable: usize,
    /// Units that hit a non-retryable error.
    pub failed: usize,
    /// Units cut by the review budget or a signal.
    pub cancelled: usize,
    /// Units never started.
    pub skipped: usize,
    /// Units every route they could go to refused to review (a safety refusal).
    #[serde(default)]
    pub refused: usize,
    /// Findings reported.
    pub findings: usize,
    /// Reviewed units answered from the result cache (no request made).
    pub from_cache: usize,
    /// Of those, the units the fleet's shared level answered.
    #[serde(default)]
    pub from_shared_cache: usize,
    /// Findings the model returned that were dropped (outside the chunk, invalid) or
    /// filtered (below minConfidence or reportOn, over maxFindings).
    pub findings_dropped: usize,
    /// Findings past `maxFindingsPerAnswer` in the answers, counted unread.
    #[serde(default)]
    pub findings_cut: usize,
    /// What the review's attempts cost, USD (every route and pass; attempts whose cost is
    /// unknown count as nothing).
    #[serde(default)]
    pub cost_usd: f64,
    /// The review's tool loops, summed (absent when no unit looped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_loops: Option<ToolLoops>,
}

/// How new units chose routes, and what the other policy would have used.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RoutingReport {
    /// `ordered` or `spillover`.
    pub policy: String,
    /// The cost budget, USD, when one was set.
    pub cost_budget_usd: Option<f64>,
    /// Under ordered routing: minutes of free permits on later routes that take
    /// spillover while units waited for a preferred route.
    pub idle_slot_minutes: f64,
    /// For people: when units were skipped while those permits sat idle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// Review-level counters across all routes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Counters {
    /// Attempts sent.
    pub attempts: usize,
    /// Attempts timed out.
    pub timeouts: usize,
    /// Units that moved to another route after a failure (fallbacks).
    pub failovers: usize,
    /// Further attempts on the same route after a failed one.
    pub retries: usize,
    /// Tool loops' further turns (attempts after an answered one): not retries.
    #[serde(default)]
    pub turns: usize,
    /// Units that did not end reviewed.
    pub units_not_reviewed: usize,
}

/// One unit as the report shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnitReport {
    /// The skill, or consolidated skills joined with `+`.
    pub skill: String,
    /// Every skill its one request served.
    pub skills: Vec<String>,
    /// The file.
    pub path: String,
    /// First new-file line of its chunk.
    pub start_line: u32,
    /// Last new-file line of its chunk.
    pub end_line: u32,
    /// Optional work (shed first).
    pub optional: bool,
    /// Its final status.
    pub status: UnitStatus,
    /// The route that produced the result (null if none did).
    pub route: Option<String>,
    /// The model that produced the result (null if none did).
    pub model: Option<String>,
    /// `cache` when an earlier run's answer was reused (no request), else `model`.
    pub source: Source,
    /// When the cached answer was produced (RFC 3339), for `source: cache`.
    pub cached_at: Option<String>,
    /// For `source: cache`: `local` (this machine's store) or `shared` (the fleet's).
    #[serde(default)]
    pub cache_level: Option<CacheLevel>,
    /// Why it ended so, for people.
    pub reason: String,
    /// The route of each attempt, in order.
    pub routes_tried: Vec<String>,
    /// Every attempt.
    pub attempts: Vec<AttemptReport>,
    /// Its findings (after thresholds).
    pub findings: Vec<Finding>,
    /// Findings its answer had past `maxFindingsPerAnswer`, counted unread.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub findings_cut: usize,
    /// Its tool loop (docs/design.md §14): turns allowed and used, calls, bytes; absent for a
    /// unit whose skill does not read the repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_loop: Option<crate::engine::ToolLoop>,
    /// Its result comes from an answer the output cap cut (docs/design.md §14): never a
    /// clean review; its findings are those complete before the cut.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub answer_cut: bool,
    /// Entries of its answer dropped (invalid, or outside its lines); the report's
    /// `droppedFindings` names them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub findings_dropped: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Where a unit's result came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// A model answered in this run.
    Model,
    /// The result cache answered (an earlier run's answer for unchanged code).
    Cache,
}

/// One attempt as the report shows it (times in milliseconds).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttemptReport {
    /// 1-based.
    pub number: u32,
    /// The route it went to.
    pub route: String,
    /// The route's provider kind.
    pub provider: String,
    /// The model asked for.
    pub model: String,
    /// The model that answered, when the provider said.
    pub model_answered: Option<String>,
    /// How it ended.
    pub outcome: Outcome,
    /// Which clock ended a timeout.
    pub stage: Option<Stage>,
    /// When it started, from the pass's start.
    pub started_ms: u64,
    /// How long it took.
    pub duration_ms: u64,
    /// The deadline it was given.
    pub deadline_ms: u64,
    /// Time to response headers.
    pub headers_ms: Option<u64>,
    /// Time to the first model token of any kind (reasoning included).
    pub ttft_ms: Option<u64>,
    /// Time to the first token of the answer itself (text or a tool call); later than
    /// `ttftMs` when the model streamed its reasoning first.
    #[serde(default)]
    pub first_content_ms: Option<u64>,
    /// The response status.
    pub http_status: Option<u16>,
    /// The provider's request id.
    pub request_id: Option<String>,
    /// Prompt tokens.
    pub input_tokens: Option<u64>,
    /// Answer tokens (reasoning included).
    pub output_tokens: Option<u64>,
    /// Prompt tokens read from the provider's prompt cache (part of `inputTokens`).
    #[serde(default)]
    pub cached_input_tokens: Option<u64>,
    /// Prompt tokens written to the prompt cache (part of `inputTokens`).
    #[serde(default)]
    pub cache_write_tokens: Option<u64>,
    /// Hidden reasoning tokens (part of `outputTokens`).
    #[serde(default)]
    pub reasoning_tokens: Option<u64>,
    /// Its cost, when reported.
    pub cost: Option<f64>,
    /// What the attempt cost, USD: the provider's figure, else tokens at the route's
    /// prices (null when neither is known).
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// A rate limit's Retry-After.
    pub retry_after_ms: Option<u64>,
    /// A half-open breaker probe.
    pub probe: bool,
    /// Back-pressure (docs/design.md §13): the provider said "not now" (429, 529, 503 with
    /// Retry-After). Such an attempt is a wait: it does not count toward `maxAttempts`.
    #[serde(default)]
    pub backpressure: bool,
    /// Why it ended so, for people.
    pub reason: String,
}

/// One finding as every format shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// Stable across runs for the same skill, file, title and line text.
    pub id: String,
    /// The skill it belongs to.
    pub skill: String,
    /// How bad.
    pub severity: Severity,
    /// How sure the model is.
    pub confidence: Confidence,
    /// A short summary.
    pub title: String,
    /// What goes wrong and why.
    pub description: String,
    /// A fix in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
    /// The exact new text of lines `startLine..=endLine` that fixes the problem.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replacement: Option<String>,
    /// The file.
    pub path: String,
    /// First new-file line.
    pub start_line: u32,
    /// Last new-file line.
    pub end_line: u32,
    /// The route that found it.
    pub route: String,
    /// The model that found it.
    pub model: String,
    /// It reaches its skill's `failOn`: the run exits 1.
    #[serde(default)]
    pub fails_run: bool,
    /// With the verification pass on: confirmed, or unverified (rejected ones are removed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verification: Option<crate::verify::Verdict>,
    /// The text of the finding's first line (empty when not in the chunk).
    #[serde(skip)]
    pub line_text: String,
    /// The finding's lines with a little context, from the reviewed chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<SourceContext>,
}

impl Report {
    /// docs/design.md section 5: 1 if a finding reaches its skill's `failOn` (complete or not),
    /// else 2 if no unit was reviewed and every failure was a setup error
    /// ([`Report::setup_failure`]: a refinement of 3, so CI tells setup from weather), else 3
    /// if the review is partial or unavailable, else 0. Signals are the caller's.
    pub fn exit_code(&self) -> i32 {
        if self.findings.iter().any(|f| f.fails_run) {
            1
        } else if self.setup_failure().is_some() {
            2
        } else if self.outcome != ReviewOutcome::Complete {
            3
        } else {
            0
        }
    }

    /// Units not reviewed, for banners and notifications.
    pub fn not_reviewed(&self) -> impl Iterator<Item = &UnitReport> {
        self.units
            .iter()
            .filter(|u| u.status != UnitStatus::Reviewed)
    }
}

impl From<&crate::engine::AttemptLog> for AttemptReport {
    /// The attempt's record, destructured once: each field the report shows, taken here.
    fn from(a: &crate::engine::AttemptLog) -> Self {
        let crate::provider::AttemptRecord {
            route,
            provider,
            model,
            model_answered,
            headers,
            ttft,
            first_content,
            duration,
            deadline,
            usage,
            http_status,
            request_id,
            outcome,
            stage,
            reason,
            retry_after,
            backpressure,
            ..
        } = &a.record;
        let crate::provider::Usage {
            input_tokens,
            output_tokens,
            cached_input_tokens,
            cache_write_tokens,
            reasoning_tokens,
            cost,
        } = usage.unwrap_or_default();
        let ms = |d: std::time::Duration| d.as_millis() as u64;
        AttemptReport {
            number: a.number,
            route: route.clone(),
            provider: provider.to_string(),
            model: model.clone(),
            model_answered: model_answered.clone(),
            outcome: *outcome,
            stage: *stage,
            started_ms: ms(a.started),
            duration_ms: ms(*duration),
            deadline_ms: ms(*deadline),
            headers_ms: headers.map(ms),
            ttft_ms: ttft.map(ms),
            first_content_ms: first_content.map(ms),
            http_status: *http_status,
            request_id: request_id.clone(),
            input_tokens,
            output_tokens,
            cached_input_tokens,
            cache_write_tokens,
            reasoning_tokens,
            cost,
            cost_usd: a.cost_usd,
            retry_after_ms: retry_after.map(ms),
            probe: a.probe,
            backpressure: *backpressure,
            reason: reason.clone(),
        }
    }
}

/// An amount of USD as reports show it: rounded to a billionth of a dollar, so sums
/// taken in a different order (a merged report's) give the same figure. Never `-0.0`:
/// the sum of no costs is `-0.0` in Rust, and reports would print `"costUsd": -0.0`.
pub(crate) fn usd(x: f64) -> f64 {
    (x * 1e9).round() / 1e9 + 0.0
}
