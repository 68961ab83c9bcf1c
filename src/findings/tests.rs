use super::*;

#[test]
fn tolerates_fences_and_prose() {
    let a = "Here is my review:\n```json\n{\"findings\": [{\"severity\": \"high\", \"confidence\": \"high\", \"title\": \"SQL injection\", \"description\": \"d\", \"line\": 12}]}\n```\nThanks!";
    let e = extract(a, 10, 20).unwrap();
    assert_eq!(e.findings.len(), 1);
    assert_eq!(e.findings[0].end_line, 12);
    assert_eq!(e.findings[0].replacement, None);
    assert_eq!(e.incomplete, None);
}

#[test]
fn a_replacement_keeps_its_indentation() {
    let a = r#"{"findings": [{"severity": "low", "title": "t", "line": 3, "replacement": "    let x = y?;\n"}]}"#;
    let e = extract(a, 1, 10).unwrap();
    assert_eq!(
        e.findings[0].replacement.as_deref(),
        Some("    let x = y?;\n")
    );
}

#[test]
fn drops_out_of_range_and_invalid_entries_counts_and_names_them() {
    let a = r#"{"findings": [
        {"severity": "low", "confidence": "low", "title": "ok", "line": 5, "endLine": 99},
        {"severity": "low", "title": "outside", "line": 50},
        {"severity": "urgent", "title": "bad severity", "line": 5},
        {"severity": "low", "line": 5}
    ]}"#;
    let e = extract(a, 1, 10).unwrap();
    assert_eq!(e.findings.len(), 1);
    assert_eq!(e.findings[0].end_line, 10);
    assert_eq!((e.dropped_out_of_range, e.dropped_invalid), (1, 2));
    let named: Vec<(usize, Option<&str>)> = e
        .dropped
        .iter()
        .map(|d| (d.entry, d.title.as_deref()))
        .collect();
    assert_eq!(
        named,
        [(2, Some("outside")), (3, Some("bad severity")), (4, None)]
    );
    assert_eq!(
        e.dropped[0].reason,
        "line 50 is outside the lines under review (1-10)"
    );
    assert!(
        e.dropped[1].reason.contains("\"urgent\""),
        "{:?}",
        e.dropped[1]
    );
    assert_eq!(e.dropped[2].reason, "no title");
}

fn flood(n: usize) -> String {
    let one = r#"{"severity": "low", "title": "t", "line": 5}"#;
    format!("{{\"findings\": [{}]}}", vec![one; n].join(","))
}

#[test]
fn a_flood_keeps_the_cap_and_counts_the_rest() {
    let e = extract(&flood(100_000), 1, 10).unwrap();
    assert_eq!(e.findings.len(), DEFAULT_MAX_FINDINGS_PER_ANSWER);
    assert_eq!(e.over_cap, 100_000 - DEFAULT_MAX_FINDINGS_PER_ANSWER);
    let e = extract_capped(&flood(7), 1, 10, 3).unwrap();
    assert_eq!((e.findings.len(), e.over_cap), (3, 4));
    let e = extract_capped(&flood(3), 1, 10, 3).unwrap();
    assert_eq!((e.findings.len(), e.over_cap), (3, 0));
}

#[test]
fn a_flood_of_invalid_entries_names_twenty_and_counts_all() {
    let one = r#"{"severity": "urgent", "title": "t", "line": 5}"#;
    let a = format!("{{\"findings\": [{}]}}", vec![one; 5000].join(","));
    let e = extract(&a, 1, 10).unwrap();
    assert_eq!(e.dropped_invalid, 5000);
    assert_eq!(e.dropped.len(), MAX_NAMED_DROPS);
}

#[test]
fn dropped_entries_do_not_fill_the_cap() {
    let a = r#"{"findings": [
        {"severity": "low", "title": "outside", "line": 50},
        {"severity": "urgent", "title": "bad", "line": 5},
        {"severity": "low", "title": "a", "line": 5},
        {"severity": "low", "title": "b", "line": 6},
        {"severity": "low", "title": "c", "line": 7}
    ], "note": {"findings": 1}}"#;
    let e = extract_capped(a, 1, 10, 2).unwrap();
    let titles: Vec<_> = e.findings.iter().map(|f| f.title.as_str()).collect();
    assert_eq!(titles, ["a", "b"]);
    assert_eq!(
        (e.dropped_out_of_range, e.dropped_invalid, e.over_cap),
        (1, 1, 1)
    );
}

