//! `--format markdown`: the body of a pull-request comment. A one-line verdict, findings
//! grouped by file (with links to the reviewed lines when the repository's web address
//! and revision are known), a "Not reviewed" section whenever the review is not complete,
//! and the route table folded away. A hidden marker lets a workflow step find and update
//! one sticky comment. GitHub refuses bodies over 65,536 characters, so the least severe
//! findings are cut first, and the comment says what was cut.

use super::{fit, summary_md};
use crate::report::{Finding, Report, ReviewOutcome};
use crate::text::escape::{md_code as code, md_code_cell as code_cell, md_inline as inline};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;

/// GitHub's limit for a comment body, in characters.
pub const COMMENT_LIMIT: usize = 65_536;
/// The hidden first line a workflow step searches for to update the same comment.
pub const MARKER: &str = "<!-- warden:review -->";
/// Model text per finding is cut past these lengths (characters).
const TITLE_CHARS: usize = 300;
const DESCRIPTION_CHARS: usize = 2_000;
/// Units listed by location in "Not reviewed" before "and N more".
const NOT_REVIEWED_ROWS: usize = 50;

/// The comment body, at most [`COMMENT_LIMIT`] characters.
pub fn render(r: &Report) -> String {
    render_within(r, COMMENT_LIMIT)
}

/// The comment body in at most `limit` characters.
pub fn render_within(r: &Report, limit: usize) -> String {
    let fits = |s: &str| s.chars().count() <= limit;
    let (_, body) = fit::largest_fitting(r.findings.len(), fits, |shown| body(r, shown));
    if fits(&body) {
        return body;
    }
    const NOTE: &str = "\n\n✂️ _Cut here to stay under GitHub's comment size limit._\n";
    let keep = limit.saturating_sub(NOTE.chars().count());
    format!("{}{NOTE}", fit::truncate_chars(&body, keep))
}

/// Model text as Markdown lines, each escaped (no HTML, links, emphasis or line-start
/// markers of its own) and without indentation (no accidental code block), joined with
/// `join` (an indent that keeps the lines inside a list item).
fn text(s: &str, join: &str) -> String {
    s.lines()
        .map(|l| inline(l.trim()))
        .collect::<Vec<_>>()
        .join(join)
}

fn cut(s: &str, max: usize) -> String {
    let t = fit::truncate_chars(s, max);
    if t.len() < s.len() {
        format!("{t}…")
    } else {
        t.to_string()
    }
}

fn duration(ms: u64) -> String {
    crate::config::format_duration(Duration::from_millis(ms))
}

/// The one-line verdict: outcome, findings by severity, units not reviewed. Its icon
/// follows the exit code ([`summary_md::icon`]): no ✅ on a run that fails.
fn verdict(r: &Report) -> String {
    let s = &r.summary;
    let icon = summary_md::icon(r);
    let findings = fit::describe(&r.findings);
    let missing = s.units - s.reviewed;
    let failing = match r.findings.iter().filter(|f| f.fails_run).count() {
        0 => String::new(),
        n => format!(" ({n} at `failOn`: the run fails)"),
    };
    match r.outcome {
        ReviewOutcome::Complete if s.units == 0 => format!("{icon} **warden**: nothing to review."),
        ReviewOutcome::Complete => format!(
            "{icon} **warden** review complete: {findings}{failing} in {} reviewed unit{}.",
            s.units,
            if s.units == 1 { "" } else { "s" }
        ),
        ReviewOutcome::Partial => format!(
            "{icon} **warden** review {}: {findings}{failing}; **{missing} of {} units NOT reviewed**.",
            r.outcome.label(),
            s.units
        ),
        ReviewOutcome::Unavailable => format!(
            "{icon} **warden** review {}: **none of the {} units was reviewed**; {findings}.",
            r.outcome.label(),
            s.units
        ),
    }
}

fn lines_label(start: u32, end: u32) -> String {
    if end > start {
        format!("lines {start}–{end}")
    } else {
        format!("line {start}")
    }
}

fn location(r: &Report, path: &str, start: u32, end: u32) -> String {
    let label = lines_label(start, end);
    match r.vcs.as_ref().and_then(|v| v.link(path, start, end)) {
        Some(url) => format!("[{label}]({url})"),
        None => label,
    }
}

