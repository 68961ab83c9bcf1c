//! Counts and the figures derived from them: precision, recall, F1, findings per case,
//! false positives per clean case, cost and time per case and per true finding. A figure
//! whose denominator is zero is absent (null), never 0 or 1.

use super::outcome::Spend;
use serde::{Deserialize, Serialize};

/// What a set of reviewed cases added up to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    /// Case reviews counted (a case run N times counts N).
    pub cases: usize,
    /// Of those, clean cases (no reference).
    pub clean_cases: usize,
    /// Findings reported.
    pub findings: usize,
    /// Findings that matched a reference.
    pub true_positives: usize,
    /// Findings that matched none (duplicates included).
    pub false_positives: usize,
    /// Of the false positives, second reports of a problem already found.
    pub duplicates: usize,
    /// Of the false positives, those on clean cases.
    pub false_positives_on_clean: usize,
    /// References reviewed and not found: the model's misses.
    pub misses: usize,
    /// References nobody reviewed (a unit or case not reviewed, a skipped file).
    pub not_reviewed: usize,
    /// What the reviews spent.
    pub spend: Spend,
    /// Wall time of the case reviews, summed (milliseconds).
    pub wall_ms: u64,
}

impl Tally {
    /// Adds `other`'s counts.
    pub fn add(&mut self, o: &Tally) {
        self.cases += o.cases;
        self.clean_cases += o.clean_cases;
        self.findings += o.findings;
        self.true_positives += o.true_positives;
        self.false_positives += o.false_positives;
        self.duplicates += o.duplicates;
        self.false_positives_on_clean += o.false_positives_on_clean;
        self.misses += o.misses;
        self.not_reviewed += o.not_reviewed;
        self.spend.add(&o.spend, 1.0);
        self.wall_ms += o.wall_ms;
    }
}

/// The figures of a [`Tally`], as every output shows them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metrics {
    /// Case reviews counted.
    pub cases: usize,
    /// Clean cases among them.
    pub clean_cases: usize,
    /// References: true positives + misses + not reviewed.
    pub references: usize,
    /// Findings reported.
    pub findings: usize,
    /// Findings that matched a reference.
    pub true_positives: usize,
    /// Findings that matched none.
    pub false_positives: usize,
    /// Of those, second reports of a found problem.
    pub duplicates: usize,
    /// References reviewed and not found.
    pub misses: usize,
    /// References not reviewed (kept apart from the misses).
    pub not_reviewed: usize,
    /// TP / (TP + FP).
    pub precision: Option<f64>,
    /// TP / (TP + misses): of the references that were reviewed.
    pub recall: Option<f64>,
    /// TP / references: the not-reviewed ones counted as misses.
    pub recall_of_all: Option<f64>,
    /// 2PR / (P + R).
    pub f1: Option<f64>,
    /// Findings / cases.
    pub findings_per_case: Option<f64>,
    /// False positives on clean cases / clean cases.
    pub false_positives_per_clean_case: Option<f64>,
    /// USD spent.
    pub cost_usd: f64,
    /// USD / case.
    pub cost_per_case_usd: Option<f64>,
    /// USD / true positive.
    pub cost_per_true_positive_usd: Option<f64>,
    /// Wall milliseconds / case (a route row: its attempts' time).
    pub ms_per_case: Option<f64>,
    /// Milliseconds / true positive.
    pub ms_per_true_positive: Option<f64>,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Answer tokens.
    pub output_tokens: u64,
}

fn ratio(n: f64, d: usize) -> Option<f64> {
    (d > 0).then(|| round(n / d as f64))
}

/// Figures to 6 decimals, so JSON and baselines compare equal across runs.
fn round(x: f64) -> f64 {
    (x * 1e6).round() / 1e6 + 0.0
}

