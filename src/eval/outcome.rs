//! What one review of one case left behind, kept small: an evaluation of hundreds of
//! cases holds these, never the reviews' whole reports (prompts, attempts, snippets).

use super::matching::Span;
use crate::engine::UnitStatus;
use crate::report::Report;
use serde::Serialize;
use std::collections::BTreeMap;

/// What a route's attempts spent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Spend {
    /// USD (attempts whose cost is unknown count as nothing).
    pub cost_usd: f64,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Answer tokens.
    pub output_tokens: u64,
    /// Time the attempts took, milliseconds (summed: attempts overlap).
    pub model_ms: u64,
}

impl Spend {
    /// Adds `other`, scaled by `share` (a consolidated unit's cost is split between its
    /// skills).
    pub fn add(&mut self, other: &Spend, share: f64) {
        self.cost_usd += other.cost_usd * share;
        self.input_tokens += (other.input_tokens as f64 * share).round() as u64;
        self.output_tokens += (other.output_tokens as f64 * share).round() as u64;
        self.model_ms += (other.model_ms as f64 * share).round() as u64;
    }
}

/// One unit of a case's review.
#[derive(Debug, Clone)]
pub struct UnitBrief {
    /// Every skill its request served.
    pub skills: Vec<String>,
    /// Its chunk's lines.
    pub span: Span,
    /// A model answered it.
    pub reviewed: bool,
    /// Its status (`reviewed`, `timed_out`, ...).
    pub status: String,
    /// The route that answered it.
    pub route: Option<String>,
    /// Why it ended so.
    pub reason: String,
    /// What its attempts spent, per route.
    pub spend: BTreeMap<String, Spend>,
}

/// One finding of a case's review.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FindingBrief {
    /// Its skill.
    pub skill: String,
    /// The route that found it.
    pub route: String,
    /// Where.
    #[serde(flatten)]
    pub span: SpanOut,
    /// Its severity.
    pub severity: String,
    /// Its title.
    pub title: String,
    /// Its description (for the judge).
    #[serde(skip)]
    pub description: String,
}

/// A span as the JSON report writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpanOut {
    /// The file.
    pub path: String,
    /// First line.
    pub start_line: u32,
    /// Last line.
    pub end_line: u32,
}

impl From<&Span> for SpanOut {
    fn from(s: &Span) -> Self {
        SpanOut {
            path: s.path.clone(),
            start_line: s.start,
            end_line: s.end,
        }
    }
}

impl FindingBrief {
    /// Its lines as the matcher takes them.
    pub fn location(&self) -> Span {
        Span::new(&self.span.path, self.span.start_line, self.span.end_line)
    }
}

/// How a case's review went, as a whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// The review ran (complete, partial or unavailable: its units say).
    Reviewed {
        /// The review's outcome.
        outcome: String,
    },
    /// It never started (the total budget was spent, or an interrupt came first).
    NotRun(String),
    /// It could not be prepared (a bad patch, a ref gone) or its config differs.
    Failed(String),
}

/// One review of one case.
#[derive(Debug, Clone)]
pub struct CaseRun {
    /// Index of the case in the corpus.
    pub case: usize,
    /// 1-based run (`--runs N`).
    pub run: u32,
    /// How it went.
    pub state: State,
    /// Wall time of the review, milliseconds.
    pub wall_ms: u64,
    /// What the whole review spent (verification included).
    pub spend: Spend,
    /// Its units.
    pub units: Vec<UnitBrief>,
    /// Its findings.
    pub findings: Vec<FindingBrief>,
    /// Files the plan left out, with the reason.
    pub skipped: Vec<(String, String)>,
    /// No unit reviewed because every attempt failed on setup (a bad key, an unknown
    /// model): the message `warden review` exits 2 with.
    pub setup_failure: Option<String>,
}

impl CaseRun {
    /// A case that produced no review.
    pub fn without_review(case: usize, run: u32, state: State) -> CaseRun {
        CaseRun {
            case,
            run,
            state,
            wall_ms: 0,
            spend: Spend::default(),
            units: Vec::new(),
            findings: Vec::new(),
            skipped: Vec::new(),
            setup_failure: None,
        }
    }

    /// The parts of `report` an evaluation scores.
    pub fn from_report(case: usize, run: u32, report: &Report) -> CaseRun {
        let units = report.units.iter().map(unit_brief).collect();
        let findings = report
            .findings
            .iter()
            .map(|f| FindingBrief {
                skill: f.skill.clone(),
                route: f.route.clone(),
                span: SpanOut {
                    path: f.path.clone(),
                    start_line: f.start_line,
                    end_line: f.end_line,
                },
                severity: f.severity.as_str().to_string(),
                title: f.title.clone(),
                description: f.description.clone(),
            })
            .collect();
        let routes = report.routes.values();
        CaseRun {
            setup_failure: report.setup_failure(),
            case,
            run,
            state: State::Reviewed {
                outcome: report.outcome.as_str().to_string(),
            },
            wall_ms: report.duration_ms,
            spend: Spend {
                cost_usd: report.summary.cost_usd,
                input_tokens: routes.clone().map(|r| r.input_tokens).sum(),
                output_tokens: routes.map(|r| r.output_tokens).sum(),
                model_ms: report
                    .units
                    .iter()
                    .flat_map(|u| &u.attempts)
                    .map(|a| a.duration_ms)
                    .sum(),
            },
            units,
            findings,
            skipped: report
                .skipped_files
                .iter()
                .map(|s| (s.path.to_string(), s.reason.clone()))
                .collect(),
        }
    }

    /// Whether the review ran at all.
    pub fn ran(&self) -> bool {
        matches!(self.state, State::Reviewed { .. })
    }
}

fn unit_brief(u: &crate::report::UnitReport) -> UnitBrief {
    let mut spend: BTreeMap<String, Spend> = BTreeMap::new();
    for a in &u.attempts {
        let s = spend.entry(a.route.clone()).or_default();
        s.cost_usd += a.cost_usd.unwrap_or(0.0);
        s.input_tokens += a.input_tokens.unwrap_or(0);
        s.output_tokens += a.output_tokens.unwrap_or(0);
        s.model_ms += a.duration_ms;
    }
    UnitBrief {
        skills: u.skills.clone(),
        span: Span::new(&u.path, u.start_line, u.end_line),
        reviewed: u.status == UnitStatus::Reviewed,
        status: u.status.as_str().to_string(),
        route: u.route.clone(),
        reason: u.reason.clone(),
        spend,
    }
}
