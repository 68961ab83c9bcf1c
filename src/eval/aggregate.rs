//! From the case reviews to the report: each review scored for the whole review and for
//! each skill, the counts added up overall, per run and per skill × route.

use super::case::Corpus;
use super::metrics::{Metrics, Spread, Tally};
use super::outcome::{CaseRun, SpanOut, State};
use super::report::{
    CaseRow, CorpusInfo, EVAL_SCHEMA_VERSION, EvalReport, EvalSettings, FindingOut, FindingRow,
    Finished, Group, JudgeSummary, NotReviewed, ReferenceRow, RunFigures,
};
use super::score::{self, FindingResult, ReferenceResult, Scored};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The judge's verdicts: (case review, finding, reference) → same problem. A pair with
/// no verdict matches by location alone.
pub type Verdicts = HashMap<(usize, usize, usize), bool>;

/// What the report is built from.
pub struct Inputs<'a> {
    /// The corpus.
    pub corpus: &'a Corpus,
    /// Every case review, in (case, run) order.
    pub runs: &'a [CaseRun],
    /// The judge's verdicts.
    pub verdicts: &'a Verdicts,
    /// The judge's summary, when one was asked.
    pub judge: Option<JudgeSummary>,
    /// How the evaluation ran.
    pub settings: EvalSettings,
    /// How it ended.
    pub finished: Finished,
}

/// Builds the report.
pub fn build(inp: Inputs) -> EvalReport {
    let Inputs {
        corpus,
        runs,
        verdicts,
        judge,
        settings,
        finished,
    } = inp;
    let window = settings.line_window;
    let mut per_run: BTreeMap<u32, Tally> = BTreeMap::new();
    let mut groups: BTreeMap<(String, Option<String>), Tally> = BTreeMap::new();
    let mut cases = Vec::new();
    let mut not_reviewed = Vec::new();
    let skills = skills_of(runs);
    for (i, run) in runs.iter().enumerate() {
        let case = &corpus.cases[run.case];
        let accepted = |f: usize, r: usize| verdicts.get(&(i, f, r)).copied().unwrap_or(true);
        let whole = score::score(case, run, None, window, &accepted);
        // False positives per clean case are over clean cases that were reviewed: a case
        // whose units were not (a bad key, a budget) would count as a clean 0.
        let clean = case.references.is_empty() && fully_reviewed(run);
        let tally = tally_of(&whole, run, clean);
        per_run.entry(run.run).or_default().add(&tally);
        for skill in &skills {
            let scored = score::score(case, run, Some(skill), window, &accepted);
            add_groups(&mut groups, skill, &scored, run, clean);
        }
        not_reviewed.extend(not_reviewed_of(&case.id, run, &whole));
        cases.push(case_row(corpus, run, &whole, &tally));
    }
    let mut overall = Tally::default();
    for t in per_run.values() {
        overall.add(t);
    }
    let run_rows: Vec<RunFigures> = per_run
        .iter()
        .map(|(run, t)| RunFigures {
            run: *run,
            metrics: Metrics::of(t, t.wall_ms),
        })
        .collect();
    let spread = if run_rows.len() > 1 {
        spread_of(&run_rows)
    } else {
        BTreeMap::new()
    };
    EvalReport {
        schema_version: EVAL_SCHEMA_VERSION,
        kind: "warden-eval".into(),
        corpus: CorpusInfo {
            source: corpus.source.clone(),
            shape: corpus.shape,
            cases: corpus.cases.len(),
            clean_cases: corpus
                .cases
                .iter()
                .filter(|c| c.references.is_empty())
                .count(),
            references: corpus.cases.iter().map(|c| c.references.len()).sum(),
            left_out: corpus.left_out.clone(),
        },
        settings,
        overall: Metrics::of(&overall, overall.wall_ms),
        groups: groups
            .into_iter()
            .map(|((skill, route), t)| Group {
                skill,
                route,
                metrics: Metrics::of(&t, t.spend.model_ms),
            })
            .collect(),
        runs: run_rows,
        spread,
        judge,
        not_reviewed,
        cases,
        finished,
        baseline: None,
        setup_failure: setup_failure_of(runs),
    }
}

