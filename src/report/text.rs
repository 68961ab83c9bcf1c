//! The report for people: findings grouped by file and, whenever the review is not
//! complete, a banner that cannot be missed saying what was NOT reviewed.

use super::{Report, ReviewOutcome};
use crate::engine::UnitStatus;
use crate::severity::Severity;
use crate::text::escape;
use console::style;
use std::collections::BTreeMap;
use std::fmt::Write;

/// How many not-reviewed units are listed by location before "and N more".
const LIST_LIMIT: usize = 20;

/// Writes `text` (model output) indented under a finding, one output line per input line,
/// each escaped so that no line can pass for a CI command or restyle the terminal.
fn indented(out: &mut String, prefix: &str, text: &str) {
    for (i, line) in escape::lines(text.trim_end_matches(['\n', '\r']))
        .iter()
        .enumerate()
    {
        let lead = if i == 0 { prefix } else { "" };
        let _ = writeln!(out, "           {lead}{line}");
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

/// The report for people: findings by file, a banner for what was not reviewed, the
/// route table, then where config came from and the outcome line.
pub fn render(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} {}",
        style("warden review:").bold(),
        escape::inline(&r.target)
    );
    let _ = writeln!(out);
    findings(&mut out, r);
    not_reviewed(&mut out, r);
    cut_by_limits(&mut out, r);
    super::dropped::text(&mut out, r, LIST_LIMIT);
    routes(&mut out, r);
    footer(&mut out, r);
    out
}

/// Findings grouped by file, or what a report without findings means.
fn findings(out: &mut String, r: &Report) {
    if r.findings.is_empty() {
        if r.outcome == ReviewOutcome::Complete {
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
        let mut by_file: BTreeMap<&str, Vec<&super::Finding>> = BTreeMap::new();
        for f in &r.findings {
            by_file.entry(f.path.as_str()).or_default().push(f);
        }
        for (path, mut list) in by_file {
            list.sort_by_key(|f| (f.start_line, std::cmp::Reverse(f.severity)));
            let _ = writeln!(out, "{}", style(escape::line_start(path)).cyan().bold());
            for f in list {
                let lines = if f.end_line > f.start_line {
                    format!("{}-{}", f.start_line, f.end_line)
                } else {
                    f.start_line.to_string()
                };
                let _ = writeln!(
                    out,
                    "  {:>7}  {} {}  {}",
                    lines,
                    severity_label(f.severity),
                    style(escape::inline(&f.title)).bold(),
                    style(format!(
                        "[{}, {} confidence]",
                        escape::inline(&f.skill),
                        f.confidence
                    ))
                    .dim()
                );
                indented(out, "", &f.description);
                if let Some(s) = &f.suggestion {
                    indented(out, "suggestion: ", s);
                }
            }
            let _ = writeln!(out);
        }
    }
}

/// The banner that cannot be missed, whenever units (or shards) were not reviewed.
fn not_reviewed(out: &mut String, r: &Report) {
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
        let _ = writeln!(out, "  by status: {}", by_status.join(", "));
        for m in &r.missing_shards {
            let _ = writeln!(
                out,
                "  shard {}/{} is missing: its {} units were not reviewed",
                m.index, m.count, m.units
            );
        }
        for u in missing.iter().take(LIST_LIMIT) {
            let _ = writeln!(
                out,
                "  {}:{}-{} ({}) {}: {}",
                escape::inline(&u.path),
                u.start_line,
                u.end_line,
                escape::inline(&u.skill),
                style(u.status.as_str()).yellow(),
                escape::inline(&u.reason)
            );
        }
        if missing.len() > LIST_LIMIT {
            let _ = writeln!(
                out,
                "  ... and {} more (every unit is listed in --format json)",
                missing.len() - LIST_LIMIT
            );
        }
        let _ = writeln!(out);
    }
}

/// A route's effective limit and back-pressure (DESIGN.md section 13), under its row when
/// the run followed them or the provider pushed back.
fn load_line(m: &super::RouteMetrics) -> Option<String> {
    let bp = &m.backpressure;
    if m.limit.is_none() && bp.answers == 0 && bp.paused_ms == 0 {
        return None;
    }
    let mut parts = Vec::new();
    if let Some(l) = m.limit {
        parts.push(format!(
            "limit {}/{}/{} (min/median/max) of {}",
            l.min, l.median, l.max, m.max_concurrency
        ));
    }
    parts.push(format!(
        "back-pressure {} answer{}, paused {}",
        bp.answers,
        if bp.answers == 1 { "" } else { "s" },
        crate::config::format_duration(std::time::Duration::from_millis(bp.paused_ms))
    ));
    Some(parts.join(", "))
}

