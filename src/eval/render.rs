//! The eval report for people: text for the terminal, Markdown for a pull request or a
//! wiki. Every name that comes from a corpus or a model is escaped for where it lands.
//! Absent figures (no denominator) show as `—`.

use super::metrics::Metrics;
use super::report::{EvalReport, Group};
use crate::text::escape;
use std::fmt::Write;

/// How a figure is shown: 2 decimals, or `—` when absent.
fn fig(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.2}")).unwrap_or_else(|| "—".into())
}

fn usd(x: Option<f64>) -> String {
    x.map(|v| format!("${v:.4}")).unwrap_or_else(|| "—".into())
}

/// Milliseconds in the one duration format of every human output (`900ms`, `4.2s`).
fn secs(ms: Option<f64>) -> String {
    ms.filter(|v| v.is_finite() && *v >= 0.0)
        .map(|v| crate::config::format_duration(std::time::Duration::from_millis(v.round() as u64)))
        .unwrap_or_else(|| "—".into())
}

fn route_name(g: &Group) -> String {
    g.route
        .as_deref()
        .map(escape::inline)
        .unwrap_or_else(|| "(not reviewed)".into())
}

/// The headline lines of a set of figures.
fn headline(m: &Metrics) -> Vec<String> {
    vec![
        format!(
            "TP {}  FP {} ({} duplicate)  misses {}  not reviewed {}",
            m.true_positives, m.false_positives, m.duplicates, m.misses, m.not_reviewed
        ),
        format!(
            "precision {}  recall {} (of all references {})  F1 {}",
            fig(m.precision),
            fig(m.recall),
            fig(m.recall_of_all),
            fig(m.f1)
        ),
        format!(
            "findings/case {}  false positives/clean case {} ({} clean of {} cases)",
            fig(m.findings_per_case),
            fig(m.false_positives_per_clean_case),
            m.clean_cases,
            m.cases
        ),
        format!(
            "cost {}/case, {}/true finding ({} total) · time {}/case, {}/true finding · tokens {} in, {} out",
            usd(m.cost_per_case_usd),
            usd(m.cost_per_true_positive_usd),
            usd(Some(m.cost_usd)),
            secs(m.ms_per_case),
            secs(m.ms_per_true_positive),
            m.input_tokens,
            m.output_tokens
        ),
    ]
}

/// The text report.
pub fn text(r: &EvalReport) -> String {
    let mut s = String::new();
    let c = &r.corpus;
    let _ = writeln!(
        s,
        "warden eval: {} ({}, {} cases, {} clean, {} references) · runs {} · line window {}",
        escape::inline(&c.source),
        serde_json::to_value(c.shape)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        c.cases,
        c.clean_cases,
        c.references,
        r.settings.runs,
        r.settings.line_window
    );
    if !c.left_out.is_empty() {
        let parts: Vec<String> = c.left_out.iter().map(|(k, v)| format!("{v} {k}")).collect();
        let _ = writeln!(s, "left out of the corpus: {}", parts.join(", "));
    }
    let f = &r.finished;
    let _ = writeln!(
        s,
        "routes: {} · {} of {} case reviews ran in {} ({} at once){}{}",
        escape::inline(&r.settings.routes.join(", ")),
        f.reviewed,
        f.case_runs,
        secs(Some(f.wall_ms as f64)),
        r.settings.concurrency,
        if f.budget_expired {
            " · the --budget ran out"
        } else {
            ""
        },
        if f.interrupted {
            " · interrupted: the cases done are scored"
        } else {
            ""
        },
    );
    let _ = writeln!(s, "\noverall");
    for l in headline(&r.overall) {
        let _ = writeln!(s, "  {l}");
    }
    groups_text(&mut s, r);
    spread_text(&mut s, r);
    if let Some(j) = &r.judge {
        let _ = writeln!(
            s,
            "\njudge {}: {} pairs, {} same problem, {} not, {} unjudged (matched by location) · {} · tokens {} in, {} out (not in the figures above)",
            escape::inline(&j.route),
            j.pairs,
            j.accepted,
            j.rejected,
            j.unjudged,
            usd(Some(j.cost_usd)),
            j.input_tokens,
            j.output_tokens
        );
    }
    not_reviewed_text(&mut s, r);
    cases_text(&mut s, r);
    if let Some(b) = &r.baseline {
        s.push_str(&super::baseline::text(b));
    }
    s
}

fn groups_text(s: &mut String, r: &EvalReport) {
    if r.groups.is_empty() {
        return;
    }
    let _ = writeln!(s, "\nby skill × route");
    let _ = writeln!(
        s,
        "  {:<18} {:<16} {:>4} {:>4} {:>5} {:>7}  {:>9} {:>6} {:>5}  {:>9} {:>10} {:>10}",
        "skill",
        "route",
        "TP",
        "FP",
        "miss",
        "not rev",
        "precision",
        "recall",
        "F1",
        "find/case",
        "cost/case",
        "time/case"
    );
    for g in &r.groups {
        let m = &g.metrics;
        let _ = writeln!(
            s,
            "  {:<18} {:<16} {:>4} {:>4} {:>5} {:>7}  {:>9} {:>6} {:>5}  {:>9} {:>10} {:>10}",
            escape::inline(&g.skill),
            route_name(g),
            m.true_positives,
            m.false_positives,
            m.misses,
            m.not_reviewed,
            fig(m.precision),
            fig(m.recall),
            fig(m.f1),
            fig(m.findings_per_case),
            usd(m.cost_per_case_usd),
            secs(m.ms_per_case)
        );
    }
}