impl Metrics {
    /// The figures of `t`; `ms` is the time they are per case of (wall time overall,
    /// attempt time for a route's row).
    pub fn of(t: &Tally, ms: u64) -> Metrics {
        let tp = t.true_positives;
        let precision = ratio(tp as f64, tp + t.false_positives);
        let recall = ratio(tp as f64, tp + t.misses);
        let f1 = match (precision, recall) {
            (Some(p), Some(r)) if p + r > 0.0 => Some(round(2.0 * p * r / (p + r))),
            (Some(_), Some(_)) => Some(0.0),
            _ => None,
        };
        let references = tp + t.misses + t.not_reviewed;
        Metrics {
            cases: t.cases,
            clean_cases: t.clean_cases,
            references,
            findings: t.findings,
            true_positives: tp,
            false_positives: t.false_positives,
            duplicates: t.duplicates,
            misses: t.misses,
            not_reviewed: t.not_reviewed,
            precision,
            recall,
            recall_of_all: ratio(tp as f64, references),
            f1,
            findings_per_case: ratio(t.findings as f64, t.cases),
            false_positives_per_clean_case: ratio(t.false_positives_on_clean as f64, t.clean_cases),
            cost_usd: round_usd(t.spend.cost_usd),
            cost_per_case_usd: ratio(t.spend.cost_usd, t.cases).map(round_usd),
            cost_per_true_positive_usd: ratio(t.spend.cost_usd, tp).map(round_usd),
            ms_per_case: ratio(ms as f64, t.cases),
            ms_per_true_positive: ratio(ms as f64, tp),
            input_tokens: t.spend.input_tokens,
            output_tokens: t.spend.output_tokens,
        }
    }
}

fn round_usd(x: f64) -> f64 {
    (x * 1e9).round() / 1e9 + 0.0
}

/// One figure over the runs of `--runs N`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Spread {
    /// The mean of the runs that have the figure.
    pub mean: f64,
    /// The lowest.
    pub min: f64,
    /// The highest.
    pub max: f64,
    /// The population standard deviation.
    pub stdev: f64,
    /// Runs that have the figure.
    pub runs: usize,
}

impl Spread {
    /// The spread of `values` (absent ones left out); None when none is present.
    pub fn of(values: impl IntoIterator<Item = Option<f64>>) -> Option<Spread> {
        let v: Vec<f64> = values.into_iter().flatten().collect();
        if v.is_empty() {
            return None;
        }
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        Some(Spread {
            mean: round(mean),
            min: round(v.iter().copied().fold(f64::INFINITY, f64::min)),
            max: round(v.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
            stdev: round(var.sqrt()),
            runs: v.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(tp: usize, fp: usize, misses: usize) -> Tally {
        Tally {
            cases: 1,
            findings: tp + fp,
            true_positives: tp,
            false_positives: fp,
            misses,
            ..Tally::default()
        }
    }

    #[test]
    fn three_of_five_found_and_two_false_is_point_six_all_round() {
        let m = Metrics::of(&tally(3, 2, 2), 0);
        assert_eq!(m.precision, Some(0.6));
        assert_eq!(m.recall, Some(0.6));
        assert_eq!(m.f1, Some(0.6));
        assert_eq!(m.references, 5);
    }

    #[test]
    fn figures_with_no_denominator_are_absent_and_zero_hits_give_f1_zero() {
        let none = Metrics::of(&Tally::default(), 0);
        assert_eq!((none.precision, none.recall, none.f1), (None, None, None));
        assert_eq!(none.cost_per_true_positive_usd, None);
        let zero = Metrics::of(&tally(0, 2, 3), 0);
        assert_eq!(
            (zero.precision, zero.recall, zero.f1),
            (Some(0.0), Some(0.0), Some(0.0))
        );
    }

    #[test]
    fn not_reviewed_references_stay_out_of_recall_but_count_in_recall_of_all() {
        let mut t = tally(2, 0, 2);
        t.not_reviewed = 4;
        let m = Metrics::of(&t, 0);
        assert_eq!(m.recall, Some(0.5));
        assert_eq!(m.recall_of_all, Some(0.25));
        assert_eq!(m.references, 8);
    }

    #[test]
    fn cost_and_time_per_case_and_per_true_positive() {
        let mut t = tally(2, 1, 0);
        t.cases = 4;
        t.spend.cost_usd = 0.8;
        let m = Metrics::of(&t, 1000);
        assert_eq!(m.cost_per_case_usd, Some(0.2));
        assert_eq!(m.cost_per_true_positive_usd, Some(0.4));
        assert_eq!(m.ms_per_case, Some(250.0));
        assert_eq!(m.ms_per_true_positive, Some(500.0));
    }

    #[test]
    fn spread_over_runs() {
        let s = Spread::of([Some(1.0), Some(0.5), None, Some(0.0)]).unwrap();
        assert_eq!((s.mean, s.min, s.max, s.runs), (0.5, 0.0, 1.0, 3));
        assert_eq!(s.stdev, 0.408248);
        assert!(Spread::of([None]).is_none());
    }
}