/// Every skill that ran in any case review (units and findings).
fn skills_of(runs: &[CaseRun]) -> BTreeSet<String> {
    runs.iter()
        .flat_map(|r| {
            r.units
                .iter()
                .flat_map(|u| u.skills.iter().cloned())
                .chain(r.findings.iter().map(|f| f.skill.clone()))
        })
        .collect()
}

/// The setup failure every case review that ran ended with, if they all did.
fn setup_failure_of(runs: &[CaseRun]) -> Option<String> {
    let ran: Vec<&CaseRun> = runs.iter().filter(|r| r.ran()).collect();
    if ran.is_empty() || ran.iter().any(|r| r.setup_failure.is_none()) {
        return None;
    }
    ran[0].setup_failure.clone()
}

/// A review ran and every unit of it was answered.
fn fully_reviewed(run: &CaseRun) -> bool {
    run.ran() && run.units.iter().all(|u| u.reviewed)
}

/// The whole review's counts.
fn tally_of(s: &Scored, run: &CaseRun, clean: bool) -> Tally {
    let mut t = Tally::default();
    if run.ran() {
        t.cases = 1;
        t.clean_cases = usize::from(clean);
        t.spend = run.spend;
        t.wall_ms = run.wall_ms;
    }
    for (_, result) in &s.findings {
        count_finding(&mut t, *result, clean);
    }
    for r in &s.references {
        match r {
            ReferenceResult::Found(_) => {}
            ReferenceResult::Missed(_) => t.misses += 1,
            ReferenceResult::NotReviewed(_) => t.not_reviewed += 1,
        }
    }
    t
}

fn count_finding(t: &mut Tally, result: FindingResult, clean: bool) {
    t.findings += 1;
    match result {
        FindingResult::Match(_) => t.true_positives += 1,
        FindingResult::Duplicate | FindingResult::FalsePositive => {
            t.false_positives += 1;
            t.duplicates += usize::from(result == FindingResult::Duplicate);
            t.false_positives_on_clean += usize::from(clean);
        }
    }
}

/// One skill's part of a review, into its skill × route rows: findings by the route that
/// found them, misses by the route that reviewed the place, not-reviewed under no route;
/// spend by the route of each attempt (a consolidated unit's split between its skills).
fn add_groups(
    groups: &mut BTreeMap<(String, Option<String>), Tally>,
    skill: &str,
    s: &Scored,
    run: &CaseRun,
    clean: bool,
) {
    let mut touched: BTreeSet<Option<String>> = BTreeSet::new();
    let key = |route: Option<String>| (skill.to_string(), route);
    for u in run
        .units
        .iter()
        .filter(|u| u.skills.iter().any(|k| k == skill))
    {
        let share = 1.0 / u.skills.len().max(1) as f64;
        for (route, spend) in &u.spend {
            touched.insert(Some(route.clone()));
            let t = groups.entry(key(Some(route.clone()))).or_default();
            t.spend.add(spend, share);
        }
        if let Some(route) = &u.route {
            touched.insert(Some(route.clone()));
        }
    }
    for (f, result) in &s.findings {
        let route = Some(run.findings[*f].route.clone());
        touched.insert(route.clone());
        count_finding(groups.entry(key(route)).or_default(), *result, clean);
    }
    for r in &s.references {
        let (route, missed) = match r {
            ReferenceResult::Found(_) => continue,
            ReferenceResult::Missed(route) => (route.clone(), true),
            ReferenceResult::NotReviewed(_) => (None, false),
        };
        touched.insert(route.clone());
        let t = groups.entry(key(route)).or_default();
        if missed {
            t.misses += 1;
        } else {
            t.not_reviewed += 1;
        }
    }
    if run.ran() {
        for route in touched {
            let t = groups.entry(key(route)).or_default();
            t.cases += 1;
            t.clean_cases += usize::from(clean);
        }
    }
}

