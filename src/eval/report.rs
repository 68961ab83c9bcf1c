//! The evaluation's report: the figures overall, per skill × route and per run, what was
//! not reviewed, and every case's findings and references with what became of them.
//! JSON schema: schemas/eval-report-v1.schema.json. Renderers (`render.rs`) only show it.

use super::case::Shape;
use super::metrics::{Metrics, Spread};
use super::outcome::{FindingBrief, SpanOut};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The eval report's `schemaVersion`.
pub const EVAL_SCHEMA_VERSION: u32 = 1;

/// What `warden eval` measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvalReport {
    /// Always [`EVAL_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Always `warden-eval` (a review report is not an eval report).
    pub kind: String,
    /// The corpus.
    pub corpus: CorpusInfo,
    /// How it was evaluated.
    pub settings: EvalSettings,
    /// Every case review together.
    pub overall: Metrics,
    /// Per skill × route (route null: what that skill left not reviewed).
    pub groups: Vec<Group>,
    /// Per run (`--runs N`).
    pub runs: Vec<RunFigures>,
    /// Each headline figure over the runs (with `--runs` above 1).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub spread: BTreeMap<String, Spread>,
    /// The judge's work and cost, kept apart from the reviews'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeSummary>,
    /// Cases, units and files that were not reviewed, and the references they held.
    pub not_reviewed: Vec<NotReviewed>,
    /// Every case review.
    pub cases: Vec<CaseRow>,
    /// How the evaluation itself ended.
    pub finished: Finished,
    /// `--baseline FILE`: each figure's change against an earlier evaluation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<super::comparison::Comparison>,
    /// Every case review that ran reviewed nothing for a setup failure (a bad key, an
    /// unknown model): the message, and `warden eval` exits 2 as `warden review` does.
    #[serde(skip)]
    pub setup_failure: Option<String>,
}

/// The corpus, for people and baselines.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CorpusInfo {
    /// Where it came from.
    pub source: String,
    /// Which loader read it.
    pub shape: Shape,
    /// Cases.
    pub cases: usize,
    /// Cases with no reference.
    pub clean_cases: usize,
    /// References over all cases.
    pub references: usize,
    /// Candidates left out, by reason (`--from-history`).
    #[serde(default)]
    pub left_out: BTreeMap<String, usize>,
}

/// How the evaluation ran.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvalSettings {
    /// `--line-window`.
    pub line_window: u32,
    /// `--runs`.
    pub runs: u32,
    /// `--judge`.
    pub judge: Option<String>,
    /// The total `--budget`, milliseconds.
    pub budget_ms: Option<u64>,
    /// Each case review's budget, milliseconds.
    pub case_budget_ms: u64,
    /// The routes, in failover order.
    pub routes: Vec<String>,
    /// Case reviews run at once.
    pub concurrency: usize,
}

/// One skill × route row.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Group {
    /// The skill.
    pub skill: String,
    /// The route; null: the references of this skill that nothing reviewed.
    pub route: Option<String>,
    /// Its figures (time per case is its attempts' time).
    #[serde(flatten)]
    pub metrics: Metrics,
}

/// One run's overall figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunFigures {
    /// 1-based.
    pub run: u32,
    /// Its figures.
    #[serde(flatten)]
    pub metrics: Metrics,
}

/// The judge's work.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct JudgeSummary {
    /// The route asked.
    pub route: String,
    /// Candidate pairs (location agrees).
    pub pairs: usize,
    /// Pairs it said are the same problem.
    pub accepted: usize,
    /// Pairs it said are not.
    pub rejected: usize,
    /// Pairs it gave no verdict on (its request failed or no budget was left): matched by
    /// location alone.
    pub unjudged: usize,
    /// What it cost, USD (not in the reviews' cost).
    pub cost_usd: f64,
    /// Its prompt tokens.
    pub input_tokens: u64,
    /// Its answer tokens.
    pub output_tokens: u64,
}

/// Something that was not reviewed.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotReviewed {
    /// The case.
    pub case: String,
    /// The run.
    pub run: u32,
    /// `case`, `unit` or `reference` (a reference on a skipped file or outside the diff).
    pub kind: String,
    /// Where (units and references).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<SpanOut>,
    /// Its skill (units).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill: Option<String>,
    /// Why.
    pub reason: String,
    /// References of the case it left not reviewed.
    pub references: usize,
}

/// One case review.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CaseRow {
    /// The case.
    pub id: String,
    /// The run.
    pub run: u32,
    /// Where the case was defined.
    pub origin: String,
    /// `reviewed`, `not-run` or `failed`.
    pub state: String,
    /// The review's outcome (`complete`, `partial`, `unavailable`), when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// Why it did not run (or failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Wall time, milliseconds.
    pub wall_ms: u64,
    /// What it cost, USD.
    pub cost_usd: f64,
    /// Its counts.
    pub true_positives: usize,
    /// Findings that matched nothing.
    pub false_positives: usize,
    /// References reviewed and not found.
    pub misses: usize,
    /// References not reviewed.
    pub not_reviewed: usize,
    /// Its findings and what each is.
    pub findings: Vec<FindingRow>,
    /// Its references and what became of each.
    pub references: Vec<ReferenceRow>,
}

/// A finding and its verdict.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FindingRow {
    /// Skill, route, place, severity, title.
    #[serde(flatten)]
    pub finding: FindingOut,
    /// `true-positive`, `false-positive` or `duplicate`.
    pub verdict: String,
    /// The reference it matched (index into the case's references).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<usize>,
}

/// A finding as the eval report writes it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FindingOut {
    /// Its skill.
    pub skill: String,
    /// The route that found it.
    pub route: String,
    /// The file.
    pub path: String,
    /// First line.
    pub start_line: u32,
    /// Last line.
    pub end_line: u32,
    /// Its severity.
    pub severity: String,
    /// Its title.
    pub title: String,
}

impl From<&FindingBrief> for FindingOut {
    fn from(f: &FindingBrief) -> Self {
        FindingOut {
            skill: f.skill.clone(),
            route: f.route.clone(),
            path: f.span.path.clone(),
            start_line: f.span.start_line,
            end_line: f.span.end_line,
            severity: f.severity.clone(),
            title: f.title.clone(),
        }
    }
}

/// A reference and what became of it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReferenceRow {
    /// The file.
    pub path: String,
    /// First line.
    pub start_line: u32,
    /// Last line.
    pub end_line: u32,
    /// `found`, `missed` or `not-reviewed`.
    pub result: String,
    /// For `not-reviewed`: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// How the evaluation ended.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Finished {
    /// Wall time of the whole evaluation, milliseconds.
    pub wall_ms: u64,
    /// The total budget ran out.
    pub budget_expired: bool,
    /// A signal interrupted it (the case reviews done are in the report).
    pub interrupted: bool,
    /// Case reviews planned (cases × runs).
    pub case_runs: usize,
    /// Case reviews that ran.
    pub reviewed: usize,
    /// Case reviews that never started.
    pub not_run: usize,
    /// Case reviews that could not be prepared.
    pub failed: usize,
}