fn file_heading(r: &Report, path: &str) -> String {
    let link = r
        .vcs
        .as_ref()
        .and_then(|v| v.link(path, 1, 1))
        .map(|u| u.strip_suffix("#L1").map(str::to_string).unwrap_or(u));
    match link {
        Some(url) => format!("#### [{}]({url})", code(path)),
        None => format!("#### {}", code(path)),
    }
}

fn finding(out: &mut String, r: &Report, f: &Finding) {
    let _ = writeln!(
        out,
        "- **{}** · {} · **{}** · {}",
        f.severity.as_str().to_uppercase(),
        location(r, &f.path, f.start_line, f.end_line.max(f.start_line)),
        inline(&cut(&f.title, TITLE_CHARS)),
        code(&f.skill),
    );
    if !f.description.trim().is_empty() {
        let _ = writeln!(
            out,
            "  {}",
            text(&cut(&f.description, DESCRIPTION_CHARS), "\n  ")
        );
    }
    if let Some(s) = &f.suggestion {
        let _ = writeln!(
            out,
            "  _Suggestion:_ {}",
            text(&cut(s, DESCRIPTION_CHARS), "\n  ")
        );
    }
}

fn findings(out: &mut String, r: &Report, shown: usize) {
    if r.findings.is_empty() {
        return;
    }
    let _ = writeln!(out, "### Findings\n");
    // Files in order of their most severe finding (the list is sorted most severe first).
    let mut order: Vec<&str> = Vec::new();
    let mut by_file: BTreeMap<&str, Vec<&Finding>> = BTreeMap::new();
    for f in &r.findings[..shown] {
        if !by_file.contains_key(f.path.as_str()) {
            order.push(&f.path);
        }
        by_file.entry(&f.path).or_default().push(f);
    }
    for path in order {
        let _ = writeln!(out, "{}\n", file_heading(r, path));
        let mut list = by_file.remove(path).unwrap_or_default();
        list.sort_by_key(|f| (f.start_line, std::cmp::Reverse(f.severity)));
        for f in list {
            finding(out, r, f);
        }
        let _ = writeln!(out);
    }
    if shown < r.findings.len() {
        let _ = writeln!(out, "{}\n", cut_note(r, shown));
    }
}

fn cut_note(r: &Report, shown: usize) -> String {
    format!(
        "✂️ **{} not shown** (least severe first) to stay under GitHub's {COMMENT_LIMIT}-character comment limit; every finding is in the SARIF, JSON or rdjsonl report.",
        fit::describe(&r.findings[shown..])
    )
}

fn not_reviewed(out: &mut String, r: &Report) {
    if r.outcome == ReviewOutcome::Complete {
        return;
    }
    let s = &r.summary;
    let missing: Vec<_> = r.not_reviewed().collect();
    let why = if r.interrupted {
        " The review was interrupted."
    } else if r.budget_expired {
        " The review budget ran out."
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "### Not reviewed\n\n**{} of {} units were NOT reviewed**: findings there may be missing.{why}\n",
        missing.len(),
        s.units
    );
    let _ = writeln!(
        out,
        "| file | lines | skill | status | why |\n|---|---|---|---|---|"
    );
    for u in missing.iter().take(NOT_REVIEWED_ROWS) {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            code_cell(&u.path),
            location(
                r,
                &u.path,
                u.start_line.max(1),
                u.end_line.max(u.start_line).max(1)
            ),
            code_cell(&u.skill),
            u.status.as_str(),
            inline(&cut(&u.reason, TITLE_CHARS)),
        );
    }
    if missing.len() > NOT_REVIEWED_ROWS {
        let _ = writeln!(
            out,
            "\n…and {} more units (every one is in the JSON report).",
            missing.len() - NOT_REVIEWED_ROWS
        );
    }
    let _ = writeln!(out);
}

fn routes(out: &mut String, r: &Report) {
    let c = &r.counters;
    let _ = writeln!(
        out,
        "<details><summary>Routes, attempts and budget</summary>\n\n{} of a {} review budget{} · {} attempts, {} loop turns, {} failovers, {} retries, {} timeouts · target {}\n",
        duration(r.duration_ms),
        duration(r.budget_ms),
        if r.budget_expired { " (ran out)" } else { "" },
        c.attempts,
        c.turns,
        c.failovers,
        c.retries,
        c.timeouts,
        code(&r.target),
    );
    if !r.route_order.is_empty() {
        let _ = writeln!(out, "{}", summary_md::route_table(r));
    }
    let _ = writeln!(out, "</details>");
}

