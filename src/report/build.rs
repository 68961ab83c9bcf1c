//! The report from all its inputs ([`Inputs`]), built once: each unit's status and
//! attempts, its findings filtered by its skill's resolved thresholds (the same
//! thresholds decide the exit code, through `Finding::fails_run`), the routes' figures
//! with their load over the run, what the run knew beside the engine, and last the
//! redaction of every configured key.

use super::{
    AttemptReport, Counters, Finding, Inputs, Report, ReviewOutcome, RouteMetrics, RunFacts,
    SCHEMA_VERSION, SkillInfo, Source, Summary, UnitReport, dedupe, metrics, source,
};
use crate::chunk::{Chunk, ChunkLineKind};
use crate::config::{Settings, Thresholds};
use crate::engine::{CacheLevel, EngineReport, UnitResult, UnitStatus};
use crate::findings::ModelFinding;
use crate::plan::{Plan, Unit};
use crate::provider::Outcome;
use crate::skills::ActiveSkill;
use crate::text::fnv1a;
use crate::verify::{Pass, Verdict};
use std::collections::BTreeMap;

/// The finished report: nothing patches it afterwards. Last, no configured key leaves in
/// any field, model text included (docs/design.md §13).
pub fn build(inputs: Inputs<'_>) -> Report {
    let Inputs {
        plan,
        engine,
        settings,
        skills: active,
        verification,
        run,
    } = inputs;
    let mut summary = Summary {
        units: plan.units.len(),
        ..Summary::default()
    };
    let mut judge = Judge {
        active,
        defaults: settings.default_thresholds(),
        verification,
        per_skill: BTreeMap::new(),
        dropped: 0,
    };
    let mut units = unit_reports(plan, engine, &mut judge, &mut summary);
    summary.units = units.len();
    summary.findings_dropped += judge.dropped + dedupe::remove_duplicates(&mut units);
    summary.tool_loops = super::ToolLoops::of(&units);
    let mut findings: Vec<Finding> = units.iter().flat_map(|u| u.findings.clone()).collect();
    sort_findings(&mut findings);
    summary.findings = findings.len();
    let mut routes = metrics::route_metrics(engine, &units, verification.map(|v| &v.engine));
    fill_load(&mut routes, &run);
    summary.cost_usd = spent(&routes, &units);
    let mut warnings = config_warnings(settings);
    warnings.extend(run.warnings);
    let RunFacts {
        vcs,
        trust,
        skill_uses,
        plan_fingerprint,
        shard,
        ..
    } = run;
    let skills = rules(active, &skill_uses);
    let mut report = Report {
        plan_command: None,
        schema_version: SCHEMA_VERSION,
        outcome: summary.outcome(),
        target: plan.target.clone(),
        duration_ms: engine.elapsed.as_millis() as u64,
        budget_ms: engine.budget.as_millis() as u64,
        budget_expired: engine.budget_expired,
        interrupted: engine.interrupted,
        routing: routing_report(engine, &summary, settings.execution.cost_budget),
        routes,
        route_order: engine.route_order.clone(),
        counters: counters(&units, &summary),
        summary,
        units,
        findings,
        skipped_files: plan.skipped_files.clone(),
        cuts: super::cuts::cuts(&plan.skipped_files, &settings.scan),
        dropped_findings: super::dropped::named(plan, &engine.units),
        warnings,
        verification: verification.map(|v| v.summary.clone()),
        fail_on: settings.fail_on.to_string(),
        report_on: settings.report_on,
        min_confidence: settings.min_confidence,
        skills,
        vcs,
        trust,
        plan_fingerprint,
        shard,
        missing_shards: Vec::new(),
        publish: None,
    };
    super::redact(&mut report, &super::configured_keys(&settings.routes));
    report
}

/// Each unit of the plan as the report shows it, its findings judged by its skill's
/// thresholds; counted into `summary` as they go.
fn unit_reports(
    plan: &Plan,
    engine: &EngineReport,
    judge: &mut Judge<'_>,
    summary: &mut Summary,
) -> Vec<UnitReport> {
    let mut units: Vec<UnitReport> = Vec::with_capacity(plan.units.len());
    for (unit, result) in plan.units.iter().zip(&engine.units) {
        summary.from_cache += usize::from(result.from_cache.is_some());
        summary.from_shared_cache += usize::from(
            result
                .from_cache
                .as_ref()
                .is_some_and(|c| c.level == CacheLevel::Shared),
        );
        // A unit split for a context window is its parts, each a unit (docs/design.md §14).
        let whole = [(unit.start_line, unit.end_line, result)];
        let parts = result
            .parts
            .iter()
            .map(|p| (p.lines.0, p.lines.1, &p.result));
        let pieces: Vec<(u32, u32, &UnitResult)> = if result.parts.is_empty() {
            whole.to_vec()
        } else {
            parts.collect()
        };
        let mut offset = 0;
        for (start, end, part) in pieces {
            summary.count(part.status);
            summary.findings_dropped += part.dropped_findings;
            summary.findings_cut += part.findings_cut;
            let at = Piece {
                lines: (start, end),
                offset,
            };
            units.push(unit_report(plan, unit, part, at, judge));
            offset += part.findings.len();
        }
    }
    units
}

