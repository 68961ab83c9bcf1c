//! The findings extractor on any answer: no panic, every kept finding inside the chunk's
//! lines, and the same entries found whatever chunk the answer is read for (the range
//! only sorts entries into kept and out of range).

use crate::findings::{Extracted, extract};

/// Extracts findings from `data` for several chunk ranges (the widest, narrow ones, an
/// inverted one and one derived from the input) and checks each result.
pub fn check(data: &[u8]) {
    let answer = String::from_utf8_lossy(data);
    let h = super::hash(data);
    let start = 1 + (h % 64) as u32;
    let derived = (start, start + ((h >> 8) % 64) as u32);
    let ranges = [(1, 1), (10, 20), (u32::MAX, u32::MAX), (20, 10), derived];
    let all = match extract(&answer, 1, u32::MAX) {
        Ok(all) => all,
        Err(reason) => {
            assert!(!reason.is_empty(), "empty bad_response reason");
            for (s, e) in ranges {
                assert!(
                    extract(&answer, s, e).is_err(),
                    "range {s}-{e} found a list"
                );
            }
            return;
        }
    };
    assert_eq!(
        all.dropped_out_of_range,
        0,
        "nothing lies outside 1-{}",
        u32::MAX
    );
    kept_inside(&all, 1, u32::MAX);
    for (s, e) in ranges {
        let got = extract(&answer, s, e).expect("the same answer read for another range");
        kept_inside(&got, s, e);
        assert_eq!(got.dropped_invalid, all.dropped_invalid, "range {s}-{e}");
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