/// The body listing the first `shown` findings.
/// Where config and skills came from, when there is something to say (see
/// `crate::trust`), and the run's warnings: one line each, escaped (paths are repository
/// text).
fn trust(out: &mut String, r: &Report) {
    if let Some(line) = r.trust.as_ref().and_then(|t| t.line()) {
        let _ = writeln!(out, "**Trust:** {}\n", inline(&line));
    }
    if r.skills.iter().any(|s| s.overrides_builtin)
        || r.trust
            .as_ref()
            .is_some_and(|t| !t.changed_by_review.is_empty())
    {
        let line = super::skills_line(&r.skills, r.trust.as_ref());
        let _ = writeln!(out, "**Skills:** {}\n", inline(&line));
    }
    for w in &r.warnings {
        let _ = writeln!(
            out,
            "**Warning ({}):** {}\n",
            w.source.as_str(),
            inline(&w.message)
        );
    }
}

fn body(r: &Report, shown: usize) -> String {
    let mut out = format!("{MARKER}\n{}", verdict(r));
    if let Some(cuts) = r.cuts_line() {
        let _ = write!(out, " ✂️ **{}** (listed below).", inline(&cuts));
    }
    out.push_str("\n\n");
    trust(&mut out, r);
    if shown < r.findings.len() {
        let _ = writeln!(out, "{}\n", cut_note(r, shown));
    }
    findings(&mut out, r, shown);
    cut_by_limits(&mut out, r);
    super::dropped::markdown(&mut out, r, NOT_REVIEWED_ROWS);
    not_reviewed(&mut out, r);
    routes(&mut out, r);
    skipped(&mut out, r);
    out
}

/// Files skipped before review by a rule (lockfiles, generated files, ignore patterns,
/// binaries), folded away: each with the rule that skipped it. Files cut by limits are
/// listed under "Cut by limits" instead.
fn skipped(out: &mut String, r: &Report) {
    let cut: Vec<&str> = r.cuts.iter().map(|c| c.reason.as_str()).collect();
    let list: Vec<_> = r
        .skipped_files
        .iter()
        .filter(|s| !cut.contains(&s.reason.as_str()))
        .collect();
    if list.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<details><summary>{} file{} skipped before review</summary>\n",
        list.len(),
        if list.len() == 1 { "" } else { "s" }
    );
    for s in list.iter().take(NOT_REVIEWED_ROWS) {
        let rule = if s.rule.is_empty() {
            String::new()
        } else {
            format!(" (rule: {})", code(&s.rule))
        };
        let _ = writeln!(
            out,
            "- {}: {}{rule}",
            code(&s.path.to_string()),
            inline(&s.detail)
        );
    }
    if list.len() > NOT_REVIEWED_ROWS {
        let _ = writeln!(
            out,
            "- …and {} more (every one is in the JSON report's `skippedFiles`)",
            list.len() - NOT_REVIEWED_ROWS
        );
    }
    if let Some(cmd) = &r.plan_command {
        let _ = writeln!(out, "\n{} says why for each file.", code(cmd));
    }
    let _ = writeln!(out, "\n</details>\n");
}

/// Files cut by limits, named: a line per limit, its files as code spans.
fn cut_by_limits(out: &mut String, r: &Report) {
    if r.cuts.is_empty() {
        return;
    }
    let _ = writeln!(out, "### Cut by limits\n");
    for c in &r.cuts {
        let paths: Vec<String> = r.cut_paths(c).collect();
        let named: Vec<String> = paths
            .iter()
            .take(NOT_REVIEWED_ROWS)
            .map(|p| code(p))
            .collect();
        let more = match paths.len().saturating_sub(NOT_REVIEWED_ROWS) {
            0 => String::new(),
            n => format!(", …and {n} more (every one is in the JSON report)"),
        };
        let _ = writeln!(out, "- **{}**: {}{more}", c.message(), named.join(", "));
    }
    let _ = writeln!(out);
}
