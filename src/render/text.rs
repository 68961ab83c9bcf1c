//! The report for people: findings grouped by file and, whenever the review is not
//! complete, a banner that cannot be missed saying what was NOT reviewed. Lines wrap at
//! words to the terminal's width under a hanging indent ([`Layout`]); the route table is
//! compact under 100 columns (`text_routes.rs`).

use super::Layout;
use crate::engine::UnitStatus;
use crate::report::{Finding, Report, ReviewOutcome};
use crate::severity::Severity;
use crate::text::escape;
use crate::text::wrap;
use console::{Style, style};
use std::collections::BTreeMap;
use std::fmt::Write;

/// How many not-reviewed units are listed by location before "and N more".
const LIST_LIMIT: usize = 20;

/// Where model text under a finding starts.
const BODY_INDENT: usize = 11;

/// Writes `text` (model output) indented under a finding, one logical line per input
/// line, each escaped so that no line can pass for a CI command or restyle the terminal,
/// and wrapped under a hanging indent (under the prefix's text, or two columns in).
fn indented(out: &mut String, prefix: &str, text: &str, width: Option<usize>) {
    let pad = " ".repeat(BODY_INDENT);
    for (i, line) in escape::lines(text.trim_end_matches(['\n', '\r']))
        .iter()
        .enumerate()
    {
        let lead = if i == 0 { prefix } else { "" };
        let hang = BODY_INDENT + lead.chars().count().max(2);
        wrap::line(
            out,
            &format!("{pad}{lead}"),
            hang,
            line,
            Style::new(),
            width,
        );
    }
}

fn severity_label(s: Severity) -> String {
    let label = format!("{:<8}", s.as_str().to_uppercase());
    match s {
        Severity::Critical | Severity::High => style(label).red().bold().to_string(),
        Severity::Medium => style(label).yellow().to_string(),
        Severity::Low => style(label).cyan().to_string(),
        Severity::Info => style(label).dim().to_string(),
    }
}

/// The report for people, not wrapped, with the full route table (files, pipes).
pub fn render(r: &Report) -> String {
    render_with(r, Layout::default())
}

/// The report for people laid out by `layout`: findings by file, a banner for what was
/// not reviewed, the route table, then where config came from and the outcome line.
pub fn render_with(r: &Report, layout: Layout) -> String {
    let mut out = String::new();
    let w = layout.width;
    let target = escape::inline(&r.target);
    let head = [
        ("warden review:", Style::new().bold()),
        (" ", Style::new()),
        (target.as_str(), Style::new()),
    ];
    wrap::pieces(&mut out, "", 2, &head, w);
    let _ = writeln!(out);
    findings(&mut out, r, w);
    not_reviewed(&mut out, r, w);
    cut_by_limits(&mut out, r, w);
    super::dropped::text(&mut out, r, LIST_LIMIT, w);
    super::text_routes::routes(&mut out, r, layout);
    footer(&mut out, r, w);
    out
}

/// Findings grouped by file, or what a report without findings means.
fn findings(out: &mut String, r: &Report, w: Option<usize>) {
    if r.findings.is_empty() {
        if nothing_sent(r) {
            // The footer's last line says why.
        } else if r.outcome == ReviewOutcome::Complete {
            let _ = writeln!(
                out,
                "No findings in the {} reviewed units.",
                r.summary.reviewed
            );
        } else if r.summary.reviewed == 0 {
            let _ = writeln!(
                out,
                "Nothing was reviewed: all {} units were NOT reviewed (see below).",
                r.summary.units
            );
        } else {
            let _ = writeln!(
                out,
                "No findings in the {} units that were reviewed; {} units were NOT reviewed (see below).",
                r.summary.reviewed,
                r.summary.units - r.summary.reviewed
            );
        }
    } else {
        let mut by_file: BTreeMap<&str, Vec<&Finding>> = BTreeMap::new();
        for f in &r.findings {
            by_file.entry(f.path.as_str()).or_default().push(f);
        }
        for (path, mut list) in by_file {
            list.sort_by_key(|f| (f.start_line, std::cmp::Reverse(f.severity)));
            let path = escape::line_start(path);
            wrap::line(out, "", 2, &path, Style::new().cyan().bold(), w);
            for f in list {
                let lines = if f.end_line > f.start_line {
                    format!("{}-{}", f.start_line, f.end_line)
                } else {
                    f.start_line.to_string()
                };
                // The title wraps under itself: the hanging indent is the lead's width.
                let lead = format!("  {:>7}  {} ", lines, severity_label(f.severity));
                let title = escape::inline(&f.title);
                let tag = format!(
                    "[{}, {} confidence]",
                    escape::inline(&f.skill),
                    f.confidence
                );
                let pieces = [
                    (title.as_str(), Style::new().bold()),
                    ("  ", Style::new()),
                    (tag.as_str(), Style::new().dim()),
                ];
                let hang = console::measure_text_width(&lead);
                wrap::pieces(out, &lead, hang, &pieces, w);
                indented(out, "", &f.description, w);
                if let Some(s) = &f.suggestion {
                    indented(out, "suggestion: ", s, w);
                }
            }
            let _ = writeln!(out);
        }
    }
}

