//! What a run writes, decided before anything is written, from the report, the pull
//! request's diff and the threads already on it. Pure: no I/O, so every rule of docs/design.md
//! §15 is a unit test here.
//!
//! - A finding already posted (a thread of warden's with the same id, or on the same path
//!   with the same skill and the same anchored line text, however its title reads, or a
//!   row of an earlier review body) is not posted again.
//! - A finding whose thread a person resolved is suppressed for the pull request; one whose
//!   thread warden resolved (fixed) and that comes back is posted again.
//! - A new finding goes inline when its lines are inside one hunk of the diff (a range
//!   comment with `start_line`), on its first line when only that one is, else in the body.
//! - A thread of warden's is resolved only when this run reviewed its file with its skill
//!   completely, no finding of this run matches it, nobody replied in it, and its anchored
//!   line changed; at most `max_resolve` per run.

use super::diff_lines::DiffLines;
use super::marker::{Marker, path_hash};
use crate::config::Resolve;
use crate::engine::UnitStatus;
use crate::report::{Finding, Report};
use std::collections::HashSet;

/// A review thread on the pull request, as the forge reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thread {
    /// The forge's id (GraphQL node id, GitLab discussion id).
    pub id: String,
    /// Resolved (by anyone).
    pub resolved: bool,
    /// Resolved by warden itself (its finding was fixed): if the finding comes back, that
    /// is new, not a person's "dismissed".
    pub resolved_by_warden: bool,
    /// The forge says the lines it was on changed.
    pub outdated: bool,
    /// Its file.
    pub path: String,
    /// Its line on the current head, if the forge can still place it.
    pub line: Option<u32>,
    /// warden's marker on its first comment (None: a person's thread).
    pub marker: Option<Marker>,
    /// Someone other than warden wrote in it.
    pub replied: bool,
}

/// Where a new finding goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// An inline comment on `line` (RIGHT), from `start` when a range.
    Inline {
        /// The last line.
        line: u32,
        /// The first line of a range.
        start: Option<u32>,
        /// The whole range is the finding's: a suggestion block fits.
        exact: bool,
    },
    /// The review body.
    Body,
}

/// A finding to post.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewComment {
    /// Index into the report's findings.
    pub finding: usize,
    /// Its marker.
    pub marker: Marker,
    /// Where it goes.
    pub place: Place,
}

/// The writes of one run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Findings to post, in the report's order.
    pub new: Vec<NewComment>,
    /// Findings already on the pull request.
    pub already_posted: usize,
    /// Findings a person dismissed.
    pub suppressed: usize,
    /// Threads to resolve (ids), at most the cap.
    pub resolve: Vec<String>,
    /// Threads that qualified past the cap (left for the next run).
    pub resolve_over_cap: usize,
}

/// The inputs of a plan.
pub struct Input<'a> {
    /// The (checked) report.
    pub report: &'a Report,
    /// The pull request's diff lines.
    pub diff: &'a DiffLines,
    /// Its review threads.
    pub threads: &'a [Thread],
    /// Findings earlier runs put in review bodies: (marker, path hash).
    pub in_bodies: &'a [(Marker, String)],
    /// `[publish] resolve`.
    pub resolve: Resolve,
    /// `[publish] maxResolve`.
    pub max_resolve: usize,
}

/// The text a finding is anchored to: its first line, from the diff, else from the
/// reviewed chunk the report carries.
pub fn line_text<'a>(f: &'a Finding, diff: &'a DiffLines) -> Option<&'a str> {
    diff.text(&f.path, f.start_line).or_else(|| {
        let c = f.context.as_ref()?;
        if f.start_line < c.start_line || f.start_line > c.end_line {
            return None;
        }
        c.text
            .split_inclusive('\n')
            .nth((f.start_line - c.start_line) as usize)
            .map(|l| l.trim_end_matches('\n'))
    })
}

/// The marker of a finding.
pub(crate) fn marker_of(f: &Finding, diff: &DiffLines) -> Marker {
    Marker::new(&f.id, &f.skill, line_text(f, diff))
}

