//! Issue 27, point 4: work after the last answer does not grow with the number of
//! routes. Redaction reads each distinct key once and finds every key's pieces in one
//! pass per string, so 5,000 routes that share one key cost what one route does.

use crate::support::fake_provider::{Behavior, FakeProvider, findings_answer};
use crate::support::review::*;
use serde_json::Value;
use std::io::Read;
use std::time::{Duration, Instant};

/// Runs the review of 3 files over 5,000 routes on `fake`, with the routes' shared key
/// set or not; the report and how long after the fake's last answer the process exited.
fn review_after_last_answer(fake: &FakeProvider, with_key: bool) -> (Value, Duration) {
    let review = Review::new(3);
    let names: Vec<String> = (0..5000).map(|i| format!("r{i}")).collect();
    let routes: Vec<RouteCfg> = names
        .iter()
        .map(|n| route_cfg(n, "openai", fake.base_url(), false))
        .collect();
    review.config(&[("reviewBudget", "90s"), ("hunkBudget", "60s")], &routes);
    let mut cmd = review.command(&["--json", "-q"]);
    if !with_key {
        // A loopback route needs no key: nothing to redact.
        cmd.env_remove(KEY_VAR);
    }
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        stdout.read_to_string(&mut s).unwrap();
        s
    });
    let give_up = Instant::now() + Duration::from_secs(240);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > give_up {
            let _ = child.kill();
            panic!("still running 240 s after it started");
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let exited = Instant::now();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let v: Value =
        serde_json::from_str(&reader.join().unwrap()).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(v["summary"]["reviewed"], 3, "{stderr}");
    let last = fake
        .requests()
        .iter()
        .filter_map(|r| r.finished_at)
        .max()
        .expect("answers");
    (v, exited.saturating_duration_since(last))
}

/// The work after the last answer is the report's (a 5,000-route table is a 4.5 MB
/// document: the run without a key measures building and rendering it); redaction, one
/// pass over it for the one key, costs less than that work again. Before, each route
/// redacted the whole report again: 500 routes took 11.7 s (release build), 5,000 did not
/// finish. The release figure (exit within 1 s of the last answer) is in the commit note,
/// measured with farm-bench; this test runs the debug binary, 10-30x slower.
#[test]
fn five_thousand_routes_sharing_one_key_redact_once_after_the_last_answer() {
    let _alone = crate::support::cpu_hungry();
    let fake = FakeProvider::start();
    // The key echoed in every finding: redaction has work to do in each of them.
    let answer = findings_answer(serde_json::json!([{
        "severity": "low", "confidence": "high", "line": 11,
        "title": format!("key {KEY}"), "description": format!("the key is {KEY}")
    }]));
    fake.default_behavior(Behavior::Answer(answer));
    let (plain, rendering) = review_after_last_answer(&fake, false);
    assert!(plain.to_string().contains(KEY), "no key, nothing redacted");
    let (v, after) = review_after_last_answer(&fake, true);
    let text = v.to_string();
    assert!(
        !text.contains("sk-hostile-canary"),
        "the key left in the report"
    );
    assert!(text.contains("[redacted]"));
    eprintln!(
        "5000 routes, one key: exited {after:?} after the last answer ({rendering:?} without the key)"
    );
    assert!(
        after <= rendering * 2 + Duration::from_secs(1),
        "exited {after:?} after the last answer, {rendering:?} without a key"
    );
}
