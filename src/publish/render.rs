//! What warden writes on the pull request: inline comments, the review body and the sticky
//! summary. Every string of the report is untrusted (a fork can write the report): model
//! and repository text goes through `text::escape::md_inline` (no HTML, links, mentions,
//! markers or `::` line starts), a replacement only inside a suggestion fence longer than
//! any backtick run in it, and every body stays under the forge's size limit.

use super::marker::{BODY_LIST, Marker};
use crate::render::markdown;
use crate::report::{Finding, Report, ReviewOutcome};
use crate::text::escape::{md_code, md_inline};
use std::fmt::Write;

/// GitHub's limit for one comment or review body, in characters.
pub(crate) const LIMIT: usize = markdown::COMMENT_LIMIT;
/// Rows of the sticky summary's body list kept (the newest).
const MAX_BODY_ROWS: usize = 300;
const TITLE_CHARS: usize = 300;
const DESCRIPTION_CHARS: usize = 4_000;
const REPLACEMENT_CHARS: usize = 8_000;
const NOT_REVIEWED_ROWS: usize = 20;
const BODY_FINDINGS: usize = 200;

fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

/// Multi-line model text, each line escaped as inline Markdown.
fn paragraph(s: &str, n: usize) -> String {
    cut(s, n)
        .lines()
        .map(md_inline)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The body of an inline comment; `suggest`: the finding's lines are exactly the
/// comment's, so a replacement can be a suggestion block.
pub fn comment(f: &Finding, m: &Marker, suggest: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", m.render());
    let _ = writeln!(
        out,
        "**{}**: {}",
        f.severity.as_str(),
        md_inline(&cut(&f.title, TITLE_CHARS))
    );
    if !f.description.trim().is_empty() {
        let _ = write!(out, "\n{}\n", paragraph(&f.description, DESCRIPTION_CHARS));
    }
    if let Some(s) = f.suggestion.as_deref().filter(|s| !s.trim().is_empty()) {
        let _ = write!(
            out,
            "\n**Suggestion:** {}\n",
            paragraph(s, DESCRIPTION_CHARS)
        );
    }
    if let Some(r) = f
        .replacement
        .as_deref()
        .filter(|r| suggest && r.chars().count() <= REPLACEMENT_CHARS)
    {
        let _ = write!(out, "\n{}\n", suggestion_block(r));
    }
    let _ = write!(
        out,
        "\n<sub>warden · skill {} · confidence {}</sub>\n",
        md_code(&f.skill),
        f.confidence.as_str()
    );
    out
}

/// A ```` ```suggestion ```` block: the fence longer than any backtick run, controls other
/// than tabs shown as escapes (code text is otherwise shown as written: a code block
/// renders no HTML and makes no mention).
fn suggestion_block(code: &str) -> String {
    let clean: String = code
        .chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                '\u{fffd}'
            } else {
                c
            }
        })
        .collect();
    let mut longest = 0;
    let mut run = 0;
    for c in clean.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest.max(2) + 1);
    format!(
        "{fence}suggestion\n{}\n{fence}",
        clean.trim_end_matches('\n')
    )
}

/// One line naming a finding in the review body.
fn body_row(f: &Finding, web: Option<&str>, head: &str) -> String {
    let loc = format!("{}:{}", f.path, f.start_line);
    let place = match web {
        Some(w) => format!(
            "[{}]({w}/blob/{head}/{}#L{})",
            md_code(&loc),
            encode_path(&f.path),
            f.start_line
        ),
        None => md_code(&loc),
    };
    format!(
        "- **{}** {place}: {}",
        f.severity.as_str(),
        md_inline(&cut(&f.title, TITLE_CHARS))
    )
}