const REAL: &str = r#"{"severity": "high", "title": "kept", "line": 6}"#;

#[test]
fn the_last_object_with_a_list_is_the_answers_own_not_an_example_before_it() {
    let a = format!(
        "I will answer in the format {{\"findings\": []}} as asked.\n```json\n{{\"findings\": [{REAL}]}}\n```"
    );
    let e = extract(&a, 1, 10).unwrap();
    assert_eq!(e.findings.len(), 1, "{e:?}");
    assert_eq!(e.findings[0].title, "kept");
    // An object without a list after it (prose braces, `{}`) is not an answer.
    let a = format!("{{\"findings\": [{REAL}]}} (see {{x}} and {{}} and {{\"a\": 1}})");
    assert_eq!(extract(&a, 1, 10).unwrap().findings.len(), 1);
}

#[test]
fn a_broken_object_keeps_what_came_before_the_break_and_a_later_one_wins() {
    let a = format!(
        r#"{{"findings": [{{"severity": "low", "title": "first", "line": 5}},
        then {{"findings": null}} and {{"x": 1, "findings": [{REAL}]}}"#
    );
    let e = extract(&a, 1, 10).unwrap();
    assert_eq!(e.findings.len(), 1);
    assert_eq!(e.findings[0].title, "kept");
    assert_eq!(e.incomplete, None);
    // Broken and last: kept up to the break, never clean.
    let a = r#"Format: {"findings": []}. Mine: {"findings": [{"severity": "low", "title": "a", "line": 5}, {"severity": "low", "title": "has "quotes" inside", "line": 6}]}"#;
    let e = extract(a, 1, 10).unwrap();
    assert_eq!(e.findings.len(), 1);
    let why = e.incomplete.as_deref().unwrap();
    assert!(why.contains("not JSON at byte"), "{why}");
    assert_eq!(e.dropped_invalid, 1, "the broken entry is counted");
}