/// Files cut by limits: a line per limit with the count, then the files (escaped).
fn cut_by_limits(out: &mut String, r: &Report) {
    for c in &r.cuts {
        let _ = writeln!(
            out,
            "{}",
            style(format!("CUT: {}", c.message())).yellow().bold()
        );
        let paths: Vec<String> = r.cut_paths(c).collect();
        for p in paths.iter().take(LIST_LIMIT) {
            let _ = writeln!(out, "  {}", escape::inline(p));
        }
        if paths.len() > LIST_LIMIT {
            let _ = writeln!(
                out,
                "  ... and {} more (every file is in --format json's skippedFiles and in `warden plan`)",
                paths.len() - LIST_LIMIT
            );
        }
    }
    if !r.cuts.is_empty() {
        let _ = writeln!(out);
    }
}

/// The route table (a renderer's table: one row per route).
fn routes(out: &mut String, r: &Report) {
    if !r.route_order.is_empty() {
        let _ = writeln!(out, "{}", style("Routes").bold());
        let _ = writeln!(
            out,
            "  {:<16} {:>5} {:>5} {:>8} {:>11} {:>9} {:>9} {:>8} {:>8} {:>8} {:>9}  breaker",
            "route",
            "calls",
            "ok",
            "timeouts",
            "unavailable",
            "rate-ltd",
            "failover",
            "p50",
            "p95",
            "max",
            "ttft p95"
        );
        for name in &r.route_order {
            let m = &r.routes[name];
            let c = super::route_cells(m, "-");
            let _ = writeln!(
                out,
                "  {:<16} {:>5} {:>5} {:>8} {:>11} {:>9} {:>9} {:>8} {:>8} {:>8} {:>9}  {}{}",
                name,
                c[0],
                c[1],
                c[2],
                c[3],
                c[4],
                c[5],
                c[6],
                c[7],
                c[8],
                c[9],
                m.breaker.state.as_str(),
                if m.breaker.opens > 0 {
                    format!(" (opened {}x)", m.breaker.opens)
                } else {
                    String::new()
                }
            );
            if let Some(load) = load_line(m) {
                let _ = writeln!(out, "  {:<16} {load}", "");
            }
            if let Some(tokens) = tokens_line(m) {
                let _ = writeln!(out, "  {:<16} {tokens}", "");
            }
        }
        let _ = writeln!(out);
    }
}

/// A route's tokens when its providers reported cache or reasoning tokens: input (cached
/// reads, their share, cache writes), output (reasoning).
fn tokens_line(m: &super::RouteMetrics) -> Option<String> {
    if m.cached_input_tokens + m.cache_write_tokens + m.reasoning_tokens == 0 {
        return None;
    }
    Some(format!(
        "tokens: {} in ({} cached, {:.1}% hit; {} written to cache), {} out ({} reasoning)",
        m.input_tokens,
        m.cached_input_tokens,
        m.cache_hit_share * 100.0,
        m.cache_write_tokens,
        m.output_tokens,
        m.reasoning_tokens
    ))
}

/// Verification, skipped files, trust, skills, cache, and the outcome line.
fn footer(out: &mut String, r: &Report) {
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
    let outcome = match r.outcome {
        ReviewOutcome::Complete => style(r.outcome.label()).green().bold(),
        ReviewOutcome::Partial => style(r.outcome.label()).yellow().bold(),
        ReviewOutcome::Unavailable => style(r.outcome.label()).red().bold(),
    };
    let _ = writeln!(
        out,
        "Review {outcome}: {} of {} units reviewed, {} finding{} in {:.1}s (budget {:.0}s){}",
        s.reviewed,
        s.units,
        s.findings,
        if s.findings == 1 { "" } else { "s" },
        r.duration_ms as f64 / 1000.0,
        r.budget_ms as f64 / 1000.0,
        if r.interrupted {
            "; interrupted"
        } else if r.budget_expired {
            "; budget ran out"
        } else {
            ""
        }
    );
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
            escape::inline(&super::rules::skills_line(&r.skills, r.trust.as_ref()))
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