/// The skills that ran, as rules, each with the origin the run knew for it.
fn rules(active: &[ActiveSkill], skill_uses: &[crate::trust::SkillUse]) -> Vec<SkillInfo> {
    let mut skills = SkillInfo::from_active(active);
    for info in &mut skills {
        if let Some(u) = skill_uses.iter().find(|u| u.name == info.name) {
            info.set_origin(u);
        }
    }
    skills
}

/// Each route's limit and back-pressure over the run, into its figures
/// (`routes.<name>.limit`, `routes.<name>.backpressure`).
fn fill_load(routes: &mut BTreeMap<String, RouteMetrics>, run: &RunFacts) {
    for (name, (limit, bp)) in &run.load {
        if let Some(m) = routes.get_mut(name) {
            m.limit = Some(*limit);
            m.backpressure = *bp;
        }
    }
}

/// What the review's attempts cost, USD: the routes' figures, or, for a report written
/// mid-review without a route table (the route state lives in a busy engine), what the
/// finished units' attempts cost.
fn spent(routes: &BTreeMap<String, RouteMetrics>, units: &[UnitReport]) -> f64 {
    if routes.is_empty() {
        let attempts = units.iter().flat_map(|u| &u.attempts);
        super::usd(attempts.filter_map(|a| a.cost_usd).sum())
    } else {
        super::usd(routes.values().map(|r| r.cost_usd).sum())
    }
}

/// Findings in report order: most severe first, then by file and line.
pub(super) fn sort_findings(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then_with(|| a.path.cmp(&b.path))
            .then(a.start_line.cmp(&b.start_line))
    });
}

impl Summary {
    pub(super) fn count(&mut self, status: UnitStatus) {
        match status {
            UnitStatus::Reviewed => self.reviewed += 1,
            UnitStatus::TimedOut => self.timed_out += 1,
            UnitStatus::Unavailable => self.unavailable += 1,
            UnitStatus::Failed => self.failed += 1,
            UnitStatus::Cancelled => self.cancelled += 1,
            UnitStatus::Skipped => self.skipped += 1,
            UnitStatus::Refused => self.refused += 1,
        }
    }

    /// Section 5: complete when every unit was reviewed (an empty plan is complete),
    /// unavailable when there were units and none was, partial otherwise.
    pub(super) fn outcome(&self) -> ReviewOutcome {
        if self.reviewed == self.units {
            ReviewOutcome::Complete
        } else if self.reviewed == 0 {
            ReviewOutcome::Unavailable
        } else {
            ReviewOutcome::Partial
        }
    }
}

/// Applies each skill's thresholds to the findings, in unit order.
struct Judge<'a> {
    active: &'a [ActiveSkill],
    defaults: Thresholds,
    verification: Option<&'a Pass>,
    /// Findings reported so far per skill (for `maxFindings`).
    per_skill: BTreeMap<String, usize>,
    /// Findings filtered out (confidence, severity, cap).
    dropped: usize,
}

impl Judge<'_> {
    fn thresholds(&self, skill: &str) -> Thresholds {
        self.active
            .iter()
            .find(|a| a.skill.name == skill)
            .map_or(self.defaults, |a| a.thresholds)
    }

    /// Whether a finding of `skill` is reported; counts it if so.
    fn keep(&mut self, skill: &str, f: &ModelFinding) -> Option<Thresholds> {
        let t = self.thresholds(skill);
        let count = self.per_skill.entry(skill.to_string()).or_default();
        if f.confidence < t.min_confidence
            || f.severity < t.shown_from()
            || t.max_findings.is_some_and(|m| *count >= m)
        {
            self.dropped += 1;
            return None;
        }
        *count += 1;
        Some(t)
    }
}

/// Where a unit's result sits in it: its lines (a part's, when it was split) and where
/// its findings start among the whole unit's (verdicts are keyed by the whole's).
struct Piece {
    lines: (u32, u32),
    offset: usize,
}

