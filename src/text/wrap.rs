//! Word wrapping for the text report: lines cut at spaces, never inside a word, their
//! continuations under a hanging indent. Widths are terminal columns of the text without
//! its colour codes, so styled words wrap like plain ones. Text is escaped before it gets
//! here; wrapping only moves whole words onto new lines.

use console::{Style, measure_text_width};

/// Writes one logical line made of `pieces` (text, and the style of every word of it) to
/// `out`: led by `lead`, continued on lines led by `hang` spaces, each at most `width`
/// columns when a word allows it (a word longer than a line stands alone, uncut). `None`
/// writes it as one line. Spaces between words are kept, except where a line breaks.
pub fn pieces(
    out: &mut String,
    lead: &str,
    hang: usize,
    pieces: &[(&str, Style)],
    width: Option<usize>,
) {
    let plain: String = pieces.iter().map(|(t, _)| *t).collect();
    let fits = width.is_none_or(|w| measure_text_width(lead) + measure_text_width(&plain) <= w);
    if fits {
        out.push_str(lead);
        for (text, style) in pieces {
            push_styled(out, text, style);
        }
        out.push('\n');
        return;
    }
    let width = width.unwrap_or(usize::MAX);
    let indent = " ".repeat(hang);
    let mut col = measure_text_width(lead);
    // No break before a line's first word; its leading spaces (model text's indent) stay.
    let mut has_word = false;
    out.push_str(lead);
    // A word continues across pieces ("[code-review," then "high"): a break is only taken
    // at a space, and the spaces between two words on one line are kept as they were.
    let mut spaces = 0usize;
    for (text, style) in pieces {
        for (i, word) in text.split(' ').enumerate() {
            spaces += usize::from(i > 0);
            if word.is_empty() {
                continue;
            }
            let w = measure_text_width(word);
            if has_word && spaces > 0 && col + spaces + w > width {
                out.push('\n');
                out.push_str(&indent);
                col = hang;
            } else {
                out.push_str(&" ".repeat(spaces));
                col += spaces;
            }
            push_styled(out, word, style);
            col += w;
            has_word = true;
            spaces = 0;
        }
    }
    out.push('\n');
}

/// One plain (or wholly styled) line: [`pieces`] with a single piece.
pub fn line(
    out: &mut String,
    lead: &str,
    hang: usize,
    text: &str,
    style: Style,
    width: Option<usize>,
) {
    pieces(out, lead, hang, &[(text, style)], width);
}

fn push_styled(out: &mut String, text: &str, style: &Style) {
    if text.is_empty() {
        return;
    }
    out.push_str(&style.apply_to(text).to_string());
}

/// The columns of a terminal on stderr: `COLUMNS` when set (as most terminal programs
/// read it), else the terminal's width; None for a pipe or a file (lines stay whole, for
/// the tools that read them).
pub fn stderr_columns() -> Option<usize> {
    columns(&console::Term::stderr())
}

/// As [`stderr_columns`], for stdout.
pub fn stdout_columns() -> Option<usize> {
    columns(&console::Term::stdout())
}

fn columns(term: &console::Term) -> Option<usize> {
    let env = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0);
    env.or_else(|| {
        term.is_term()
            .then(|| term.size_checked().map(|(_, cols)| usize::from(cols)))
            .flatten()
    })
    .map(|w| w.max(20))
}

/// Every line of `text` wrapped to `width` at words, its continuations under `hang`
/// spaces (a line's own leading spaces count as its lead). None: `text` as it is.
pub fn block(text: &str, hang: usize, width: Option<usize>) -> String {
    if width.is_none() {
        return text.to_string();
    }
    let mut out = String::new();
    for l in text.lines() {
        let body = l.trim_start_matches(' ');
        let lead = &l[..l.len() - body.len()];
        line(&mut out, lead, hang + lead.len(), body, Style::new(), width);
    }
    out
}

/// `line` cut to `width` columns (colour codes take none) with `…` at the cut.
pub fn truncate(line: &str, width: Option<usize>) -> String {
    match width {
        Some(w) => console::truncate_str(line, w, "…").into_owned(),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wrapped(lead: &str, hang: usize, text: &str, width: usize) -> String {
        let mut out = String::new();
        line(&mut out, lead, hang, text, Style::new(), Some(width));
        out
    }

    #[test]
    fn lines_break_at_spaces_under_a_hanging_indent() {
        let out = wrapped("  ", 4, "one two three four five six", 12);
        assert_eq!(out, "  one two\n    three\n    four\n    five six\n");
        for l in out.lines() {
            assert!(l.len() <= 12, "{l:?}");
        }
    }

    #[test]
    fn a_word_longer_than_the_line_is_never_cut() {
        let long = "https://example.com/a/very/long/path/that/does/not/fit";
        let out = wrapped("", 2, &format!("see {long} now"), 20);
        assert_eq!(out, format!("see\n  {long}\n  now\n"));
    }

    #[test]
    fn a_line_that_fits_is_written_as_it_is() {
        assert_eq!(wrapped("> ", 2, "a  b   c", 80), "> a  b   c\n");
        // Wrapped, the spaces inside a line stay; those at the break go.
        assert_eq!(wrapped("", 0, "a  b   c", 5), "a  b\nc\n");
        assert_eq!(wrapped("", 2, "    let x = 1;", 10), "    let x\n  = 1;\n");
        let mut out = String::new();
        line(&mut out, "", 0, "x ".repeat(200).trim(), Style::new(), None);
        assert_eq!(out.lines().count(), 1);
    }

    #[test]
    fn colour_codes_take_no_columns() {
        console::set_colors_enabled(true);
        let red = Style::new().red().force_styling(true);
        let mut out = String::new();
        pieces(
            &mut out,
            "",
            2,
            &[("aaaa bbbb", red.clone()), (" cccc", Style::new())],
            Some(10),
        );
        let plain = console::strip_ansi_codes(&out).into_owned();
        assert_eq!(plain, "aaaa bbbb\n  cccc\n");
        assert!(out.contains('\u{1b}'), "styled: {out:?}");
    }

    #[test]
    fn words_spanning_pieces_stay_whole() {
        let mut out = String::new();
        pieces(
            &mut out,
            "",
            0,
            &[("ab", Style::new()), ("cd ef", Style::new())],
            Some(4),
        );
        assert_eq!(out, "abcd\nef\n");
    }
}
