//! `warden simulate`: the plan through the real engine on a paused clock, each route a
//! latency profile, both routing policies. Its prediction for a config of sim routes is
//! checked against what `warden review` then does with the same config.

use crate::support::*;
use serde_json::Value;

/// A repository with `files` changed files and, outside it, a config of two sim routes
/// played 60x faster with budgets scaled to match (15 s ≈ 15 minutes).
fn setup(files: usize, routing: &str, budget: &str) -> (Repo, tempfile::TempDir) {
    let repo = repo_with_grown_files(files, "s", 30);
    let cfg = tempfile::tempdir().unwrap();
    std::fs::write(
        cfg.path().join("warden.toml"),
        Toml::new()
            .exec(&[
                ("routing", routing),
                ("reviewBudget", budget),
                ("hunkBudget", "5s"),
                ("requestTimeout", "2s"),
                ("connectTimeout", "1s"),
                ("firstTokenTimeout", "1500ms"),
                ("idleTimeout", "500ms"),
            ])
            .section(
                "execution.breaker",
                &[("window", "2s"), ("openFor", "500ms")],
            )
            .raw("[[skills]]\nname = \"code-review\"\n")
            .route(
                "primary",
                "sim",
                &[
                    ("profile", "slow-tail"),
                    ("timeScale", "60"),
                    ("seed", "1"),
                    ("maxConcurrency", "3"),
                    ("inputPrice", "3.0"),
                    ("outputPrice", "15.0"),
                ],
            )
            .route(
                "fallback",
                "sim",
                &[
                    ("profile", "healthy"),
                    ("timeScale", "60"),
                    ("seed", "2"),
                    ("maxConcurrency", "3"),
                    ("inputPrice", "1.0"),
                    ("outputPrice", "5.0"),
                ],
            )
            .build(),
    )
    .unwrap();
    (repo, cfg)
}

fn simulate(repo: &Repo, cfg: &tempfile::TempDir, extra: &[&str]) -> Value {
    let config = cfg.path().join("warden.toml");
    let mut args = vec!["simulate", "--json", "-c", config.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = repo.warden(&args).output().unwrap();
    assert_exit(&out, 0);
    serde_json::from_slice(&out.stdout).unwrap()
}

fn variant<'a>(p: &'a Value, routing: &str) -> &'a Value {
    p["variants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["routing"] == routing)
        .unwrap()
}

#[test]
fn the_prediction_is_within_35_percent_of_the_review_that_follows() {
    let (repo, cfg) = setup(60, "spillover", "8s");
    let p = simulate(&repo, &cfg, &["--runs", "5"]);
    assert_eq!(p["units"], 60);
    let predicted = variant(&p, "spillover")["reviewedMedian"].as_f64().unwrap();
    let config = cfg.path().join("warden.toml");
    let out = repo
        .warden(&["review", "--json", "-q", "-c", config.to_str().unwrap()])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let reviewed = report["summary"]["reviewed"].as_f64().unwrap();
    assert!(
        reviewed > 0.0 && reviewed < 60.0,
        "the config leaves work undone: {reviewed}"
    );
    let off = (predicted - reviewed).abs() / reviewed;
    eprintln!("simulate predicted {predicted}, the review did {reviewed}");
    assert!(
        off <= 0.35,
        "simulate predicted {predicted} units, the review did {reviewed} ({:.0}% off)",
        off * 100.0
    );
    // The cost is in both, from the same prices.
    assert!(report["summary"]["costUsd"].as_f64().unwrap() > 0.0);
    assert!(variant(&p, "spillover")["costUsdMedian"].as_f64().unwrap() > 0.0);
}