fn spread_text(s: &mut String, r: &EvalReport) {
    if r.spread.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\nspread over {} runs (mean, min–max, stdev)",
        r.runs.len()
    );
    for (name, sp) in &r.spread {
        let _ = writeln!(
            s,
            "  {name:<28} {:.3}  {:.3}–{:.3}  sd {:.3}",
            sp.mean, sp.min, sp.max, sp.stdev
        );
    }
}

fn not_reviewed_text(s: &mut String, r: &EvalReport) {
    if r.not_reviewed.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\nnot reviewed (their references are kept apart from the misses)"
    );
    for n in &r.not_reviewed {
        let at =
            n.at.as_ref()
                .map(|a| {
                    format!(
                        " {}:{}-{}",
                        escape::inline(&a.path),
                        a.start_line,
                        a.end_line
                    )
                })
                .unwrap_or_default();
        let skill = n
            .skill
            .as_ref()
            .map(|k| format!(" ({})", escape::inline(k)))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "  {} run {}: {}{at}{skill}: {} — {} reference(s)",
            escape::inline(&n.case),
            n.run,
            n.kind,
            escape::inline(&n.reason),
            n.references
        );
    }
}

fn cases_text(s: &mut String, r: &EvalReport) {
    let _ = writeln!(s, "\ncases");
    for c in &r.cases {
        let state = match (c.state.as_str(), c.outcome.as_deref()) {
            ("reviewed", Some(o)) => o.to_string(),
            (st, _) => st.to_string(),
        };
        let _ = writeln!(
            s,
            "  {:<40} run {} {:<11} TP {} FP {} miss {} not rev {}",
            escape::inline(&c.id),
            c.run,
            state,
            c.true_positives,
            c.false_positives,
            c.misses,
            c.not_reviewed
        );
        for f in &c.findings {
            let _ = writeln!(
                s,
                "      {:<14} {}:{} {} [{}]",
                f.verdict,
                escape::inline(&f.finding.path),
                f.finding.start_line,
                escape::inline(&f.finding.title),
                escape::inline(&f.finding.skill)
            );
        }
        for rf in c.references.iter().filter(|rf| rf.result != "found") {
            let _ = writeln!(
                s,
                "      {:<14} {}:{}-{}{}",
                rf.result,
                escape::inline(&rf.path),
                rf.start_line,
                rf.end_line,
                rf.reason
                    .as_ref()
                    .map(|w| format!(" ({})", escape::inline(w)))
                    .unwrap_or_default()
            );
        }
    }
}

/// The Markdown report: the headline, the skill × route table, what was not reviewed.
pub fn markdown(r: &EvalReport) -> String {
    let mut s = String::new();
    let c = &r.corpus;
    let _ = writeln!(s, "## warden eval\n");
    let _ = writeln!(
        s,
        "Corpus {} — {} cases ({} clean), {} references; runs {}, line window {}.\n",
        escape::md_code(&c.source),
        c.cases,
        c.clean_cases,
        c.references,
        r.settings.runs,
        r.settings.line_window
    );
    for l in headline(&r.overall) {
        let _ = writeln!(s, "- {l}");
    }
    let _ = writeln!(
        s,
        "\n| skill | route | TP | FP | misses | not reviewed | precision | recall | F1 | findings/case | cost/case | cost/TP | time/case |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for g in &r.groups {
        let m = &g.metrics;
        let route = g
            .route
            .as_deref()
            .map(escape::md_code_cell)
            .unwrap_or_else(|| "(not reviewed)".into());
        let _ = writeln!(
            s,
            "| {} | {route} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            escape::md_code_cell(&g.skill),
            m.true_positives,
            m.false_positives,
            m.misses,
            m.not_reviewed,
            fig(m.precision),
            fig(m.recall),
            fig(m.f1),
            fig(m.findings_per_case),
            usd(m.cost_per_case_usd),
            usd(m.cost_per_true_positive_usd),
            secs(m.ms_per_case)
        );
    }
    if !r.not_reviewed.is_empty() {
        let _ = writeln!(s, "\n**Not reviewed** (kept apart from the misses):\n");
        for n in &r.not_reviewed {
            let _ = writeln!(
                s,
                "- {} run {}: {} — {} ({} reference(s))",
                escape::md_code(&n.case),
                n.run,
                n.kind,
                escape::md_inline(&n.reason),
                n.references
            );
        }
    }
    if let Some(j) = &r.judge {
        let _ = writeln!(
            s,
            "\nJudge {}: {} pairs, {} same, {} not, {} unjudged; {} (not in the figures above).",
            escape::md_code(&j.route),
            j.pairs,
            j.accepted,
            j.rejected,
            j.unjudged,
            usd(Some(j.cost_usd))
        );
    }
    if let Some(b) = &r.baseline {
        let _ = writeln!(s, "\n```text{}```", super::baseline::text(b));
    }
    s
}