/// Decides the run's writes.
pub fn plan(input: &Input) -> Plan {
    let mut out = Plan::default();
    let mut matched: HashSet<&str> = HashSet::new();
    let mut seen_new: Vec<(Marker, &str)> = Vec::new();
    for (i, f) in input.report.findings.iter().enumerate() {
        let m = marker_of(f, input.diff);
        let thread = input.threads.iter().find(|t| {
            !(t.resolved && t.resolved_by_warden)
                && t.marker
                    .as_ref()
                    .is_some_and(|tm| m.same(&f.path, tm, &t.path))
        });
        if let Some(t) = thread {
            matched.insert(t.id.as_str());
            if t.resolved {
                out.suppressed += 1;
            } else {
                out.already_posted += 1;
            }
            continue;
        }
        let ph = path_hash(&f.path);
        let in_body = input.in_bodies.iter().any(|(bm, bp)| {
            bm.id == m.id
                || (*bp == ph && bm.skill == m.skill && bm.anchor != "-" && bm.anchor == m.anchor)
        });
        // The same finding twice in one report (two units saw it) is posted once.
        let repeat = seen_new.iter().any(|(sm, sp)| m.same(&f.path, sm, sp));
        if in_body || repeat {
            out.already_posted += 1;
            continue;
        }
        seen_new.push((m.clone(), f.path.as_str()));
        out.new.push(NewComment {
            finding: i,
            marker: m,
            place: place(f, input.diff),
        });
    }
    if input.resolve != Resolve::No {
        let complete = complete_pairs(input.report);
        let candidates = input.threads.iter().filter(|t| {
            let Some(m) = &t.marker else { return false };
            !t.resolved
                && !t.replied
                && !matched.contains(t.id.as_str())
                && complete.contains(&(t.path.as_str(), m.skill.clone()))
                && anchored_line_changed(t, m, input.diff)
        });
        for t in candidates {
            if out.resolve.len() < input.max_resolve {
                out.resolve.push(t.id.clone());
            } else {
                out.resolve_over_cap += 1;
            }
        }
    }
    out
}

fn place(f: &Finding, diff: &DiffLines) -> Place {
    let (s, e) = (f.start_line, f.end_line.max(f.start_line));
    if s > 0 && diff.covers(&f.path, s, e) {
        Place::Inline {
            line: e,
            start: (s < e).then_some(s),
            exact: true,
        }
    } else if s > 0 && diff.covers(&f.path, s, s) {
        Place::Inline {
            line: s,
            start: None,
            exact: false,
        }
    } else {
        Place::Body
    }
}

/// (path, skill hash) pairs this run reviewed completely: every unit of that file serving
/// that skill ended `reviewed` from a whole answer, and the file was not skipped.
fn complete_pairs(r: &Report) -> HashSet<(&str, String)> {
    let skipped: HashSet<String> = r
        .skipped_files
        .iter()
        .map(|s| s.path.display().into_owned())
        .collect();
    let mut all: HashSet<(&str, String)> = HashSet::new();
    let mut broken: HashSet<(&str, String)> = HashSet::new();
    for u in &r.units {
        let skills: Vec<&str> = if u.skills.is_empty() {
            vec![u.skill.as_str()]
        } else {
            u.skills.iter().map(String::as_str).collect()
        };
        for s in skills {
            let key = (u.path.as_str(), Marker::new("x", s, None).skill);
            if u.status != UnitStatus::Reviewed || u.answer_cut || skipped.contains(&u.path) {
                broken.insert(key.clone());
            }
            all.insert(key);
        }
    }
    all.retain(|k| !broken.contains(k));
    all
}

/// The forge moved or lost the thread's lines, or the text now on its line is not the
/// text it was posted on.
fn anchored_line_changed(t: &Thread, m: &Marker, diff: &DiffLines) -> bool {
    if t.outdated {
        return true;
    }
    let Some(line) = t.line else { return true };
    match diff.text(&t.path, line) {
        Some(text) => m.anchor != "-" && super::marker::anchor(text) != m.anchor,
        None => false,
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
