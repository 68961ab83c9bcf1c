//! Scoring one review of one case: its findings matched to the case's references
//! (`matching.rs`), each reference found, missed by the model, or not reviewed at all
//! (its unit timed out, its file was skipped, the case never ran). Misses of what was not
//! reviewed are kept apart from the model's: they are neither the model's fault nor left
//! out. A scope is the whole review or one skill's part of it.

use super::case::Case;
use super::matching::{self, Candidate, Span};
use super::outcome::{CaseRun, State, UnitBrief};

/// Whether a reference's place was reviewed, and by which route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Coverage {
    /// The nearest unit on its file was answered (by this route).
    Reviewed(Option<String>),
    /// Nothing reviewed it, and why.
    NotReviewed(String),
}

/// The unit nearest to `reference` among `units` decides (a tie goes to a reviewed unit);
/// with none on its file, the plan's skip reason or "not in the diff".
pub fn coverage(reference: &Span, units: &[&UnitBrief], skipped: &[(String, String)]) -> Coverage {
    let nearest = units
        .iter()
        .filter_map(|u| matching::distance(&u.span, reference).map(|d| (d, !u.reviewed, *u)))
        .min_by_key(|(d, not_reviewed, _)| (*d, *not_reviewed));
    match nearest {
        Some((_, _, u)) if u.reviewed => Coverage::Reviewed(u.route.clone()),
        Some((_, _, u)) => Coverage::NotReviewed(format!(
            "unit {}:{}-{} {}: {}",
            u.span.path, u.span.start, u.span.end, u.status, u.reason
        )),
        None => match skipped.iter().find(|(p, _)| *p == reference.path) {
            Some((_, why)) => Coverage::NotReviewed(format!("file skipped ({why})")),
            None => Coverage::NotReviewed("not in the reviewed diff".into()),
        },
    }
}

/// What became of one finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FindingResult {
    /// It matched this reference.
    Match(usize),
    /// No reference it may match was left: a second report of a problem already found.
    Duplicate,
    /// Nothing it matches.
    FalsePositive,
}

/// What became of one reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReferenceResult {
    /// This finding matched it.
    Found(usize),
    /// It was reviewed (by this route) and no finding matched it.
    Missed(Option<String>),
    /// It was not reviewed, and why.
    NotReviewed(String),
}

/// One scope of one case's review, scored.
#[derive(Debug, Clone)]
pub struct Scored {
    /// Per finding of the scope (indices into the case run's findings).
    pub findings: Vec<(usize, FindingResult)>,
    /// Per reference of the case.
    pub references: Vec<ReferenceResult>,
}

/// Scores `run` of `case` for `skill` (None: the whole review). `accepted(finding,
/// reference)` is the judge's word on a candidate pair (true without a judge).
pub fn score(
    case: &Case,
    run: &CaseRun,
    skill: Option<&str>,
    window: u32,
    accepted: &dyn Fn(usize, usize) -> bool,
) -> Scored {
    let in_scope: Vec<usize> = (0..run.findings.len())
        .filter(|i| skill.is_none_or(|s| run.findings[*i].skill == s))
        .collect();
    let spans: Vec<Span> = in_scope
        .iter()
        .map(|i| run.findings[*i].location())
        .collect();
    let refs = reference_spans(case);
    let candidates: Vec<Candidate> = matching::candidates(&spans, &refs, window);
    let a = matching::assign(
        &candidates,
        |c| accepted(in_scope[c.finding], c.reference),
        spans.len(),
        refs.len(),
    );
    let units: Vec<&UnitBrief> = run
        .units
        .iter()
        .filter(|u| skill.is_none_or(|s| u.skills.iter().any(|k| k == s)))
        .collect();
    let references = refs
        .iter()
        .enumerate()
        .map(|(r, span)| match a.reference_to_finding[r] {
            Some(f) => ReferenceResult::Found(in_scope[f]),
            None => match &run.state {
                State::Reviewed { .. } => match coverage(span, &units, &run.skipped) {
                    Coverage::Reviewed(route) => ReferenceResult::Missed(route),
                    Coverage::NotReviewed(why) => ReferenceResult::NotReviewed(why),
                },
                State::NotRun(why) | State::Failed(why) => {
                    ReferenceResult::NotReviewed(format!("case not reviewed: {why}"))
                }
            },
        })
        .collect();
    let findings = in_scope
        .iter()
        .enumerate()
        .map(|(k, i)| {
            let result = match a.finding_to_reference[k] {
                Some(r) => FindingResult::Match(r),
                None if a.duplicate[k] => FindingResult::Duplicate,
                None => FindingResult::FalsePositive,
            };
            (*i, result)
        })
        .collect();
    Scored {
        findings,
        references,
    }
}

/// The case's references as spans.
pub fn reference_spans(case: &Case) -> Vec<Span> {
    case.references
        .iter()
        .map(|r| Span::new(&r.path, r.start_line, r.end_line))
        .collect()
}

/// Every finding–reference pair of `run` whose locations agree (the judge's questions).
pub fn candidate_pairs(case: &Case, run: &CaseRun, window: u32) -> Vec<Candidate> {
    let spans: Vec<Span> = run.findings.iter().map(|f| f.location()).collect();
    matching::candidates(&spans, &reference_spans(case), window)
}
