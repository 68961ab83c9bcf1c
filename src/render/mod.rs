//! The renderers: one file per format, each a pure function of the finished
//! [`Report`](crate::report::Report). They decide no policy: what a report says is
//! settled when it is built; a renderer only shows it, escaped for where it goes.
//! [`render`] picks the renderer of a [`Format`].

mod dropped;
mod fit;
pub mod github;
pub mod gitlab;
mod json;
mod layout;
pub mod markdown;
pub mod rdjson;
pub mod sarif;
pub mod summary_md;
pub mod text;
mod text_routes;

pub use layout::{Layout, WIDE};

use crate::report::{Finding, Format, Report, RouteMetrics, SkillInfo};
use crate::text::escape;
use crate::trust::{SkillSource, TrustReport};

/// `r` in `format`, the text report unwrapped. JSON documents may be printed to a CI log,
/// so command markers inside their strings are escaped (the documents mean the same).
/// Every format but GitHub's annotations (warden's own commands, each built from escaped
/// fields) then passes the line guard: no line of it can be read as a CI command.
pub fn render(format: Format, r: &Report) -> String {
    render_with(format, r, Layout::default())
}

/// [`render`], the text report laid out by `layout` (stdout's width, `-v`).
pub fn render_with(format: Format, r: &Report, layout: Layout) -> String {
    let text = match format {
        Format::Text => text::render_with(r, layout),
        Format::Json => escape::json_doc(&json::render(r)),
        Format::Sarif => escape::json_doc(&sarif::render(r)),
        Format::Github => return github::render(r),
        Format::Rdjsonl => escape::json_doc(&rdjson::render_lines(r)),
        Format::Rdjson => escape::json_doc(&rdjson::render_result(r)),
        Format::Gitlab => escape::json_doc(&gitlab::render(r)),
        Format::Markdown => markdown::render(r),
    };
    escape::guard(&text).into_owned()
}

/// A route's figures as table cells, in the order every route table shows them: calls,
/// ok, timeouts, unavailable, rate limited, failovers from, p50, p95, max, TTFT p95.
fn route_cells(m: &RouteMetrics, none: &str) -> [String; 10] {
    [
        m.calls.to_string(),
        m.ok.to_string(),
        m.timeouts.to_string(),
        m.unavailable.to_string(),
        m.rate_limited.to_string(),
        m.failovers_from.to_string(),
        secs(m.p50_ms, none),
        secs(m.p95_ms, none),
        secs(m.max_ms, none),
        secs(m.ttft_p95_ms, none),
    ]
}

/// Milliseconds in the one duration format of every human output ("900ms", "4.2s",
/// "1m30s"; `config::format_duration`), or `none` when absent.
fn secs(v: Option<u64>, none: &str) -> String {
    v.map(|v| crate::config::format_duration(std::time::Duration::from_millis(v)))
        .unwrap_or_else(|| none.to_string())
}

/// `code-review (built-in), perf (.warden/skills/perf.md, from the change, OVERRIDES
/// BUILT-IN)`: the skills line of the text and Markdown reports. Unescaped.
fn skills_line(skills: &[SkillInfo], trust: Option<&TrustReport>) -> String {
    let base = trust.map(|t| t.short_commit()).unwrap_or_default();
    skills
        .iter()
        .map(|s| {
            let mut parts: Vec<String> = Vec::new();
            match (&s.path, s.origin) {
                (_, SkillSource::BuiltIn) | (None, _) => parts.push("built-in".into()),
                (Some(p), SkillSource::Base) => parts.push(format!("{p} from base {base}")),
                (Some(p), SkillSource::Change) => parts.push(format!("{p}, from the change")),
                (Some(p), SkillSource::Repository) => parts.push(p.clone()),
            }
            if s.overrides_builtin {
                parts.push("OVERRIDES BUILT-IN".into());
            }
            format!("{} ({})", s.name, parts.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Each finding's id, made unique within the report: two findings can share an id (the
/// same line text twice in a file), and GitLab and code scanning would take them for one,
/// so a repeat gets its occurrence number (`W…-2`). The first keeps the bare id, and the
/// order of identical lines survives line shifts, so fingerprints stay stable.
fn unique_ids(findings: &[Finding]) -> Vec<String> {
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    findings
        .iter()
        .map(|f| {
            let n = seen.entry(f.id.as_str()).or_default();
            *n += 1;
            match *n {
                1 => f.id.clone(),
                n => format!("{}-{n}", f.id),
            }
        })
        .collect()
}
