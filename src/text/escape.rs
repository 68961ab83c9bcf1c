//! Escaping for text warden did not write: model answers (titles, descriptions,
//! suggestions), repository content (paths, skill names) and provider messages. Every
//! human or CI output passes such text through here so that it stays data: it cannot end
//! a line and start a forged one, restyle or rewrite a terminal, or be read by a CI runner
//! as a command.
//!
//! What a CI log treats as a command: GitHub's runner reads `::name …::` at the start of a
//! line (after leading whitespace) and its legacy `##[name]` anywhere in a line; Azure
//! Pipelines reads `##vso[`, TeamCity `##teamcity[`. Line breaks are `\n` and `\r` (and, for
//! some viewers, U+0085, U+2028, U+2029). Terminals act on ESC and C1 controls.
//!
//! Escapes are visible (`\n`, `\u{1b}`, `##\[`), so a reader sees that the text held them.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` is shown as an escape: control characters (C0, DEL, C1), the Unicode line
/// and paragraph separators, and the bidirectional controls that can make displayed text
/// differ from the bytes ("Trojan Source").
fn is_special(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}'
                | '\u{2029}'
                | '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// How a text output writes the `[` of a command marker.
const TEXT_BRACKET: &str = "\\[";

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

/// Controls shown as escapes; `keep` characters pass through.
fn escape_controls(s: &str, keep: &[char]) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if is_special(c) && !keep.contains(&c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    out
}

/// Breaks CI command markers that work anywhere in a line: in `##[`, `##vso[`,
/// `##teamcity[` (`##` then ASCII letters then `[`) the `[` is written as `bracket`.
fn break_markers(s: &str, bracket: &str) -> String {
    if !s.contains("##") {
        return s.to_string();
    }
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len() + 2);
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(b"##") {
            let mut j = i + 2;
            while j < bytes.len() && bytes[j].is_ascii_alphabetic() {
                j += 1;
            }
            if j < bytes.len() && bytes[j] == b'[' {
                out.push_str(&s[i..j]);
                out.push_str(bracket);
                i = j + 1;
                continue;
            }
            out.push_str("##");
            i += 2;
            continue;
        }
        let c = s[i..].chars().next().expect("in bounds");
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// A field shown inside one line of terminal or CI-log output (a title, a path, a
/// reason): one line, no control characters, no CI command markers, and a leading `::`
/// (GitHub's command syntax) escaped as `\::`, since any field may end up where a line
/// starts (after an indentation, or an empty field before it).
pub fn inline(s: &str) -> String {
    protect_start(break_markers(&escape_controls(s, &[]), TEXT_BRACKET))
}

/// A field that starts an output line (after any indentation): the same as [`inline`].
pub fn line_start(s: &str) -> String {
    inline(s)
}

fn protect_start(s: String) -> String {
    let body = s.trim_start();
    if body.starts_with("::") {
        let lead = s.len() - body.len();
        format!("{}\\{}", &s[..lead], body)
    } else {
        s
    }
}

/// Multi-line text (a description, a suggestion, an error message) as output lines, each
/// safe to print at the start of a line: `\r\n` and `\n` separate lines, tabs are kept,
/// every other control is escaped.
pub fn lines(s: &str) -> Vec<String> {
    s.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .map(|l| protect_start(break_markers(&escape_controls(l, &['\t']), TEXT_BRACKET)))
        .collect()
}

/// Multi-line text for stderr (errors, warnings): [`lines`] joined with `\n`.
pub fn block(s: &str) -> String {
    lines(s).join("\n")
}

/// Inline Markdown text: controls escaped as in [`inline`], then every character with
/// inline meaning in CommonMark/GFM backslash-escaped (and, at the start, those that would
/// open a heading, list, quote or rule, or make a CI log line start with `::`), so the
/// text renders as itself: no emphasis, links, images, HTML, entities or table cells can
/// start inside it, and no `@` mention (see [`MENTION_BREAK`]).
pub fn md_inline(s: &str) -> String {
    const INLINE: &[char] = &['\\', '`', '*', '_', '[', ']', '<', '>', '!', '|', '~', '&'];
    // `:` too: a Markdown report printed to a CI log must not start a line with `::`.
    const AT_START: &[char] = &['#', '-', '+', '=', '.', ')', ':'];
    let plain = escape_controls(s, &[]);
    let body = plain.trim_start();
    let lead = plain.len() - body.len();
    // Where a leading block marker would sit: the first character, or the `.`/`)` after
    // leading digits (an ordered list item).
    let digits = body.chars().take_while(char::is_ascii_digit).count();
    let marker_at = lead + digits;
    let mut out = String::with_capacity(plain.len() + 8);
    for (i, c) in plain.char_indices() {
        let leading = i == marker_at
            && ((digits == 0 && AT_START.contains(&c)) || (digits > 0 && matches!(c, '.' | ')')));
        if INLINE.contains(&c) || leading {
            out.push('\\');
        }
        out.push(c);
        if c == '@' {
            out.push(MENTION_BREAK);
        }
    }
    out
}

