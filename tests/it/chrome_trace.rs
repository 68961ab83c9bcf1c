//! `--trace FILE --trace-format chrome`: a review with a failover as a Chrome Trace Event
//! timeline: one slice per attempt on its route's slot track, inside the review's span,
//! with the failovers and budgets visible.

use crate::review_e2e::Session;
use crate::support::fake_provider::{Behavior, finding, findings_answer};
use serde_json::{Value, json};
use std::collections::BTreeMap;

fn events<'a>(trace: &'a Value, ph: &str) -> Vec<&'a Value> {
    trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == ph)
        .collect()
}

#[test]
fn a_failover_shows_one_slice_per_attempt_on_its_routes_track_inside_the_review() {
    let s = Session::new(3);
    s.fake.script("primary", vec![Behavior::status(503)]);
    s.fake.script(
        "fallback",
        vec![Behavior::Answer(findings_answer(json!([finding(
            11, "low", "Nit"
        )])))],
    );
    let dir = tempfile::tempdir().unwrap();
    let trace_path = dir.path().join("trace.json");
    let report_path = dir.path().join("report.json");
    let (code, _, err) = s.review(&[
        "--skill",
        "code-review",
        "--trace",
        trace_path.to_str().unwrap(),
        "--trace-format",
        "chrome",
        "-o",
        &format!("json={}", report_path.display()),
    ]);
    assert_eq!(code, 0, "{err}");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    let trace: Value =
        serde_json::from_str(&std::fs::read_to_string(&trace_path).unwrap()).unwrap();

    // Tracks: a process per route, a thread per slot.
    let meta = events(&trace, "M");
    let route_pid: BTreeMap<String, u64> = meta
        .iter()
        .filter(|m| m["name"] == "process_name")
        .filter_map(|m| {
            let name = m["args"]["name"].as_str()?.strip_prefix("route ")?;
            Some((name.to_string(), m["pid"].as_u64()?))
        })
        .collect();
    assert_eq!(route_pid.len(), 2, "{route_pid:?}");
    for (route, pid) in &route_pid {
        let slots = meta
            .iter()
            .filter(|m| m["name"] == "thread_name" && m["pid"] == *pid)
            .count();
        assert_eq!(slots, 1, "{route} has maxConcurrency 1: one slot track");
    }

    let slices = events(&trace, "X");
    let review = slices
        .iter()
        .find(|e| e["cat"] == "review")
        .expect("review span");
    let (r0, r1) = (
        review["ts"].as_u64().unwrap(),
        review["ts"].as_u64().unwrap() + review["dur"].as_u64().unwrap(),
    );
    let attempts: Vec<&&Value> = slices.iter().filter(|e| e["cat"] == "attempt").collect();
    let in_report: Vec<(usize, &Value)> = report["units"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .flat_map(|(i, u)| {
            u["attempts"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |a| (i, a))
        })
        .collect();
    assert_eq!(attempts.len(), in_report.len(), "one slice per attempt");
    assert!(
        report["counters"]["failovers"].as_u64().unwrap() >= 1,
        "{report}"
    );
    for (unit, a) in &in_report {
        let slice = attempts
            .iter()
            .find(|s| s["args"]["unit"] == *unit && s["args"]["attempt"] == a["number"])
            .unwrap_or_else(|| panic!("no slice for unit {unit} attempt {}", a["number"]));
        let route = a["route"].as_str().unwrap();
        assert_eq!(slice["pid"], route_pid[route], "on {route}'s track");
        assert_eq!(slice["tid"], 1);
        let outcome = a["outcome"].as_str().unwrap();
        assert!(
            slice["name"]
                .as_str()
                .unwrap()
                .ends_with(&format!("· {outcome}")),
            "{slice}"
        );
        assert!(
            slice["name"]
                .as_str()
                .unwrap()
                .contains("code-review src/f"),
            "{slice}"
        );
        let (s0, s1) = (
            slice["ts"].as_u64().unwrap(),
            slice["ts"].as_u64().unwrap() + slice["dur"].as_u64().unwrap(),
        );
        assert!(
            r0 <= s0 && s1 <= r1,
            "attempt [{s0}, {s1}] outside the review [{r0}, {r1}]"
        );
    }
    // Failovers are instant events; the budgets are slices.
    let instants = events(&trace, "i");
    assert!(
        instants
            .iter()
            .any(|e| e["name"] == "failover primary → fallback"),
        "{instants:?}"
    );
    assert!(slices.iter().any(|e| e["cat"] == "budget"
        && e["name"].as_str().unwrap().starts_with("review budget")
        && e["dur"] == json!(5_000_000)));
    let hunks = slices
        .iter()
        .filter(|e| e["name"].as_str().unwrap().starts_with("hunk budget"))
        .count();
    assert_eq!(hunks, 3, "one hunk budget per started unit");
}

/// Section 13 on the timelines: a review against a provider that serves 2 at once (a
/// `limited` sim route, cap auto) shows the route's limit as a counter track in the Chrome
/// trace, and each limit change and answer of back-pressure as a JSONL trace event.
#[test]
fn the_limit_is_a_counter_track_and_its_changes_are_trace_events() {
    let repo = crate::support::repo_with_grown_files(24, "t", 30);
    repo.config(
        "version = 1\n[execution]\nreviewBudget = \"60s\"\n[[skills]]\nname = \"code-review\"\n[[routes]]\nname = \"primary\"\nprovider = \"sim\"\nprofile = \"limited\"\ncapacity = 2\ntimeScale = 60\nmaxConcurrency = \"auto\"\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let chrome = dir.path().join("trace.json");
    let jsonl = dir.path().join("trace.jsonl");
    let report = dir.path().join("report.json");
    for (path, format) in [(&chrome, "chrome"), (&jsonl, "jsonl")] {
        let out = repo
            .warden(&[
                "review",
                "-q",
                "--trace",
                path.to_str().unwrap(),
                "--trace-format",
                format,
                "-o",
                &format!("json={}", report.display()),
            ])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(&chrome).unwrap()).unwrap();
    let counters = events(&trace, "C");
    let limits: Vec<u64> = counters
        .iter()
        .filter(|c| c["name"] == "limit")
        .map(|c| c["args"]["limit"].as_u64().unwrap())
        .collect();
    assert!(
        limits.len() >= 2,
        "a first sample and at least one change: {counters:?}"
    );
    assert_eq!(limits[0], 4, "the engine starts at 4 under a ceiling of 16");
    assert!(
        counters
            .iter()
            .all(|c| c["args"]["ceiling"] == 16 && c["pid"] == counters[0]["pid"]),
        "{counters:?}"
    );
    assert!(limits.iter().all(|l| (1..=16).contains(l)), "{limits:?}");
    let refused = events(&trace, "i")
        .into_iter()
        .filter(|e| {
            e["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("back-pressure"))
        })
        .count();
    assert!(refused >= 1, "the provider refused some: an instant each");

    let lines: Vec<Value> = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let named = |n: &str| lines.iter().filter(|l| l["name"] == n).collect::<Vec<_>>();
    let changes = named("warden.limit.changed");
    assert!(!changes.is_empty(), "no limit change in the trace");
    assert!(
        changes
            .iter()
            .all(|c| c["fields"]["route"] == "primary" && c["fields"]["ceiling"] == 16),
        "{changes:?}"
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(
        named("warden.backpressure").len() as u64,
        report["routes"]["primary"]["backpressure"]["answers"]
            .as_u64()
            .unwrap(),
        "one trace event per answer the report counts"
    );
}
