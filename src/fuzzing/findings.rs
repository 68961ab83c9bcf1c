//! The findings extractor on any answer: no panic, every kept finding inside the chunk's
//! lines, and the same entries found whatever chunk the answer is read for (the range
//! only sorts entries into kept and out of range). What is kept is never bigger than the
//! answer (no entry amplifies), and every entry is kept or counted.
//!
//! Besides the input read as an answer, each input also drives a flood: an answer built
//! from it with up to [`FLOOD_MAX`] entries whose line numbers are the odd values models
//! and hostile providers send (0, negative, fractional, past u32, text, null, reversed
//! ranges), so huge finding counts are exercised on every run, not only when the
//! fuzzer happens to grow a 4 MB input.
//!
//! The pass is linear (issue 27): it steps over no byte twice, on any input, and what it
//! says of the object's end (closed, cut, broken) does not depend on the range or cap.

use crate::findings::{
    DEFAULT_MAX_FINDINGS_PER_ANSWER, Extracted, MAX_NAMED_DROPS, NoFindings, extract_capped,
    extract_counted,
};

/// The extractor without a cap: what every entry of the answer is (the invariants below
/// read the whole list); [`check_cap`] then holds the capped reading to it.
fn extract(answer: &str, start: u32, end: u32) -> Result<Extracted, NoFindings> {
    extract_capped(answer, start, end, usize::MAX)
}

/// Under a cap, the kept findings are the uncapped reading's first `cap`, and every entry
/// is still kept, dropped or counted as cut (issue 20: a flood costs what the cap allows).
fn check_cap(answer: &str, start: u32, end: u32, whole: &Extracted) {
    for cap in [1, 3, DEFAULT_MAX_FINDINGS_PER_ANSWER] {
        let got = extract_capped(answer, start, end, cap).expect("the same list, capped");
        let n = whole.findings.len().min(cap);
        assert_eq!(
            got.findings,
            whole.findings[..n],
            "cap {cap}: other findings kept"
        );
        assert_eq!(
            got.findings.len() + got.dropped_invalid + got.dropped_out_of_range + got.over_cap,
            whole.findings.len() + whole.dropped_invalid + whole.dropped_out_of_range,
            "cap {cap} for {start}-{end}: entries neither kept nor counted"
        );
        if whole.findings.len() < cap {
            assert_eq!(
                got.over_cap, 0,
                "cap {cap} not reached, yet entries were cut"
            );
        }
    }
}

/// The most entries a flood built from one input has.
pub(crate) const FLOOD_MAX: usize = 20_000;

/// Extracts findings from `data` for several chunk ranges (the widest, narrow ones, an
/// inverted one and one derived from the input) and checks each result; then the same
/// for the flood built from `data`.
pub fn check(data: &[u8]) {
    check_answer(&String::from_utf8_lossy(data), data);
    check_flood(data);
}

/// The flood built from `data`, read for the whole file and for a range derived from it:
/// every entry kept or counted, what is kept inside the range and no bigger than the
/// answer.
fn check_flood(data: &[u8]) {
    let (answer, entries) = flood(data);
    let all = extract(&answer, 1, u32::MAX).expect("a flood is a findings list");
    assert_eq!(
        all.findings.len() + all.dropped_invalid,
        entries,
        "entries of the flood neither kept nor counted"
    );
    assert_eq!(all.dropped_out_of_range, 0);
    kept_inside(&all, 1, u32::MAX);
    no_bigger_than_the_answer(&all, &answer);
    check_cap(&answer, 1, u32::MAX, &all);
    let h = super::hash(data);
    let (s, e) = (1 + (h % 8) as u32, 8 + ((h >> 8) % 4096) as u32);
    let got = extract(&answer, s, e).expect("a flood is a findings list");
    kept_inside(&got, s, e);
    assert_eq!(
        got.findings.len() + got.dropped_out_of_range,
        all.findings.len(),
        "range {s}-{e} lost entries of the flood"
    );
}

/// Line values as they arrive: the JSON text of `line` / `endLine`.
const ODD_LINES: &[&str] = &[
    "1",
    "0",
    "-1",
    "7",
    "12.5",
    "3.0",
    "1e3",
    "4294967295",
    "4294967296",
    "18446744073709551616",
    "\" 9 \"",
    "\"0x10\"",
    "\"\"",
    "null",
    "true",
    "[5]",
    "{\"n\": 5}",
    "99999999999999999999999999999999",
];

