//! A signal acts within 1 s in every phase, with the report written from what is known
//! (docs/design.md §14; issue 27 point 3): while a large change is prepared (CPU-bound, before
//! any request), while units wait on a provider that hangs, and while the report is written
//! to a stdout nobody reads (`bounds.rs`). The bound is the budget the contract names:
//! 1 s, plus the same scheduling slack the fault matrix allows a clock.

use crate::support::fake_provider::findings_answer;
use crate::support::fake_provider::{Behavior, FakeProvider};
use crate::support::review::*;
use crate::support::timing_sensitive;
use serde_json::{Value, json};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// What the contract allows a signal, and the slack of a loaded machine on top.
const WITHIN: Duration = Duration::from_millis(1000 + 250);

/// Sends `sig` and waits for the exit; returns the status and how long it took.
fn signal_and_wait(child: &mut Child, sig: i32) -> (std::process::ExitStatus, Duration) {
    let sent = Instant::now();
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as i32, sig) };
    let give_up = sent + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status, sent.elapsed());
        }
        if Instant::now() > give_up {
            let _ = child.kill();
            panic!("still running 20 s after the signal");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A patch of `files` files, one small hunk each: preparing it is seconds of CPU in a
/// debug build, with nothing sent.
fn large_patch(files: usize) -> String {
    (0..files)
        .map(|f| {
            format!(
                "diff --git a/src/m{f}.py b/src/m{f}.py\n--- a/src/m{f}.py\n+++ b/src/m{f}.py\n@@ -1,3 +1,4 @@\n def f():\n-    return 1\n+    x = {f}\n+    return x\n pass\n"
            )
        })
        .collect()
}

#[test]
fn sigterm_while_a_large_change_is_prepared_exits_143_within_1s_having_sent_nothing() {
    let _timing = timing_sensitive();
    let fake = FakeProvider::start();
    let review = Review::new(1);
    review.config(&[], &[route_cfg("p", "openai", fake.base_url(), false)]);
    let patch = review.cfg.path().join("large.diff");
    std::fs::write(&patch, large_patch(60_000)).unwrap();
    let out_file = review.cfg.path().join("report.json");
    let mut child = review
        .command(&[
            "--diff",
            patch.to_str().unwrap(),
            "-o",
            &format!("json={}", out_file.display()),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Long enough to be inside the preparation, far from its end.
    std::thread::sleep(Duration::from_millis(400));
    assert!(
        child.try_wait().unwrap().is_none(),
        "it ended before the signal"
    );
    let (status, took) = signal_and_wait(&mut child, libc::SIGTERM);
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(143), "{stderr}");
    assert!(took <= WITHIN, "SIGTERM took {took:?}: {stderr}");
    assert!(fake.requests().is_empty(), "nothing may be sent");
    assert!(
        stderr.contains("nothing was reviewed"),
        "it says what was reviewed: {stderr}"
    );
    assert!(
        !out_file.exists(),
        "no report claims a review that never ran"
    );
    eprintln!("SIGTERM while preparing 60,000 files: exited after {took:?}");
}

#[test]
fn sigint_while_units_wait_on_a_hanging_provider_exits_130_within_1s_with_the_findings_so_far() {
    let _timing = timing_sensitive();
    let fake = FakeProvider::start();
    let found = Behavior::Answer(findings_answer(json!([{
        "severity": "medium", "title": "kept after SIGINT", "line": 11
    }])));
    fake.script("p", vec![found, Behavior::Hang, Behavior::Hang]);
    let review = Review::new(3);
    review.config(
        &[
            ("firstTokenTimeout", "60s"),
            ("requestTimeout", "60s"),
            ("hunkBudget", "60s"),
            ("reviewBudget", "60s"),
        ],
        &[route_cfg("p", "openai", fake.base_url(), false)],
    );
    let out_file = review.cfg.path().join("report.json");
    let mut child = review
        .command(&["-o", &format!("json={}", out_file.display())])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    while fake.requests().len() < 2 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        fake.requests().len(),
        2,
        "the second unit should be hanging"
    );
    let (status, took) = signal_and_wait(&mut child, libc::SIGINT);
    assert_eq!(status.code(), Some(130));
    assert!(took <= WITHIN, "SIGINT took {took:?}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    assert_eq!(v["interrupted"], true);
    assert_eq!(v["outcome"], "partial", "never clean: {v}");
    let titles: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["title"].as_str())
        .collect();
    assert_eq!(titles, ["kept after SIGINT"], "a finding received survives");
    let mut statuses: Vec<&str> = units(&v)
        .iter()
        .map(|u| u["status"].as_str().unwrap())
        .collect();
    statuses.sort();
    assert_eq!(statuses, ["cancelled", "reviewed", "skipped"]);
    eprintln!("SIGINT while a unit hangs: exited after {took:?}");
}
