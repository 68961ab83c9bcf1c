//! Entries of the models' answers that did not become findings (docs/design.md §14: "a
//! finding dropped for any reason is counted and named in every human output"). A model
//! that writes `"severity": "urgent"` or a line outside the chunk loses that finding; the
//! text report, the PR comment, the step summary, SARIF and GitHub annotations all count
//! the drops and name each (file, entry, title, why), so "No findings" is never the
//! whole story. Findings a skill's thresholds filter out are the user's choice, not drops.

use super::Report;
use crate::engine::UnitResult;
use crate::plan::Plan;
use serde::{Deserialize, Serialize};

/// How many drops one report names; the rest are counted (`summary.findingsDropped`
/// and each unit's record say how many).
pub const NAMED: usize = 100;

/// One dropped entry, named.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct DroppedFinding {
    /// The file its unit reviewed.
    pub path: String,
    /// The unit's skill.
    pub skill: String,
    /// The unit's first new-file line.
    pub start_line: u32,
    /// The unit's last new-file line.
    pub end_line: u32,
    /// Its place in the answer's `findings` list, from 1.
    pub entry: usize,
    /// Its title, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Why it was dropped.
    pub reason: String,
}

impl DroppedFinding {
    /// `src/a.rs:10-20 (code-review), entry 3 "SQL injection": line 50 is outside ...`
    /// (model text: the renderers escape it).
    pub fn message(&self) -> String {
        let title = self
            .title
            .as_ref()
            .map(|t| format!(" \"{t}\""))
            .unwrap_or_default();
        format!(
            "{}:{}-{} ({}), entry {}{title}: {}",
            self.path, self.start_line, self.end_line, self.skill, self.entry, self.reason
        )
    }
}

/// The named drops of every unit, in plan order, at most [`NAMED`].
pub(crate) fn named(plan: &Plan, results: &[UnitResult]) -> Vec<DroppedFinding> {
    plan.units
        .iter()
        .zip(results)
        .flat_map(|(unit, r)| {
            r.dropped.iter().map(move |d| DroppedFinding {
                path: unit.path.to_string(),
                skill: unit.skill.clone(),
                start_line: unit.start_line,
                end_line: unit.end_line,
                entry: d.entry,
                title: d.title.clone(),
                reason: d.reason.clone(),
            })
        })
        .take(NAMED)
        .collect()
}

impl Report {
    /// How many entries of the answers were dropped (named or not).
    pub fn dropped_count(&self) -> usize {
        self.units
            .iter()
            .map(|u| u.findings_dropped)
            .sum::<usize>()
            .max(self.dropped_findings.len())
    }

    /// "2 findings from the models' answers dropped (named below)"; None without drops.
    pub fn dropped_line(&self) -> Option<String> {
        let n = self.dropped_count();
        (n > 0).then(|| {
            let named = self.dropped_findings.len();
            let more = if named < n {
                format!(" ({named} named; the rest are counted in the JSON report)")
            } else {
                String::new()
            };
            format!(
                "{n} finding{} from the models' answers dropped{more}",
                if n == 1 { "" } else { "s" }
            )
        })
    }
}
