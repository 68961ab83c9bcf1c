//! The outcome model every report is rendered from (JSON schemaVersion 1 of DESIGN.md
//! section 8), built from the plan and the engine's report. Renderers never decide
//! policy; they only show this model.

mod dedupe;
pub mod escape;
mod fit;
mod format;
pub mod github;
pub mod gitlab;
pub mod markdown;
mod metrics;
pub mod progress;
pub mod rdjson;
mod rules;
pub mod sarif;
mod source;
pub mod summary_md;
pub mod text;
mod vcs;

pub use format::{Format, OutputSpec};
pub use metrics::{BreakerReport, RouteMetrics, TimeoutsByStage};
pub use rules::SkillInfo;
pub use source::SourceContext;
pub use vcs::Vcs;

use crate::chunk::ChunkLineKind;
use crate::config::Settings;
use crate::engine::{EngineReport, UnitStatus};
use crate::plan::Plan;
use crate::scan::Skipped;
use crate::severity::{Confidence, FailOn, Severity};
use crate::skills::ActiveSkill;
use serde::Serialize;
use std::collections::BTreeMap;

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
    /// The outcome as the JSON report spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewOutcome::Complete => "complete",
            ReviewOutcome::Partial => "partial",
            ReviewOutcome::Unavailable => "unavailable",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub schema_version: u32,
    pub outcome: ReviewOutcome,
    pub target: String,
    pub duration_ms: u64,
    pub budget_ms: u64,
    pub budget_expired: bool,
    pub interrupted: bool,
    pub summary: Summary,
    /// Review-level counters across all routes.
    pub counters: Counters,
    pub units: Vec<UnitReport>,
    pub findings: Vec<Finding>,
    pub skipped_files: Vec<Skipped>,
    /// The verification pass, when enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verification: Option<crate::verify::Summary>,
    /// Route names in failover order (the `routes` object is keyed by name).
    pub route_order: Vec<String>,
    pub routes: BTreeMap<String, RouteMetrics>,
    /// The thresholds this report was filtered and judged with.
    pub fail_on: String,
    pub report_on: Severity,
    pub min_confidence: Confidence,
    /// The skills that ran, as rules: what each checks, and where each came from.
    pub skills: Vec<SkillInfo>,
    /// Repository, revision and branch reviewed, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vcs: Option<Vcs>,
    /// Where config and skills came from, and which of them the change touches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trust: Option<crate::trust::TrustReport>,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub units: usize,
    pub reviewed: usize,
    pub timed_out: usize,
    pub unavailable: usize,
    pub failed: usize,
    pub cancelled: usize,
    pub skipped: usize,
    pub findings: usize,
    /// Findings the model returned that were dropped (outside the chunk, invalid) or
    /// filtered (below minConfidence or reportOn, over maxFindings).
    pub findings_dropped: usize,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Counters {
    pub attempts: usize,
    pub timeouts: usize,
    /// Units that moved to another route after a failure (fallbacks).
    pub failovers: usize,
    /// Further attempts on the same route.
    pub retries: usize,
    /// Units that did not end reviewed.
    pub units_not_reviewed: usize,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnitReport {
    /// The skill, or consolidated skills joined with `+`.
    pub skill: String,
    pub skills: Vec<String>,
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub optional: bool,
    pub status: UnitStatus,
    /// The route that produced the result (null if none did).
    pub route: Option<String>,
    pub reason: String,
    pub routes_tried: Vec<String>,
    pub attempts: Vec<AttemptReport>,
    pub findings: Vec<Finding>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttemptReport {
    pub number: u32,
    pub route: String,
    pub provider: String,
    pub model: String,
    pub model_answered: Option<String>,
    pub outcome: String,
    pub stage: Option<String>,
    pub started_ms: u64,
    pub duration_ms: u64,
    pub deadline_ms: u64,
    pub headers_ms: Option<u64>,
    pub ttft_ms: Option<u64>,
    pub http_status: Option<u16>,
    pub request_id: Option<String>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cost: Option<f64>,
    pub retry_after_ms: Option<u64>,
    pub probe: bool,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// Stable across runs for the same skill, file, title and line text.
    pub id: String,
    pub skill: String,
    pub severity: Severity,
    pub confidence: Confidence,
    pub title: String,
    pub description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
    /// The exact new text of lines `startLine..=endLine` that fixes the problem.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replacement: Option<String>,
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub route: String,
    pub model: String,
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
    /// DESIGN.md section 5: 1 if a finding reaches `--fail-on` (complete or not), else 3
    /// if the review is partial or unavailable, else 0. Signals are the caller's.
    pub fn exit_code(&self, fail_on: FailOn) -> i32 {
        let failing = match fail_on {
            FailOn::Off => false,
            FailOn::At(s) => self.findings.iter().any(|f| f.severity >= s),
        };
        if failing {
            1
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
    fn from(a: &crate::engine::AttemptLog) -> Self {
        let r = &a.record;
        let ms = |d: std::time::Duration| d.as_millis() as u64;
        AttemptReport {
            number: a.number,
            route: r.route.clone(),
            provider: r.provider.to_string(),
            model: r.model.clone(),
            model_answered: r.model_answered.clone(),
            outcome: r.outcome.as_str().to_string(),
            stage: r.stage.map(|s| s.as_str().to_string()),
            started_ms: ms(a.started),
            duration_ms: ms(r.duration),
            deadline_ms: ms(r.deadline),
            headers_ms: r.headers.map(ms),
            ttft_ms: r.ttft.map(ms),
            http_status: r.http_status,
            request_id: r.request_id.clone(),
            input_tokens: r.usage.and_then(|u| u.input_tokens),
            output_tokens: r.usage.and_then(|u| u.output_tokens),
            cost: r.usage.and_then(|u| u.cost),
            retry_after_ms: r.retry_after.map(ms),
            probe: a.probe,
            reason: r.reason.clone(),
        }
    }
}

/// Milliseconds as seconds with one decimal for tables ("4.2s"), or `none` when absent.
pub(crate) fn secs(v: Option<u64>, none: &str) -> String {
    v.map(|v| format!("{:.1}s", v as f64 / 1000.0))
        .unwrap_or_else(|| none.to_string())
}

/// FNV-1a, 64 bits: a tiny stable hash for finding ids and fingerprints.
pub(crate) fn fnv1a(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain([0u8]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// Builds the report. `fail_on` matters here only so that a finding that fails the run is
/// always shown, even below `reportOn`.
pub fn build(
    plan: &Plan,
    engine: &EngineReport,
    settings: &Settings,
    active: &[ActiveSkill],
    verification: Option<&crate::verify::Pass>,
) -> Report {
    let mut summary = Summary {
        units: plan.units.len(),
        ..Summary::default()
    };
    let mut units = Vec::with_capacity(plan.units.len());
    let mut per_skill_count: BTreeMap<String, usize> = BTreeMap::new();
    for (unit, result) in plan.units.iter().zip(&engine.units) {
        let chunk = &plan.files[unit.file].chunks[unit.chunk];
        let model = result
            .attempts
            .last()
            .map(|a| {
                a.record
                    .model_answered
                    .clone()
                    .unwrap_or_else(|| a.record.model.clone())
            })
            .unwrap_or_default();
        let mut unit_findings = Vec::new();
        summary.findings_dropped += result.dropped_findings;
        for (fi, f) in result.findings.iter().enumerate() {
            // A consolidated unit's finding belongs to the skill the model named (if it is
            // one of the unit's), else to the unit's first skill.
            let skill = f
                .skill
                .as_ref()
                .filter(|s| unit.skills.contains(s))
                .unwrap_or(&unit.skills[0])
                .clone();
            let cfg = active
                .iter()
                .find(|a| a.skill.name == skill)
                .map(|a| &a.config);
            let min_conf = cfg
                .and_then(|c| c.min_confidence)
                .unwrap_or(settings.min_confidence);
            let report_on = cfg.and_then(|c| c.report_on).unwrap_or(settings.report_on);
            let fail_on = cfg.and_then(|c| c.fail_on).unwrap_or(settings.fail_on);
            let shown_from = match fail_on {
                FailOn::At(f) => f.min(report_on),
                FailOn::Off => report_on,
            };
            let max = cfg.and_then(|c| c.max_findings).or(settings.max_findings);
            let count = per_skill_count.entry(skill.clone()).or_default();
            if f.confidence < min_conf
                || f.severity < shown_from
                || max.is_some_and(|m| *count >= m)
            {
                summary.findings_dropped += 1;
                continue;
            }
            *count += 1;
            let path = unit.path.to_string();
            let line_text = chunk
                .lines
                .iter()
                .find(|l| l.kind != ChunkLineKind::Removed && l.new_no == Some(f.line))
                .map(|l| l.text.trim().to_string())
                .unwrap_or_default();
            let id = fnv1a(&[&skill, &path, &f.title.to_lowercase(), &line_text]);
            unit_findings.push(Finding {
                id: format!("W{:016x}", id),
                skill,
                severity: f.severity,
                confidence: f.confidence,
                title: f.title.clone(),
                description: f.description.clone(),
                suggestion: f.suggestion.clone(),
                replacement: f.replacement.clone(),
                context: source::context(chunk, f.line, f.end_line),
                path,
                start_line: f.line,
                end_line: f.end_line,
                route: result.route.clone().unwrap_or_default(),
                model: model.clone(),
                verification: verification.map(|v| {
                    v.verdicts
                        .get(&(result.unit, fi))
                        .copied()
                        .unwrap_or(crate::verify::Verdict::Unverified)
                }),
                line_text,
            });
        }
        match result.status {
            UnitStatus::Reviewed => summary.reviewed += 1,
            UnitStatus::TimedOut => summary.timed_out += 1,
            UnitStatus::Unavailable => summary.unavailable += 1,
            UnitStatus::Failed => summary.failed += 1,
            UnitStatus::Cancelled => summary.cancelled += 1,
            UnitStatus::Skipped => summary.skipped += 1,
        }
        units.push(UnitReport {
            skill: unit.skill.clone(),
            skills: unit.skills.clone(),
            path: unit.path.to_string(),
            start_line: unit.start_line,
            end_line: unit.end_line,
            optional: unit.optional,
            status: result.status,
            route: result.route.clone(),
            reason: result.reason.clone(),
            routes_tried: result.routes_tried.clone(),
            attempts: result.attempts.iter().map(AttemptReport::from).collect(),
            findings: unit_findings,
        });
    }
    summary.findings_dropped += dedupe::remove_duplicates(&mut units);
    let mut findings: Vec<Finding> = units.iter().flat_map(|u| u.findings.clone()).collect();
    findings.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then_with(|| a.path.cmp(&b.path))
            .then(a.start_line.cmp(&b.start_line))
    });
    summary.findings = findings.len();
    let counters = Counters {
        attempts: units.iter().map(|u| u.attempts.len()).sum(),
        timeouts: units
            .iter()
            .flat_map(|u| &u.attempts)
            .filter(|a| a.outcome == "timeout")
            .count(),
        failovers: units
            .iter()
            .flat_map(|u| u.routes_tried.windows(2))
            .filter(|w| w[0] != w[1])
            .count(),
        retries: units
            .iter()
            .flat_map(|u| u.routes_tried.windows(2))
            .filter(|w| w[0] == w[1])
            .count(),
        units_not_reviewed: summary.units - summary.reviewed,
    };
    let outcome = if summary.reviewed == summary.units {
        ReviewOutcome::Complete
    } else if summary.reviewed == 0 {
        ReviewOutcome::Unavailable
    } else {
        ReviewOutcome::Partial
    };
    Report {
        schema_version: SCHEMA_VERSION,
        outcome,
        target: plan.target.clone(),
        duration_ms: engine.elapsed.as_millis() as u64,
        budget_ms: engine.budget.as_millis() as u64,
        budget_expired: engine.budget_expired,
        interrupted: engine.interrupted,
        routes: metrics::route_metrics(engine, &units, verification.map(|v| &v.engine)),
        route_order: engine.route_order.clone(),
        summary,
        counters,
        units,
        findings,
        skipped_files: plan.skipped_files.clone(),
        verification: verification.map(|v| v.summary.clone()),
        fail_on: settings.fail_on.to_string(),
        report_on: settings.report_on,
        min_confidence: settings.min_confidence,
        skills: SkillInfo::from_active(active),
        vcs: None,
        trust: None,
    }
}
