//! The tool loops of a review, summed for the report (docs/design.md §14): how many units
//! looped, the turns they were allowed and used, calls by tool, bytes read, and the
//! units reviewed without tools for lack of budget (the depth rule shed their tool
//! turns). Each unit's own figures are its `toolLoop`.

use super::UnitReport;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Every unit's loop, summed.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ToolLoops {
    /// Units whose skill reads the repository.
    pub units: usize,
    /// Turns they were allowed (after the depth rule).
    pub turns_allowed: u64,
    /// Turns answered.
    pub turns_used: u64,
    /// Tool calls (repeats included).
    pub tool_calls: u64,
    /// Calls per tool.
    pub calls_by_tool: BTreeMap<String, u64>,
    /// Bytes of tool results the models read.
    pub tool_bytes: u64,
    /// Identical calls answered from memory.
    pub repeated_calls: u64,
    /// Units whose tool turns were shed for lack of budget.
    pub shed_for_budget: usize,
    /// Of those, units reviewed in a single request, without tools.
    pub reviewed_without_tools: usize,
}

impl ToolLoops {
    /// The sum over `units`; None when no unit looped.
    pub fn of(units: &[UnitReport]) -> Option<ToolLoops> {
        let mut t = ToolLoops::default();
        for (u, l) in units
            .iter()
            .filter_map(|u| Some((u, u.tool_loop.as_ref()?)))
        {
            t.units += 1;
            t.turns_allowed += u64::from(l.turns_allowed);
            t.turns_used += u64::from(l.turns_used);
            t.tool_calls += u64::from(l.tool_calls);
            for (tool, n) in &l.calls_by_tool {
                *t.calls_by_tool.entry(tool.clone()).or_default() += u64::from(*n);
            }
            t.tool_bytes += l.tool_bytes;
            t.repeated_calls += u64::from(l.repeated_calls);
            t.shed_for_budget += usize::from(l.shed_for_budget);
            t.reviewed_without_tools += usize::from(
                l.shed_for_budget
                    && l.tool_calls == 0
                    && u.status == crate::engine::UnitStatus::Reviewed,
            );
        }
        (t.units > 0).then_some(t)
    }

    /// One line for people: `tool loops: 12 units, 30/48 turns, 41 calls (grep 11,
    /// read_file 30), 120 KiB read; 3 reviewed without tools for lack of budget`.
    pub fn line(&self) -> String {
        let by: Vec<String> = self
            .calls_by_tool
            .iter()
            .map(|(t, n)| format!("{} {n}", crate::text::escape::inline(t)))
            .collect();
        let mut s = format!(
            "tool loops: {} unit{}, {}/{} turns used, {} tool call{}",
            self.units,
            if self.units == 1 { "" } else { "s" },
            self.turns_used,
            self.turns_allowed,
            self.tool_calls,
            if self.tool_calls == 1 { "" } else { "s" },
        );
        if !by.is_empty() {
            s.push_str(&format!(" ({})", by.join(", ")));
        }
        s.push_str(&format!(", {} KiB read", self.tool_bytes.div_ceil(1024)));
        if self.repeated_calls > 0 {
            s.push_str(&format!(", {} repeated", self.repeated_calls));
        }
        if self.shed_for_budget > 0 {
            s.push_str(&format!(
                "; {} unit{} had tool turns shed for lack of budget ({} reviewed without tools)",
                self.shed_for_budget,
                if self.shed_for_budget == 1 { "" } else { "s" },
                self.reviewed_without_tools
            ));
        }
        s
    }
}
