//! The text report's route table: every column when the terminal is wide (or with `-v`,
//! or when the report is not wrapped at all), a compact one that fits 80 columns
//! otherwise. A route's load and tokens go under its row, wrapped.

use super::Layout;
use crate::report::{Report, RouteMetrics};
use crate::text::wrap;
use console::{Style, style};
use std::fmt::Write;

/// The widest route name the tables pad to; longer names push their row over.
const NAME_CAP: usize = 24;

/// The route table (one row per route), then a blank line.
pub(super) fn routes(out: &mut String, r: &Report, layout: Layout) {
    if r.route_order.is_empty() {
        return;
    }
    let _ = writeln!(out, "{}", style("Routes").bold());
    let full = layout.full_table();
    // The longest name sets the first column (a name past the cap pushes its row over).
    let name_w = r
        .route_order
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(5)
        .clamp(5, NAME_CAP);
    let _ = writeln!(
        out,
        "{}",
        if full {
            full_row("route", &header_cells(), "state", name_w)
        } else {
            compact_row(
                "route",
                ["calls", "ok", "not ok", "failover", "p95"],
                "state",
                name_w,
            )
        }
    );
    for name in &r.route_order {
        let m = &r.routes[name];
        let breaker = breaker(m);
        let row = if full {
            full_row(name, &super::route_cells(m, "-"), &breaker, name_w)
        } else {
            let c = super::route_cells(m, "-");
            let not_ok = m.calls.saturating_sub(m.ok).to_string();
            compact_row(
                name,
                [c[0].as_str(), &c[1], &not_ok, &c[5], &c[7]],
                &breaker,
                name_w,
            )
        };
        let _ = writeln!(out, "{row}");
        let lead = " ".repeat(name_w + 3);
        for extra in [calls_line(m), load_line(m), tokens_line(m)]
            .into_iter()
            .flatten()
        {
            wrap::line(out, &lead, name_w + 5, &extra, Style::new(), layout.width);
        }
    }
    if !full {
        wrap::line(
            out,
            "  ",
            4,
            "(compact: -v or 100 columns show every column)",
            Style::new().dim(),
            layout.width,
        );
    }
    let _ = writeln!(out);
}

fn header_cells() -> [String; 10] {
    [
        "calls",
        "ok",
        "timeouts",
        "unavailable",
        "rate-ltd",
        "failover",
        "p50",
        "p95",
        "max",
        "ttft p95",
    ]
    .map(String::from)
}

/// The breaker's state in words, and how often it opened.
fn breaker(m: &RouteMetrics) -> String {
    let opened = if m.breaker.opens > 0 {
        format!(" (set aside {}x)", m.breaker.opens)
    } else {
        String::new()
    };
    format!("{}{opened}", m.breaker.state.label())
}

fn full_row(name: &str, c: &[String; 10], breaker: &str, w: usize) -> String {
    format!(
        "  {name:<w$} {:>5} {:>5} {:>8} {:>11} {:>8} {:>8} {:>7} {:>7} {:>7} {:>8}  {breaker}",
        c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9]
    )
}

fn compact_row(name: &str, c: [&str; 5], breaker: &str, w: usize) -> String {
    format!(
        "  {name:<w$} {:>5} {:>5} {:>6} {:>8} {:>7}  {breaker}",
        c[0], c[1], c[2], c[3], c[4]
    )
}

/// A route's effective limit and back-pressure (docs/design.md section 13), under its row when
/// the run followed them or the provider pushed back.
/// What a route's calls were beyond each unit's first: tool loops' further turns and
/// retries after failures, counted apart (a healthy loop's turns are not retries).
fn calls_line(m: &RouteMetrics) -> Option<String> {
    if m.turns + m.retries == 0 {
        return None;
    }
    let s = |n: usize| if n == 1 { "" } else { "s" };
    Some(format!(
        "calls: {} loop turn{}, {} retr{}",
        m.turns,
        s(m.turns),
        m.retries,
        if m.retries == 1 { "y" } else { "ies" }
    ))
}

fn load_line(m: &RouteMetrics) -> Option<String> {
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
        super::secs(Some(bp.paused_ms), "")
    ));
    Some(parts.join(", "))
}

/// A route's tokens when its providers reported cache or reasoning tokens: input (cached
/// reads, their share, cache writes), output (reasoning).
fn tokens_line(m: &RouteMetrics) -> Option<String> {
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