/// An answer with many entries derived from `data` (each byte picks an entry's line,
/// end line and validity), and how many entries it has.
fn flood(data: &[u8]) -> (String, usize) {
    let entries = (data.len() / 4).min(FLOOD_MAX);
    let mut out = String::with_capacity(entries * 80 + 32);
    out.push_str("Review:\n```json\n{\"findings\": [");
    for i in 0..entries {
        let b = data[i % data.len()] as usize ^ (i / data.len());
        let line = ODD_LINES[b % ODD_LINES.len()];
        let end = ODD_LINES[(b / ODD_LINES.len() + i) % ODD_LINES.len()];
        let severity = ["low", "high", "urgent", "critical", ""][b % 5];
        if i > 0 {
            out.push(',');
        }
        out.push_str(&format!(
            "{{\"severity\":\"{severity}\",\"title\":\"t{i}\",\"line\":{line},\"endLine\":{end}}}"
        ));
    }
    out.push_str("]}\n```\n");
    (out, entries)
}

/// Checks one answer for every range.
fn check_answer(answer: &str, data: &[u8]) {
    let (_, work) = extract_counted(answer, 1, u32::MAX, DEFAULT_MAX_FINDINGS_PER_ANSWER);
    assert!(
        work <= answer.len(),
        "{work} steps over a {}-byte answer",
        answer.len()
    );
    let h = super::hash(data);
    let start = 1 + (h % 64) as u32;
    let derived = (start, start + ((h >> 8) % 64) as u32);
    let ranges = [(1, 1), (10, 20), (u32::MAX, u32::MAX), (20, 10), derived];
    let all = match extract(answer, 1, u32::MAX) {
        Ok(all) => all,
        Err(e) => {
            let reason = e.to_string();
            assert!(!reason.is_empty(), "empty bad_response reason");
            for (s, e) in ranges {
                assert!(extract(answer, s, e).is_err(), "range {s}-{e} found a list");
            }
            return;
        }
    };
    no_bigger_than_the_answer(&all, answer);
    assert_eq!(
        all.dropped_out_of_range,
        0,
        "nothing lies outside 1-{}",
        u32::MAX
    );
    kept_inside(&all, 1, u32::MAX);
    for (s, e) in ranges {
        let got = extract(answer, s, e).expect("the same answer read for another range");
        kept_inside(&got, s, e);
        check_cap(answer, s, e, &got);
        assert_eq!(got.dropped_invalid, all.dropped_invalid, "range {s}-{e}");
        assert_eq!(got.incomplete, all.incomplete, "range {s}-{e}");
        assert!(got.dropped.len() <= MAX_NAMED_DROPS);
        assert_eq!(
            got.dropped.len(),
            got.dropped_count().min(MAX_NAMED_DROPS),
            "range {s}-{e}: a dropped entry went unnamed"
        );
        let inside: Vec<(&str, u32)> = all
            .findings
            .iter()
            .filter(|f| (s..=e).contains(&f.line))
            .map(|f| (f.title.as_str(), f.line))
            .collect();
        let kept: Vec<(&str, u32)> = got
            .findings
            .iter()
            .map(|f| (f.title.as_str(), f.line))
            .collect();
        assert_eq!(kept, inside, "range {s}-{e} keeps other findings");
        assert_eq!(
            got.findings.len() + got.dropped_out_of_range,
            all.findings.len(),
            "range {s}-{e} lost entries"
        );
    }
}

/// Each kept finding's text comes from its own entry of the answer, so together they
/// are no longer than the answer, and there are no more entries than `{}` pairs fit.
fn no_bigger_than_the_answer(x: &Extracted, answer: &str) {
    let kept: usize = x
        .findings
        .iter()
        .map(|f| {
            f.title.len()
                + f.description.len()
                + f.suggestion.as_ref().map_or(0, String::len)
                + f.replacement.as_ref().map_or(0, String::len)
                + f.skill.as_ref().map_or(0, String::len)
        })
        .sum();
    assert!(
        kept <= answer.len(),
        "{kept} bytes of findings from a {}-byte answer",
        answer.len()
    );
    let entries = x.findings.len() + x.dropped_invalid + x.dropped_out_of_range;
    assert!(
        entries <= answer.len() / 2,
        "{entries} entries in a {}-byte answer",
        answer.len()
    );
}

/// Every kept finding starts and ends inside `start..=end`, in order, with a title.
fn kept_inside(x: &Extracted, start: u32, end: u32) {
    for f in &x.findings {
        assert!(
            start <= f.line && f.line <= f.end_line && f.end_line <= end,
            "finding at {}-{} kept for chunk {start}-{end}",
            f.line,
            f.end_line
        );
        assert!(
            !f.title.is_empty() && f.title == f.title.trim(),
            "title {:?}",
            f.title
        );
    }
}
