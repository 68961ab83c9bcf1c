//! One finding per location and title: two skills (or two overlapping units) that report
//! the same problem on the same lines are shown once, with the highest severity and
//! confidence any of them gave; it fails the run if any of them fails it.

use super::{Finding, UnitReport};
use std::collections::HashMap;

type Key = (String, u32, u32, String);

fn key(f: &Finding) -> Key {
    (
        f.path.clone(),
        f.start_line,
        f.end_line,
        f.title.trim().to_lowercase(),
    )
}

/// Removes repeated findings from the units (the first one found stays, raised to the
/// strongest severity and confidence of its repeats); returns how many were removed.
pub(crate) fn remove_duplicates(units: &mut [UnitReport]) -> usize {
    let mut first: HashMap<Key, (usize, usize)> = HashMap::new();
    let mut strongest: Vec<(usize, usize, Finding)> = Vec::new();
    let mut removed = 0;
    for (ui, unit) in units.iter_mut().enumerate() {
        let mut fi = 0;
        while fi < unit.findings.len() {
            let k = key(&unit.findings[fi]);
            match first.get(&k) {
                None => {
                    first.insert(k, (ui, fi));
                    fi += 1;
                }
                Some(&(kept_u, kept_f)) => {
                    let dup = unit.findings.remove(fi);
                    strongest.push((kept_u, kept_f, dup));
                    removed += 1;
                }
            }
        }
    }
    for (u, f, dup) in strongest {
        let kept = &mut units[u].findings[f];
        kept.severity = kept.severity.max(dup.severity);
        kept.confidence = kept.confidence.max(dup.confidence);
        // It fails the run if any skill that reported it says so.
        kept.fails_run |= dup.fails_run;
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::UnitStatus;
    use crate::severity::{Confidence, Severity};

    fn finding(title: &str, line: u32, severity: Severity) -> Finding {
        Finding {
            id: String::new(),
            skill: "s".into(),
            severity,
            confidence: Confidence::Low,
            title: title.into(),
            description: String::new(),
            suggestion: None,
            replacement: None,
            path: "a.rs".into(),
            start_line: line,
            end_line: line,
            route: "r".into(),
            model: "m".into(),
            fails_run: false,
            verification: None,
            line_text: String::new(),
            context: None,
        }
    }

    fn unit(findings: Vec<Finding>) -> UnitReport {
        UnitReport {
            skill: "s".into(),
            skills: vec!["s".into()],
            path: "a.rs".into(),
            start_line: 1,
            end_line: 9,
            optional: false,
            status: UnitStatus::Reviewed,
            route: None,
            model: None,
            source: crate::report::Source::Model,
            cached_at: None,
            cache_level: None,
            reason: String::new(),
            routes_tried: vec![],
            attempts: vec![],
            findings,
            findings_cut: 0,
            tool_loop: None,
            answer_cut: false,
            findings_dropped: 0,
        }
    }

    #[test]
    fn one_finding_per_location_and_title_with_the_strongest_severity() {
        let mut units = vec![
            unit(vec![
                finding("Leak", 3, Severity::Low),
                finding("Leak", 4, Severity::Low),
            ]),
            unit(vec![
                finding(" leak ", 3, Severity::High),
                finding("Other", 3, Severity::Info),
            ]),
        ];
        assert_eq!(remove_duplicates(&mut units), 1);
        assert_eq!(units[0].findings.len(), 2, "line 4 is another location");
        assert_eq!(units[0].findings[0].severity, Severity::High);
        assert_eq!(units[1].findings.len(), 1);
        assert_eq!(units[1].findings[0].title, "Other");
    }
}