/// Written after every `@` in Markdown text so that GitHub makes no mention of it
/// (`@octocat`, `@org/team`): GitHub finds mentions after Markdown is rendered, so an
/// escaped `\@` still mentions (github/markup#1168); a zero-width space between `@` and
/// the name does not, and reads the same.
pub const MENTION_BREAK: char = '\u{200b}';

/// A Markdown code span holding `s` (a path, a name): the fence is longer than any
/// backtick run inside, controls are escaped as in [`inline`].
pub fn md_code(s: &str) -> String {
    let text = inline(s);
    let longest = longest_run(&text, '`');
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') || text.trim().is_empty() {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// [`md_code`] for a GitHub-flavoured table cell, where `|` ends the cell even inside a
/// code span unless escaped.
pub fn md_code_cell(s: &str) -> String {
    md_code(s).replace('|', "\\|")
}

fn longest_run(s: &str, ch: char) -> usize {
    let (mut longest, mut run) = (0, 0);
    for c in s.chars() {
        if c == ch {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    longest
}

/// A serialized JSON document (the JSON report, SARIF) that may be printed to a CI log:
/// inside string values, command markers (`##[` → `##\u005b`), C1 controls, DEL and the
/// Unicode separators are written as `\u` escapes. The document means exactly the same;
/// none of these characters can occur outside a string in JSON.
pub fn json_doc(doc: &str) -> String {
    let marked = break_markers(doc, "\\u005b");
    let mut out = String::with_capacity(marked.len());
    for c in marked.chars() {
        // serde_json already escapes C0; these it writes raw.
        if is_special(c) && (c as u32) >= 0x7f {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

/// GitHub workflow-command data (the message after `::`): `%`, `\r` and `\n` as the runner
/// expects (`%25`, `%0D`, `%0A`), other controls shown as escapes, and legacy markers
/// broken too (the runner would try them if the line ever failed to parse as `::`).
pub fn gh_data(s: &str) -> String {
    break_markers(&escape_controls(s, &['\n', '\r']), TEXT_BRACKET)
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// GitHub workflow-command property value (`file=`, `title=`): as [`gh_data`], and `:` and
/// `,` as `%3A` and `%2C`.
pub fn gh_property(s: &str) -> String {
    gh_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// The last defence on a whole output (stdout, stderr, `-o` files, the step summary): in
/// every line, a `::` where a CI runner would read a workflow command (after leading
/// whitespace, which GitHub's runner trims, and any terminal colour codes) becomes `\::`,
/// and `##[`-style markers are broken as in [`inline`]. Lines end at `\n` or `\r` (the
/// runner reads a lone `\r` as a line end too). Fields are escaped where they are written;
/// this catches a field written where a line starts that nobody expected to. Only GitHub
/// annotations, warden's own commands, bypass it. Idempotent.
pub fn guard(text: &str) -> Cow<'_, str> {
    if !text.contains("::") && !text.contains("##") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for line in text.split_inclusive(['\n', '\r']) {
        let line = break_markers(line, TEXT_BRACKET);
        let at = command_start(&line);
        if line[at..].starts_with("::") {
            out.push_str(&line[..at]);
            out.push('\\');
            out.push_str(&line[at..]);
        } else {
            out.push_str(&line);
        }
    }
    Cow::Owned(out)
}

/// Where a runner would look for `::` in `line`: after leading whitespace (any Unicode
/// white space, as .NET's `TrimStart` reads it) and terminal CSI sequences (`ESC [ … final`).
fn command_start(line: &str) -> usize {
    let bytes = line.as_bytes();
    let mut i = 0;
    loop {
        if bytes[i..].starts_with(b"\x1b[") {
            let mut j = i + 2;
            while j < bytes.len() && !(0x40..=0x7e).contains(&bytes[j]) {
                j += 1;
            }
            i = (j + 1).min(bytes.len());
            continue;
        }
        match line[i..].chars().next() {
            Some(c) if c.is_whitespace() && c != '\n' && c != '\r' => i += c.len_utf8(),
            _ => return i,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What GitHub's runner would take as a command line (V2 at line start after
    /// whitespace, legacy `##[` anywhere) or another CI system's marker.
    fn is_command(line: &str) -> bool {
        line.trim_start().starts_with("::")
            || line.contains("##[")
            || line.contains("##vso[")
            || line.contains("##teamcity[")
    }

    #[test]
    fn inline_is_one_line_without_controls_or_markers() {
        let hostile = "t\n::error file=/etc/passwd,line=1::owned\r##[error]x \u{1b}[31mred\u{85}\u{2028}\u{202e}##vso[task.setvariable]";
        let s = inline(hostile);
        assert!(!s.contains(['\n', '\r', '\u{1b}', '\u{85}', '\u{2028}', '\u{202e}']));
        assert!(!is_command(&s), "{s}");
        assert_eq!(
            inline("a\nb\tc\u{1b}[0m"),
            "a\\nb\\tc\\u{1b}[0m",
            "visible escapes"
        );
        assert_eq!(inline("x ##[group]y"), "x ##\\[group]y");
        assert_eq!(inline("## heading [link]"), "## heading [link]");
        assert_eq!(inline("plain ünïcode ✓"), "plain ünïcode ✓");
    }

    #[test]
    fn line_start_escapes_a_leading_double_colon() {
        assert_eq!(line_start("::error::x"), "\\::error::x");
        assert_eq!(line_start("  ::warning::x"), "  \\::warning::x");
        assert_eq!(line_start("std::mem::take"), "std::mem::take");
    }

    #[test]
    fn lines_keep_structure_but_no_line_is_a_command() {
        let out = lines("first\r\n::error::forged\n\t##[warning]x\n  ::notice::y\u{1b}[2J");
        assert_eq!(out.len(), 4);
        assert_eq!(out[0], "first");
        assert!(out.iter().all(|l| !is_command(l)), "{out:?}");
        assert!(out[2].starts_with('\t'), "tabs are kept in blocks");
        assert!(out[3].ends_with("\\u{1b}[2J"));
    }

    #[test]
    fn markdown_renders_as_itself() {
        assert_eq!(md_inline("a|b <img> [x](y)"), "a\\|b \\<img\\> \\[x\\](y)");
        assert_eq!(md_inline("x\ny"), "x\\\\ny");
        assert_eq!(md_inline("code-review: fine."), "code-review: fine.");
        assert_eq!(md_inline("# title"), "\\# title");
        assert_eq!(md_inline("::error::x"), "\\::error::x");
        assert_eq!(md_inline("- item"), "\\- item");
        assert_eq!(md_inline("12. item"), "12\\. item");
        assert_eq!(md_inline("&amp; **b**"), "\\&amp; \\*\\*b\\*\\*");
        assert_eq!(md_code("a`b"), "``a`b``");
        assert_eq!(md_code("`x"), "`` `x ``");
        assert_eq!(md_code_cell("a|b"), "`a\\|b`");
        assert_eq!(md_inline("ask @octocat"), "ask @\u{200b}octocat");
        assert_eq!(md_inline("@org/team"), "@\u{200b}org/team");
        assert!(!md_code("p\n::error::x").contains('\n'));
    }

    #[test]
    fn json_documents_keep_their_meaning() {
        let v = serde_json::json!({"t": "a ##[error]b \u{85}\u{2028} ##vso[x] ok [1] \\[ ##\\[", "n": [1, 2]});
        let doc = json_doc(&serde_json::to_string_pretty(&v).unwrap());
        assert!(!doc.contains("##[") && !doc.contains("##vso["), "{doc}");
        assert!(!doc.contains(['\u{85}', '\u{2028}']));
        let back: serde_json::Value = serde_json::from_str(&doc).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn github_escaping_follows_the_runner_rules() {
        assert_eq!(gh_data("50% done\r\nnext"), "50%25 done%0D%0Anext");
        assert_eq!(gh_property("a:b,c%"), "a%3Ab%2Cc%25");
        assert_eq!(gh_data("\u{1b}[31m"), "\\u{1b}[31m");
    }

    #[test]
    fn the_output_guard_leaves_no_command_line() {
        let hostile = "  ::error title=x::owned.py:1-30\n\t::stop-commands::t\rok\r ::warning::y\n\u{a0}\u{3000}::notice::z\n\u{1b}[36m::debug::c\u{1b}[0m\nx ##[error]y\nstd::mem ok\n";
        let out = guard(hostile);
        for line in out.split(['\n', '\r']) {
            assert!(!is_command(line), "{line:?} in {out:?}");
            let plain = console::strip_ansi_codes(line);
            assert!(!plain.trim_start().starts_with("::"), "{line:?}");
        }
        assert!(
            out.contains("  \\::error title=x::owned.py:1-30\n"),
            "{out}"
        );
        assert!(out.contains("std::mem ok"), "{out}");
        assert_eq!(guard(&out), out, "idempotent");
        assert!(matches!(guard("plain text\n"), Cow::Borrowed(_)));
    }
}
