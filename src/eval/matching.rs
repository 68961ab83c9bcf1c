//! Matching findings to reference comments (docs/design.md §14, "Measured quality"): a pair is a
//! candidate when both sit on the same path and their lines overlap or lie within the line
//! window; candidates are then taken one-to-one, nearest first, so two findings on one bug
//! give one true positive and one false positive (a duplicate), never two hits. A judge
//! may reject candidates before the assignment; what it rejected never matches.

/// Lines `start..=end` of one path (new-file numbers, as findings carry them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// The file.
    pub path: String,
    /// First line.
    pub start: u32,
    /// Last line (at least `start`).
    pub end: u32,
}

impl Span {
    /// A span of `path`, its ends put in order.
    pub fn new(path: impl Into<String>, start: u32, end: u32) -> Span {
        Span {
            path: path.into(),
            start: start.min(end),
            end: start.max(end),
        }
    }
}

/// Lines between two spans of one path: 0 when they overlap, else the gap between the
/// nearer ends (lines 10 and 13 are 3 apart). None on different paths.
pub fn distance(a: &Span, b: &Span) -> Option<u32> {
    if a.path != b.path {
        return None;
    }
    // Overlapping spans give 0 both ways; otherwise one of the two gaps is positive.
    Some(
        b.start
            .saturating_sub(a.end)
            .max(a.start.saturating_sub(b.end)),
    )
}

/// A finding–reference pair whose locations agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// Index of the finding.
    pub finding: usize,
    /// Index of the reference.
    pub reference: usize,
    /// Lines between them (0: overlapping).
    pub distance: u32,
}

/// Every pair on the same path within `window` lines, nearest first (ties: the earlier
/// finding, then the earlier reference), so the order is the assignment's.
pub fn candidates(findings: &[Span], references: &[Span], window: u32) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = findings
        .iter()
        .enumerate()
        .flat_map(|(f, fs)| {
            references.iter().enumerate().filter_map(move |(r, rs)| {
                distance(fs, rs)
                    .filter(|d| *d <= window)
                    .map(|distance| Candidate {
                        finding: f,
                        reference: r,
                        distance,
                    })
            })
        })
        .collect();
    out.sort_by_key(|c| (c.distance, c.finding, c.reference));
    out
}

/// Which finding took which reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// Per finding: the reference it matched.
    pub finding_to_reference: Vec<Option<usize>>,
    /// Per reference: the finding that matched it.
    pub reference_to_finding: Vec<Option<usize>>,
    /// Per finding: it had an accepted candidate but another finding took each of its
    /// references (a second report of one problem).
    pub duplicate: Vec<bool>,
}

/// One-to-one, nearest first, over the candidates `accepted` keeps (in the order
/// [`candidates`] gives them).
pub fn assign(
    candidates: &[Candidate],
    accepted: impl Fn(&Candidate) -> bool,
    findings: usize,
    references: usize,
) -> Assignment {
    let mut a = Assignment {
        finding_to_reference: vec![None; findings],
        reference_to_finding: vec![None; references],
        duplicate: vec![false; findings],
    };
    let mut had_candidate = vec![false; findings];
    for c in candidates.iter().filter(|c| accepted(c)) {
        had_candidate[c.finding] = true;
        if a.finding_to_reference[c.finding].is_none()
            && a.reference_to_finding[c.reference].is_none()
        {
            a.finding_to_reference[c.finding] = Some(c.reference);
            a.reference_to_finding[c.reference] = Some(c.finding);
        }
    }
    for (f, had) in had_candidate.into_iter().enumerate() {
        a.duplicate[f] = had && a.finding_to_reference[f].is_none();
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(line: u32) -> Span {
        Span::new("a.rs", line, line)
    }

    fn run(findings: &[Span], refs: &[Span], window: u32) -> Assignment {
        let c = candidates(findings, refs, window);
        assign(&c, |_| true, findings.len(), refs.len())
    }

    #[test]
    fn distance_is_zero_on_overlap_and_the_gap_otherwise() {
        assert_eq!(
            distance(&Span::new("a", 5, 9), &Span::new("a", 9, 12)),
            Some(0)
        );
        assert_eq!(distance(&at(10), &at(13)), Some(3));
        assert_eq!(distance(&at(13), &at(10)), Some(3));
        assert_eq!(distance(&at(10), &Span::new("b.rs", 10, 10)), None);
    }

    #[test]
    fn the_window_edge_is_inclusive() {
        assert_eq!(run(&[at(13)], &[at(10)], 3).finding_to_reference, [Some(0)]);
        assert_eq!(run(&[at(14)], &[at(10)], 3).finding_to_reference, [None]);
        assert_eq!(run(&[at(7)], &[at(10)], 3).finding_to_reference, [Some(0)]);
        assert_eq!(run(&[at(6)], &[at(10)], 3).finding_to_reference, [None]);
        assert_eq!(run(&[at(11)], &[at(10)], 0).finding_to_reference, [None]);
    }

    #[test]
    fn two_findings_on_one_bug_give_one_match_and_one_duplicate() {
        let a = run(&[at(12), at(10)], &[at(10)], 3);
        // The nearer one takes it, whatever the order.
        assert_eq!(a.finding_to_reference, [None, Some(0)]);
        assert_eq!(a.duplicate, [true, false]);
    }

    #[test]
    fn nearest_first_lets_each_finding_keep_its_own_bug() {
        // Finding 0 is within reach of both bugs; greedy by finding order would take the
        // second bug's match away from finding 1.
        let a = run(&[at(12), at(14)], &[at(10), at(14)], 3);
        assert_eq!(a.finding_to_reference, [Some(0), Some(1)]);
        assert_eq!(a.duplicate, [false, false]);
    }

    #[test]
    fn a_rejected_pair_never_matches() {
        let f = [at(10)];
        let r = [at(10)];
        let c = candidates(&f, &r, 3);
        let a = assign(&c, |_| false, 1, 1);
        assert_eq!(a.finding_to_reference, [None]);
        assert_eq!(a.duplicate, [false]);
    }
}
