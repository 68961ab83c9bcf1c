//! The Markdown summary appended to `$GITHUB_STEP_SUMMARY`: outcome, findings, coverage
//! by status, and per-route figures.

use super::escape::{md_code, md_code_cell as code, md_inline as cell};
use super::{Report, ReviewOutcome};
use crate::engine::UnitStatus;
use std::fmt::Write;

pub fn render(r: &Report) -> String {
    let mut out = String::new();
    let s = &r.summary;
    let verdict = match r.outcome {
        ReviewOutcome::Complete => "✅ complete".to_string(),
        ReviewOutcome::Partial => format!(
            "⚠️ **PARTIAL**: {} of {} units were NOT reviewed",
            s.units - s.reviewed,
            s.units
        ),
        ReviewOutcome::Unavailable => format!(
            "❌ **UNAVAILABLE**: none of the {} units was reviewed",
            s.units
        ),
    };
    let _ = writeln!(out, "## warden review\n");
    let _ = writeln!(
        out,
        "{verdict} · {} findings · {:.1}s of a {:.0}s budget · {}\n",
        s.findings,
        r.duration_ms as f64 / 1000.0,
        r.budget_ms as f64 / 1000.0,
        md_code(&r.target)
    );
    if !r.findings.is_empty() {
        let _ = writeln!(
            out,
            "### Findings\n\n| severity | file | lines | title | skill |\n|---|---|---|---|---|"
        );
        for f in &r.findings {
            let _ = writeln!(
                out,
                "| {} | {} | {}-{} | {} | {} |",
                f.severity,
                code(&f.path),
                f.start_line,
                f.end_line,
                cell(&f.title),
                cell(&f.skill)
            );
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "### Coverage\n\n| status | units |\n|---|---|");
    for (st, n) in [
        (UnitStatus::Reviewed, s.reviewed),
        (UnitStatus::TimedOut, s.timed_out),
        (UnitStatus::Unavailable, s.unavailable),
        (UnitStatus::Failed, s.failed),
        (UnitStatus::Cancelled, s.cancelled),
        (UnitStatus::Skipped, s.skipped),
    ] {
        let _ = writeln!(out, "| {} | {n} |", st.as_str());
    }
    let _ = writeln!(out);
    let missing: Vec<_> = r.not_reviewed().collect();
    if !missing.is_empty() {
        let _ = writeln!(
            out,
            "<details><summary>Units NOT reviewed ({})</summary>\n",
            missing.len()
        );
        for u in missing.iter().take(100) {
            let _ = writeln!(
                out,
                "- {} ({}) **{}**: {}",
                md_code(&format!("{}:{}-{}", u.path, u.start_line, u.end_line)),
                cell(&u.skill),
                u.status.as_str(),
                cell(&u.reason)
            );
        }
        let _ = writeln!(out, "\n</details>\n");
    }
    if !r.route_order.is_empty() {
        let _ = writeln!(
            out,
            "### Routes\n\n| route | calls | ok | timeouts | unavailable | rate limited | failovers from | p50 | p95 | max | TTFT p95 | breaker |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
        );
        for name in &r.route_order {
            let m = &r.routes[name];
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} ({} opens) |",
                cell(name),
                m.calls,
                m.ok,
                m.timeouts,
                m.unavailable,
                m.rate_limited,
                m.failovers_from,
                super::secs(m.p50_ms, "–"),
                super::secs(m.p95_ms, "–"),
                super::secs(m.max_ms, "–"),
                super::secs(m.ttft_p95_ms, "–"),
                m.breaker.state.as_str(),
                m.breaker.opens
            );
        }
    }
    out
}