/// The banner that cannot be missed, whenever units (or shards) were not reviewed.
fn not_reviewed(out: &mut String, r: &Report, w: Option<usize>) {
    let missing: Vec<_> = r.not_reviewed().collect();
    // A merged report's missing shards: their units are not in `units` at all.
    let unmerged: usize = r.missing_shards.iter().map(|m| m.units).sum();
    if !missing.is_empty() || unmerged > 0 {
        let pct = (missing.len() + unmerged) * 100 / r.summary.units.max(1);
        let head = format!(
            " NOT REVIEWED: {} of {} units ({pct}%). This is not a clean review of those lines. ",
            missing.len() + unmerged,
            r.summary.units
        );
        let bar = "!".repeat(head.chars().count());
        let _ = writeln!(out, "{}", style(&bar).red().bold());
        let _ = writeln!(out, "{}", style(&head).red().bold().reverse());
        let _ = writeln!(out, "{}", style(&bar).red().bold());
        let mut counts: BTreeMap<UnitStatus, usize> = BTreeMap::new();
        for u in &missing {
            *counts.entry(u.status).or_default() += 1;
        }
        let by_status: Vec<String> = counts
            .iter()
            .map(|(s, n)| format!("{n} {}", s.as_str()))
            .collect();
        wrap::line(
            out,
            "  ",
            4,
            &format!("by status: {}", by_status.join(", ")),
            Style::new(),
            w,
        );
        for m in &r.missing_shards {
            let line = format!(
                "shard {}/{} is missing: its {} units were not reviewed",
                m.index, m.count, m.units
            );
            wrap::line(out, "  ", 4, &line, Style::new(), w);
        }
        for u in missing.iter().take(LIST_LIMIT) {
            let at = format!(
                "{}:{}-{} ({}) ",
                escape::inline(&u.path),
                u.start_line,
                u.end_line,
                escape::inline(&u.skill)
            );
            let reason = format!(": {}", escape::inline(&u.reason));
            let pieces = [
                (at.as_str(), Style::new()),
                (u.status.as_str(), Style::new().yellow()),
                (reason.as_str(), Style::new()),
            ];
            wrap::pieces(out, "  ", 4, &pieces, w);
        }
        if missing.len() > LIST_LIMIT {
            let line = format!(
                "... and {} more (every unit is listed in --format json)",
                missing.len() - LIST_LIMIT
            );
            wrap::line(out, "  ", 4, &line, Style::new(), w);
        }
        let _ = writeln!(out);
    }
}

/// Milliseconds in the one duration format of every human output.
fn ms(v: u64) -> String {
    crate::config::format_duration(std::time::Duration::from_millis(v))
}

/// Files cut by limits: a line per limit with the count, then the files (escaped).
fn cut_by_limits(out: &mut String, r: &Report, w: Option<usize>) {
    for c in &r.cuts {
        let head = format!("CUT: {}", c.message());
        wrap::line(out, "", 2, &head, Style::new().yellow().bold(), w);
        let paths: Vec<String> = r.cut_paths(c).collect();
        for p in paths.iter().take(LIST_LIMIT) {
            wrap::line(out, "  ", 4, &escape::inline(p), Style::new(), w);
        }
        if paths.len() > LIST_LIMIT {
            let line = format!(
                "... and {} more (every file is in --format json's skippedFiles and in `warden plan`)",
                paths.len() - LIST_LIMIT
            );
            wrap::line(out, "  ", 4, &line, Style::new(), w);
        }
    }
    if !r.cuts.is_empty() {
        let _ = writeln!(out);
    }
}

/// The footer's lines, each wrapped under a two-column hanging indent.
fn footer(out: &mut String, r: &Report, w: Option<usize>) {
    let mut lines = String::new();
    footer_lines(&mut lines, r);
    for line in lines.lines() {
        wrap::line(out, "", 2, line, Style::new(), w);
    }
}