fn unit_report(
    plan: &Plan,
    unit: &Unit,
    result: &UnitResult,
    at: Piece,
    judge: &mut Judge,
) -> UnitReport {
    let chunk = &plan.files[unit.file].chunks[unit.chunk];
    let model = match &result.from_cache {
        Some(c) => c.model.clone(),
        None => result
            .attempts
            .last()
            .map(|a| {
                a.record
                    .model_answered
                    .clone()
                    .unwrap_or_else(|| a.record.model.clone())
            })
            .unwrap_or_default(),
    };
    let mut findings = Vec::new();
    for (fi, f) in result.findings.iter().enumerate() {
        // A consolidated unit's finding belongs to the skill the model named (if it is one
        // of the unit's), else to the unit's first skill.
        let skill = f
            .skill
            .as_ref()
            .filter(|s| unit.skills.contains(s))
            .unwrap_or(&unit.skills[0]);
        let Some(t) = judge.keep(skill, f) else {
            continue;
        };
        let verdict = judge.verification.map(|v| {
            v.verdicts
                .get(&(result.unit, at.offset + fi))
                .copied()
                .unwrap_or(Verdict::Unverified)
        });
        let mut finding = finding(unit, chunk, skill, f, result, &model);
        finding.fails_run = t.fail_on.fails(f.severity);
        finding.verification = verdict;
        findings.push(finding);
    }
    UnitReport {
        skill: unit.skill.clone(),
        skills: unit.skills.clone(),
        path: unit.path.to_string(),
        start_line: at.lines.0,
        end_line: at.lines.1,
        optional: unit.optional,
        status: result.status,
        route: result.route.clone(),
        model: (result.status == UnitStatus::Reviewed).then_some(model),
        source: match result.from_cache {
            Some(_) => Source::Cache,
            None => Source::Model,
        },
        cached_at: result.from_cache.as_ref().map(|c| {
            humantime::format_rfc3339_seconds(
                std::time::UNIX_EPOCH + std::time::Duration::from_millis(c.cached_at),
            )
            .to_string()
        }),
        cache_level: result.from_cache.as_ref().map(|c| c.level),
        reason: result.reason.clone(),
        routes_tried: result.routes_tried.clone(),
        attempts: result.attempts.iter().map(AttemptReport::from).collect(),
        findings,
        findings_cut: result.findings_cut,
        tool_loop: result.tool_loop.clone(),
        answer_cut: result.answer_cut,
        findings_dropped: result.dropped_findings,
    }
}

/// The stable id of a finding: skill, file, title and the text of its first line, so it
/// survives line shifts. SARIF's fingerprint is the same hash.
pub(crate) fn finding_hash(skill: &str, path: &str, title: &str, line_text: &str) -> u64 {
    fnv1a(&[skill, path, &title.to_lowercase(), line_text])
}

fn finding(
    unit: &Unit,
    chunk: &Chunk,
    skill: &str,
    f: &ModelFinding,
    result: &UnitResult,
    model: &str,
) -> Finding {
    let path = unit.path.to_string();
    let line_text = chunk
        .lines
        .iter()
        .find(|l| l.kind != ChunkLineKind::Removed && l.new_no == Some(f.line))
        .map(|l| l.text.trim().to_string())
        .unwrap_or_default();
    Finding {
        id: format!("W{:016x}", finding_hash(skill, &path, &f.title, &line_text)),
        skill: skill.to_string(),
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
        model: model.to_string(),
        fails_run: false,
        verification: None,
        line_text,
    }
}

pub(super) fn counters(units: &[UnitReport], summary: &Summary) -> Counters {
    let next = |kind| {
        units
            .iter()
            .flat_map(|u| u.attempts.windows(2))
            .filter(|w| super::metrics::next_kind(&w[0], &w[1]) == kind)
            .count()
    };
    Counters {
        attempts: units.iter().map(|u| u.attempts.len()).sum(),
        timeouts: units
            .iter()
            .flat_map(|u| &u.attempts)
            .filter(|a| a.outcome == Outcome::Timeout)
            .count(),
        failovers: next(super::metrics::Next::Failover),
        retries: next(super::metrics::Next::Retry),
        turns: next(super::metrics::Next::Turn),
        units_not_reviewed: summary.units - summary.reviewed,
    }
}

/// The routing section: the policy, and under ordered routing the idle capacity of
/// routes that would have taken spillover, with a hint when units went unreviewed for it.
fn routing_report(
    engine: &EngineReport,
    summary: &Summary,
    cost_budget: Option<f64>,
) -> super::RoutingReport {
    let idle = engine.idle_slot_time.as_secs_f64() / 60.0;
    let idle = (idle * 10.0).round() / 10.0;
    let ordered = engine.routing == crate::config::Routing::Ordered;
    let hint = (ordered && summary.skipped > 0 && idle > 0.0).then(|| {
        format!(
            "{} unit{} skipped while later routes had {idle} slot-minutes idle; routing = \"spillover\" in [execution] would use them",
            summary.skipped,
            if summary.skipped == 1 { " was" } else { "s were" }
        )
    });
    super::RoutingReport {
        policy: engine.routing.as_str().to_string(),
        cost_budget_usd: cost_budget,
        idle_slot_minutes: idle,
        hint,
    }
}

/// The config's warnings, named by the file as stderr shows them.
fn config_warnings(settings: &Settings) -> Vec<super::Warning> {
    settings
        .warnings
        .iter()
        .map(|w| super::Warning {
            source: super::WarningSource::Config,
            route: None,
            message: crate::config::shown_warning(settings.config_path.as_deref(), w),
        })
        .collect()
}