/// The cut shapes of issue 27: whatever came before, an answer that ends inside its
/// object is incomplete, and the entries complete before the cut are kept.
#[test]
fn cut_shapes_keep_the_complete_findings_and_are_incomplete() {
    let cuts = [
        // A format example in prose first, then the answer, cut mid-finding.
        format!(r#"Format: {{"findings": []}}. {{"findings": [{REAL}, {{"severity": "hi"#),
        // A field nested inside a finding holds an empty list.
        r#"{"findings": [{"severity": "high", "title": "kept", "line": 6, "related": {"findings": []}}, {"severity"#
            .to_string(),
        // Cut mid-finding.
        format!(r#"{{"findings": [{REAL}, {{"severity": "low", "title": "lo"#),
        // Cut before the closing brace.
        format!(r#"{{"findings": [{REAL}]"#),
        format!("```json\n{{\"findings\": [{REAL},"),
    ];
    for a in &cuts {
        let e = extract(a, 1, 10).unwrap_or_else(|e| panic!("{a}: {e}"));
        assert_eq!(e.findings.len(), 1, "{a}");
        assert_eq!(e.findings[0].title, "kept", "{a}");
        assert_eq!(
            e.incomplete.as_deref(),
            Some("the answer ends inside its findings object"),
            "{a}"
        );
    }
    let e = extract(&cuts[2], 1, 10).unwrap();
    assert_eq!(e.dropped_invalid, 1, "the cut entry is counted");
    assert_eq!(e.dropped[0].reason, "cut off where the answer ends");
    // Cut before its list: not a review at all.
    let a = r#"Format {"findings": []}. {"summary": "I looked at"#;
    assert!(
        extract(a, 1, 10)
            .unwrap_err()
            .to_string()
            .contains("before a `findings` list")
    );
}

#[test]
fn trailing_commas_are_tolerated() {
    let a = r#"{"findings": [{"severity": "low", "title": "a", "line": 5, "endLine": 6,},],}"#;
    let e = extract(a, 1, 10).unwrap();
    assert_eq!(e.findings.len(), 1);
    assert_eq!(e.incomplete, None);
}

#[test]
fn escapes_and_unicode_are_decoded() {
    let a = r#"{"find\u0069ngs": [{"severity": "low", "title": "caf\u00e9 \ud83d\ude00 \"q\" \\ \n", "line": 5}]}"#;
    let e = extract(a, 1, 10).unwrap();
    assert_eq!(e.findings[0].title, "café 😀 \"q\" \\");
}

#[test]
fn no_findings_object_is_an_error() {
    assert!(extract("Looks good to me!", 1, 10).is_err());
    assert!(extract("{\"result\": []}", 1, 10).is_err());
    assert!(extract("{\"findings\": null}", 1, 10).is_err());
    assert_eq!(
        extract("{\"findings\": []}", 1, 10).unwrap().findings.len(),
        0
    );
}

fn nested(depth: usize) -> String {
    format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth))
}

/// The adversarial shapes of issue 27 (100,000 levels of nesting at top level, in the
/// list, in a description; runs of `{`; prose of braces): each ends without reading any
/// byte twice, and nesting past the cap is a `bad_response`.
fn adversarial() -> Vec<(&'static str, String)> {
    let deep = nested(100_000);
    vec![
        ("deep at top level", deep.clone()),
        ("deep in the list", format!("{{\"findings\": [{deep}]}}")),
        (
            "deep in a description",
            format!(
                "{{\"findings\": [{{\"severity\": \"high\", \"title\": \"t\", \"line\": 3, \"description\": {deep}}}]}}"
            ),
        ),
        (
            "deep lists",
            format!("{{\"findings\": {}", "[".repeat(100_000)),
        ),
        ("a run of `{`", "{".repeat(200_000)),
        ("keys without values", "{\"a\" ".repeat(50_000)),
        ("open strings", "{\"".repeat(100_000)),
        ("prose braces", "{x} {\"findings\" {".repeat(20_000)),
    ]
}

#[test]
fn the_pass_steps_over_each_byte_at_most_once() {
    for (label, a) in adversarial() {
        let (got, work) = extract_counted(&a, 1, 10, DEFAULT_MAX_FINDINGS_PER_ANSWER);
        assert!(
            work <= a.len(),
            "{label}: {work} steps over {} bytes",
            a.len()
        );
        if label.starts_with("deep") {
            let why = got.unwrap_err().to_string();
            assert!(why.contains("deeper than 64 levels"), "{label}: {why}");
        } else {
            assert!(got.is_err(), "{label}");
        }
    }
    let (got, work) = extract_counted(&flood(20_000), 1, 10, 100);
    assert_eq!(got.unwrap().findings.len(), 100);
    assert!(work <= flood(20_000).len());
}

#[test]
fn nesting_at_the_cap_is_read_and_past_it_is_not() {
    // The top-level object is level 1; the finding's value nests the rest.
    let at_cap = |levels: usize| {
        let inner = format!("{}1{}", "[".repeat(levels), "]".repeat(levels));
        format!(
            "{{\"findings\": [{{\"severity\": \"low\", \"title\": \"t\", \"line\": 3, \"x\": {inner}}}]}}"
        )
    };
    assert_eq!(extract(&at_cap(61), 1, 10).unwrap().findings.len(), 1);
    assert!(
        extract(&at_cap(62), 1, 10)
            .unwrap_err()
            .to_string()
            .contains("deeper")
    );
}

fn thread_cpu() -> std::time::Duration {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we own.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    std::time::Duration::from_secs(ru.ru_utime.tv_sec as u64 + ru.ru_stime.tv_sec as u64)
        + std::time::Duration::from_micros(ru.ru_utime.tv_usec as u64 + ru.ru_stime.tv_usec as u64)
}

/// Issue 27's figure, in CPU time (this thread's, not the wall clock): each 100,000-deep
/// answer is refused in well under 0.1 s (the quadratic extractor took minutes).
#[test]
fn a_100k_deep_answer_costs_under_a_tenth_of_a_second_of_cpu() {
    for (label, a) in adversarial() {
        let before = thread_cpu();
        let got = extract(&a, 1, 10);
        let cpu = thread_cpu() - before;
        assert!(got.is_err(), "{label}");
        assert!(
            cpu < std::time::Duration::from_millis(100),
            "{label}: {cpu:?} of CPU"
        );
    }
}