/// Verification, skipped files, trust, skills, cache, and the outcome line (one line
/// each, styled where they call for attention).
fn footer_lines(out: &mut String, r: &Report) {
    if let Some(p) = &r.publish {
        let _ = writeln!(out, "{}", crate::text::escape::inline(&p.line()));
    }
    if let Some(line) = cost_line(r) {
        let _ = writeln!(out, "{line}");
    }
    if let Some(hint) = &r.routing.hint {
        let _ = writeln!(out, "{}", style(format!("Routing: {hint}")).yellow());
    }
    if let Some(v) = &r.verification {
        let shed = v.units - v.completed;
        let _ = writeln!(
            out,
            "Verification: {} confirmed, {} rejected (removed), {} unverified{}",
            v.confirmed,
            v.rejected,
            v.unverified,
            if shed > 0 {
                format!(
                    " ({shed} of {} verification units did not complete: optional work is shed first)",
                    v.units
                )
            } else {
                String::new()
            }
        );
    }
    if !r.skipped_files.is_empty() {
        let _ = writeln!(
            out,
            "{} file{} skipped before review (`{}` says why)",
            r.skipped_files.len(),
            if r.skipped_files.len() == 1 { "" } else { "s" },
            escape::inline(r.plan_command.as_deref().unwrap_or("warden plan"))
        );
    }
    provenance(out, r);
    let s = &r.summary;
    if s.from_cache > 0 {
        let shared = match s.from_shared_cache {
            0 => String::new(),
            n => format!(", {n} of them from the fleet's shared cache"),
        };
        let _ = writeln!(
            out,
            "{} of {} units from cache (answers of earlier runs for unchanged code; no request made{shared})",
            s.from_cache, s.units
        );
    }
    if s.findings_cut > 0 {
        let _ = writeln!(
            out,
            "{} findings cut: answers past maxFindingsPerAnswer (counted, not read)",
            s.findings_cut
        );
    }
    if let Some(t) = s
        .tool_loops
        .as_ref()
        .filter(|t| t.tool_calls > 0 || t.shed_for_budget > 0)
    {
        let _ = writeln!(out, "{}", t.line());
    }
    if nothing_sent(r) {
        let _ = writeln!(out, "{}", nothing_line(r));
        return;
    }
    let outcome = match r.outcome {
        ReviewOutcome::Complete => style(r.outcome.label()).green().bold(),
        ReviewOutcome::Partial => style(r.outcome.label()).yellow().bold(),
        ReviewOutcome::Unavailable => style(r.outcome.label()).red().bold(),
    };
    let _ = writeln!(
        out,
        "Review {outcome}: {} of {} units reviewed, {} finding{} in {} (budget {}){}",
        s.reviewed,
        s.units,
        s.findings,
        if s.findings == 1 { "" } else { "s" },
        ms(r.duration_ms),
        ms(r.budget_ms),
        if r.interrupted {
            "; interrupted"
        } else if r.budget_expired {
            "; budget ran out"
        } else {
            ""
        }
    );
}

/// A complete review with no unit in it: nothing was sent, and "complete" would say
/// nothing true.
fn nothing_sent(r: &Report) -> bool {
    r.summary.units == 0 && r.outcome == ReviewOutcome::Complete
}

/// Why there was nothing to review: no change at all, or every changed file skipped.
fn nothing_line(r: &Report) -> String {
    nothing_to_review(
        &r.target,
        r.skipped_files.len(),
        r.plan_command.as_deref().unwrap_or("warden plan"),
    )
}

/// "Nothing to review" and why, for a selection `target` whose `skipped` changed files
/// were all skipped (0: it has no changes), naming what to try next.
pub fn nothing_to_review(target: &str, skipped: usize, plan_command: &str) -> String {
    let target = escape::inline(target);
    match skipped {
        0 => format!(
            "Nothing to review: the selection has no changes ({target}); try another selection: a range (`warden review main...my-branch`), `--staged`, or `--diff FILE`"
        ),
        n => format!(
            "Nothing to review in {target}: {n} changed file{} skipped, none left for a model (`{}` says why)",
            if n == 1 { "" } else { "s" },
            escape::inline(plan_command)
        ),
    }
}

/// Where config and skills came from (the trust model), one escaped line each.
fn provenance(out: &mut String, r: &Report) {
    if let Some(line) = r.trust.as_ref().and_then(|t| t.line()) {
        let touched = r
            .trust
            .as_ref()
            .is_some_and(|t| !t.changed_by_review.is_empty());
        let line = format!("Trust: {}", escape::inline(&line));
        let _ = writeln!(
            out,
            "{}",
            if touched {
                style(line).yellow()
            } else {
                style(line)
            }
        );
    }
    if !r.skills.is_empty() {
        let _ = writeln!(
            out,
            "Skills: {}",
            escape::inline(&super::skills_line(&r.skills, r.trust.as_ref()))
        );
    }
}

/// `Cost: $0.0123 (primary $0.0100, fallback $0.0023) of a $2.50 budget`; None when no
/// attempt's cost is known and no budget is set.
fn cost_line(r: &Report) -> Option<String> {
    let budget = r.routing.cost_budget_usd;
    if r.summary.cost_usd == 0.0 && budget.is_none() {
        return None;
    }
    let per_route: Vec<String> = r
        .route_order
        .iter()
        .map(|n| format!("{n} ${:.4}", r.routes[n].cost_usd))
        .collect();
    Some(format!(
        "Cost: ${:.4} ({}){}",
        r.summary.cost_usd,
        escape::inline(&per_route.join(", ")),
        budget
            .map(|b| format!(" of a ${b:.2} budget"))
            .unwrap_or_default()
    ))
}