#[test]
fn simulate_reports_both_policies_with_every_field() {
    let (repo, cfg) = setup(12, "ordered", "15s");
    let p = simulate(&repo, &cfg, &["--runs", "3"]);
    let variants = p["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 2);
    for (v, routing) in variants.iter().zip(["ordered", "spillover"]) {
        assert_eq!(v["routing"], routing);
        assert_eq!(v["runs"], 3);
        for key in [
            "reviewedMedian",
            "reviewedMin",
            "reviewedMax",
            "wallMsMedian",
            "attemptsMedian",
            "backpressureMedian",
            "costUsdMedian",
        ] {
            assert!(v[key].is_number(), "{key} in {v}");
        }
        assert!(v["reviewedMin"].as_u64() <= v["reviewedMax"].as_u64());
    }
    // The table for people names both policies.
    let config = cfg.path().join("warden.toml");
    let out = repo
        .warden(&["simulate", "--runs", "2", "-c", config.to_str().unwrap()])
        .output()
        .unwrap();
    let text = stdout_of(&out);
    assert!(
        text.contains("ordered") && text.contains("spillover"),
        "{text}"
    );
    assert!(text.starts_with("12 units, 2 runs per policy"), "{text}");
}

#[test]
fn profiles_come_from_flags_and_traces_and_mistakes_are_usage_errors() {
    let (repo, cfg) = setup(6, "ordered", "15s");
    let config = cfg.path().join("warden.toml");
    let cfg_arg = config.to_str().unwrap();
    // An outage on both routes: nothing is reviewed, whatever the policy.
    let p = simulate(
        &repo,
        &cfg,
        &[
            "--profile",
            "primary=outage",
            "--profile",
            "fallback=outage",
            "--runs",
            "1",
        ],
    );
    for v in p["variants"].as_array().unwrap() {
        assert_eq!(v["reviewedMax"], 0, "{v}");
    }
    for (args, expect) in [
        (
            vec!["--profile", "nope=healthy"],
            "no route is named `nope`",
        ),
        (
            vec!["--profile", "primary=speedy"],
            "--profile primary=speedy: unknown profile",
        ),
        (vec!["--profile", "primary"], "write ROUTE=PROFILE"),
        (vec!["--runs", "0"], "--runs"),
        (
            vec!["--from-trace", "missing.jsonl"],
            "--from-trace missing.jsonl: cannot read",
        ),
    ] {
        let mut full = vec!["simulate", "-c", cfg_arg];
        full.extend(args.iter().copied());
        let out = repo.warden(&full).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{full:?}");
        let err = stderr_of(&out);
        assert!(err.contains(expect), "{full:?}: {err}");
    }
    // A trace of a real review fits each route's profile.
    let trace = cfg.path().join("trace.jsonl");
    let out = repo
        .warden(&[
            "review",
            "-q",
            "--json",
            "-c",
            cfg_arg,
            "--trace",
            trace.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.code().is_some());
    let p = simulate(
        &repo,
        &cfg,
        &["--from-trace", trace.to_str().unwrap(), "--runs", "2"],
    );
    assert!(
        variant(&p, "ordered")["reviewedMax"].as_u64().unwrap() > 0,
        "{p}"
    );
}

/// A provider that serves 4 requests at once (429 with Retry-After beyond), 40 units.
fn limited_setup() -> (Repo, tempfile::TempDir) {
    let repo = repo_with_grown_files(40, "c", 30);
    let cfg = tempfile::tempdir().unwrap();
    std::fs::write(
        cfg.path().join("warden.toml"),
        Toml::new()
            .exec(&[("routing", "spillover"), ("reviewBudget", "60s")])
            .raw("[[skills]]\nname = \"code-review\"\n")
            .route(
                "primary",
                "sim",
                &[
                    ("profile", "limited"),
                    ("capacity", "4"),
                    ("timeScale", "1"),
                    ("maxConcurrency", "4"),
                ],
            )
            .build(),
    )
    .unwrap();
    (repo, cfg)
}

#[test]
fn caps_compare_one_route_s_ceilings_side_by_side() {
    let (repo, cfg) = limited_setup();
    let c = simulate(&repo, &cfg, &["--runs", "2", "--caps", "primary=2,4,auto"]);
    assert_eq!(
        (c["route"].as_str(), c["routing"].as_str()),
        (Some("primary"), Some("spillover"))
    );
    assert_eq!(
        (c["units"].as_u64(), c["runs"].as_u64()),
        (Some(40), Some(2))
    );
    let rows = c["caps"].as_array().unwrap();
    let caps: Vec<_> = rows
        .iter()
        .map(|r| (r["cap"].as_str().unwrap(), r["ceiling"].as_u64().unwrap()))
        .collect();
    assert_eq!(caps, [("2", 2), ("4", 4), ("auto", 16)]);
    let f = |r: &Value, k: &str| r[k].as_f64().unwrap();
    for r in rows {
        assert_eq!(f(r, "reviewedMedian"), 40.0, "{r}");
        assert!(f(r, "attemptsMedian") >= 40.0, "{r}");
    }
    // Within the provider's 4, nothing is refused; with half the permits it takes longer.
    assert_eq!(f(&rows[0], "backpressureMedian"), 0.0);
    assert_eq!(f(&rows[1], "backpressureMedian"), 0.0);
    assert!(
        f(&rows[0], "wallMsMedian") > 1.5 * f(&rows[1], "wallMsMedian"),
        "{rows:?}"
    );
    // auto: a ceiling of 16 over a provider that serves 4 (the bars of issue 21).
    assert!(
        f(&rows[2], "backpressureMedian") <= 0.1 * f(&rows[2], "attemptsMedian"),
        "{rows:?}"
    );
    assert!(
        f(&rows[2], "wallMsMedian") <= 1.25 * f(&rows[1], "wallMsMedian"),
        "{rows:?}"
    );

    let config = cfg.path().join("warden.toml");
    let out = repo
        .warden(&[
            "simulate",
            "-c",
            config.to_str().unwrap(),
            "--runs",
            "1",
            "--caps",
            "primary=4,auto",
        ])
        .output()
        .unwrap();
    let (text, _) = assert_success(&out);
    assert!(text.contains("route `primary` under each cap"), "{text}");
    assert!(
        text.contains("back-pressure") && text.contains("auto (16)"),
        "{text}"
    );
}

#[test]
fn bad_caps_are_usage_errors_that_name_the_flag() {
    let (repo, cfg) = limited_setup();
    let config = cfg.path().join("warden.toml");
    for (caps, says) in [
        (
            "nope=2,4",
            "--caps nope=…: no route is named `nope` (routes: primary)",
        ),
        ("primary=0", "is not a cap"),
        ("primary=fast", "is not a cap"),
        ("primary", "write ROUTE=CAPS"),
    ] {
        let out = repo
            .warden(&["simulate", "-c", config.to_str().unwrap(), "--caps", caps])
            .output()
            .unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{caps}: {err}");
        assert!(
            err.contains("--caps") && err.contains(says),
            "{caps}: {err}"
        );
        assert!(out.stdout.is_empty(), "{caps}");
    }
}