/// The case, its units and its references that were not reviewed.
fn not_reviewed_of(id: &str, run: &CaseRun, whole: &Scored) -> Vec<NotReviewed> {
    let unreviewed_refs = whole
        .references
        .iter()
        .filter(|r| matches!(r, ReferenceResult::NotReviewed(_)))
        .count();
    let entry =
        |kind: &str, at: Option<SpanOut>, skill: Option<String>, reason: String, n| NotReviewed {
            case: id.to_string(),
            run: run.run,
            kind: kind.into(),
            at,
            skill,
            reason,
            references: n,
        };
    match &run.state {
        State::NotRun(why) | State::Failed(why) => {
            return vec![entry("case", None, None, why.clone(), unreviewed_refs)];
        }
        State::Reviewed { .. } => {}
    }
    let mut out: Vec<NotReviewed> = run
        .units
        .iter()
        .filter(|u| !u.reviewed)
        .map(|u| {
            let held = whole
                .references
                .iter()
                .filter(|r| match r {
                    ReferenceResult::NotReviewed(why) => why.starts_with(&format!(
                        "unit {}:{}-{} ",
                        u.span.path, u.span.start, u.span.end
                    )),
                    _ => false,
                })
                .count();
            let reason = format!("{}: {}", u.status, u.reason);
            entry(
                "unit",
                Some((&u.span).into()),
                Some(u.skills.join("+")),
                reason,
                held,
            )
        })
        .collect();
    out.extend(
        whole
            .references
            .iter()
            .filter_map(|r| match r {
                ReferenceResult::NotReviewed(why) if !why.starts_with("unit ") => Some(why),
                _ => None,
            })
            .map(|why| entry("reference", None, None, why.clone(), 1)),
    );
    out
}

fn case_row(corpus: &Corpus, run: &CaseRun, whole: &Scored, t: &Tally) -> CaseRow {
    let case = &corpus.cases[run.case];
    let (state, outcome, reason) = match &run.state {
        State::Reviewed { outcome } => ("reviewed", Some(outcome.clone()), None),
        State::NotRun(why) => ("not-run", None, Some(why.clone())),
        State::Failed(why) => ("failed", None, Some(why.clone())),
    };
    let findings = whole
        .findings
        .iter()
        .map(|(f, result)| {
            let (verdict, reference) = match result {
                FindingResult::Match(r) => ("true-positive", Some(*r)),
                FindingResult::Duplicate => ("duplicate", None),
                FindingResult::FalsePositive => ("false-positive", None),
            };
            FindingRow {
                finding: FindingOut::from(&run.findings[*f]),
                verdict: verdict.into(),
                reference,
            }
        })
        .collect();
    let references = case
        .references
        .iter()
        .zip(&whole.references)
        .map(|(r, result)| {
            let (result, reason) = match result {
                ReferenceResult::Found(_) => ("found", None),
                ReferenceResult::Missed(_) => ("missed", None),
                ReferenceResult::NotReviewed(why) => ("not-reviewed", Some(why.clone())),
            };
            ReferenceRow {
                path: r.path.clone(),
                start_line: r.start_line,
                end_line: r.end_line,
                result: result.into(),
                reason,
            }
        })
        .collect();
    CaseRow {
        id: case.id.clone(),
        run: run.run,
        origin: case.origin.clone(),
        state: state.into(),
        outcome,
        reason,
        wall_ms: run.wall_ms,
        cost_usd: t.spend.cost_usd,
        true_positives: t.true_positives,
        false_positives: t.false_positives,
        misses: t.misses,
        not_reviewed: t.not_reviewed,
        findings,
        references,
    }
}

/// The headline figures' spread over the runs.
fn spread_of(runs: &[RunFigures]) -> BTreeMap<String, Spread> {
    type Figure = fn(&Metrics) -> Option<f64>;
    let figures: [(&str, Figure); 7] = [
        ("precision", |m| m.precision),
        ("recall", |m| m.recall),
        ("f1", |m| m.f1),
        ("findingsPerCase", |m| m.findings_per_case),
        ("falsePositivesPerCleanCase", |m| {
            m.false_positives_per_clean_case
        }),
        ("costPerCaseUsd", |m| m.cost_per_case_usd),
        ("msPerCase", |m| m.ms_per_case),
    ];
    figures
        .iter()
        .filter_map(|(name, get)| {
            Spread::of(runs.iter().map(|r| get(&r.metrics))).map(|s| (name.to_string(), s))
        })
        .collect()
}