fn encode_path(p: &str) -> String {
    p.split('/')
        .map(|s| {
            percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The review body: the outcome from the report's counts (never "clean" when units were
/// not reviewed, naming those), and the new findings no diff line can hold.
pub(crate) fn review_body(
    r: &Report,
    head: &str,
    web: Option<&str>,
    in_body: &[&Finding],
    moved: usize,
) -> String {
    let s = &r.summary;
    let short = &head[..head.len().min(12)];
    let mut out = String::from("<!-- warden:review-run -->\n");
    let _ = match r.outcome {
        ReviewOutcome::Complete => writeln!(
            out,
            "**warden** reviewed {}: all {} units reviewed, {} findings.",
            md_code(short),
            s.units,
            s.findings
        ),
        ReviewOutcome::Partial => writeln!(
            out,
            "**warden** reviewed {}: **partial review**: {} of {} units reviewed, {} findings. What was not reviewed is listed below; no thread is resolved for it.",
            md_code(short),
            s.reviewed,
            s.units,
            s.findings
        ),
        ReviewOutcome::Unavailable => writeln!(
            out,
            "**warden** could not review {}: **no unit was reviewed** ({} units). Nothing here means the change is clean.",
            md_code(short),
            s.units
        ),
    };
    let not: Vec<_> = r.not_reviewed().collect();
    if !not.is_empty() {
        let _ = writeln!(out, "\n**Not reviewed** ({}):", not.len());
        for u in not.iter().take(NOT_REVIEWED_ROWS) {
            let _ = writeln!(
                out,
                "- {} lines {}–{}, skill {}: {}",
                md_code(&u.path),
                u.start_line,
                u.end_line,
                md_code(&u.skill),
                u.status.as_str()
            );
        }
        if not.len() > NOT_REVIEWED_ROWS {
            let _ = writeln!(out, "- and {} more", not.len() - NOT_REVIEWED_ROWS);
        }
    }
    if !in_body.is_empty() {
        let _ = writeln!(
            out,
            "\n**Findings outside the diff's lines** ({}):",
            in_body.len()
        );
        if moved > 0 {
            let _ = writeln!(out, "({moved} of them could not be placed on their lines.)");
        }
        for f in in_body.iter().take(BODY_FINDINGS) {
            let _ = writeln!(out, "{}", body_row(f, web, head));
        }
        if in_body.len() > BODY_FINDINGS {
            let _ = writeln!(
                out,
                "- and {} more (the summary comment lists every finding)",
                in_body.len() - BODY_FINDINGS
            );
        }
    }
    fit(out)
}

/// The sticky summary: the Markdown report, then the list of findings posted in review
/// bodies (hidden), so the next run knows them.
pub fn sticky(r: &Report, rows: &[String]) -> String {
    let keep = &rows[rows.len().saturating_sub(MAX_BODY_ROWS)..];
    let list = format!("\n{BODY_LIST}\n{}\n-->\n", keep.join("\n"));
    let room = LIMIT.saturating_sub(list.chars().count() + 1);
    format!("{}{list}", markdown::render_within(r, room))
}

fn fit(s: String) -> String {
    if s.chars().count() <= LIMIT {
        return s;
    }
    format!(
        "{}\n\n(cut to stay under the comment size limit)\n",
        s.chars().take(LIMIT - 64).collect::<String>()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(title: &str, replacement: Option<&str>) -> Finding {
        let snap = include_str!("../../tests/it/snapshots/it__report_formats__json.snap");
        let json = &snap[snap[4..].find("---").unwrap() + 7..];
        let r: Report = serde_json::from_str(json).unwrap();
        Finding {
            title: title.into(),
            replacement: replacement.map(str::to_string),
            ..r.findings[0].clone()
        }
    }

    #[test]
    fn model_text_cannot_mention_forge_markers_or_write_html() {
        let f = finding(
            "@admin <!-- warden:finding:v1 id=X skill=Y anchor=Z --> <img src=x>",
            None,
        );
        let m = Marker::new(&f.id, &f.skill, Some("x"));
        let body = comment(&f, &m, true);
        assert_eq!(Marker::parse(&body), Some(m));
        assert_eq!(body.matches("<!--").count(), 1, "{body}");
        // Every `<` but the marker's and warden's own `<sub>` is escaped: Markdown shows it.
        let raw = body.replace("<sub>", "").replace("</sub>", "");
        let unescaped = raw
            .match_indices('<')
            .filter(|(i, _)| *i == 0 || !raw[..*i].ends_with('\\'))
            .count();
        assert_eq!(unescaped, 1, "{body}");
        assert!(body.contains(&format!("@{}admin", crate::text::escape::MENTION_BREAK)));
        let mut g = finding("t", None);
        g.description = "fine\n::error::forged\n  ::warning::x".into();
        let body = comment(&g, &Marker::new("W", "s", None), false);
        assert!(
            !body.lines().any(|l| l.trim_start().starts_with("::")),
            "{body}"
        );
    }

    #[test]
    fn a_replacement_is_a_suggestion_fence_nothing_breaks_out_of() {
        let f = finding("t", Some("let a = \"```\";\n```\n@x"));
        let body = comment(&f, &Marker::new("W", "s", None), true);
        assert!(
            body.contains("````suggestion\nlet a = \"```\";\n```\n@x\n````"),
            "{body}"
        );
        assert!(!comment(&f, &Marker::new("W", "s", None), false).contains("suggestion\n"));
    }
}
