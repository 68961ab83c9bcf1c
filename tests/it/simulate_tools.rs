//! `warden simulate` with skills that read the repository (docs/design.md §14, the depth rule
//! of issue 29): the headline scenario (200 units, a slow-tail primary and a healthy
//! fallback, caps 4 + 4, budgets 15m/5m/2m played 60x faster, spillover) whose built-in
//! skills loop with up to 4 turns (the sim's agent reads, greps, lists, then submits)
//! must review at least 95 % of the units the same plan reviews single-shot; with a
//! healthy provider and budget to spare every unit gets its turns. The simulator runs
//! on a paused clock with fixed seeds, so the figures are the same on every machine.

use crate::support::*;
use serde_json::Value;

/// Two sim routes, played 60x faster (15 s stand for 15 minutes), with these clocks
/// (review, hunk, request, first token); `tools`: the `[execution] tools` line (empty:
/// the skills decide).
fn config(
    dir: &std::path::Path,
    primary: &str,
    [budget, hunk, request, first_token]: [&str; 4],
    tools: &str,
) -> std::path::PathBuf {
    let path = dir.join(format!("{primary}-{budget}-{}.toml", tools.len()));
    std::fs::write(
        &path,
        Toml::new()
            .exec(&[])
            .raw(&format!("{tools}\n"))
            .keys(&[
                ("routing", "spillover"),
                ("reviewBudget", budget),
                ("hunkBudget", hunk),
                ("requestTimeout", request),
                ("connectTimeout", "1s"),
                ("firstTokenTimeout", first_token),
                ("idleTimeout", "500ms"),
            ])
            .section(
                "execution.breaker",
                &[("window", "2s"), ("openFor", "500ms")],
            )
            .route(
                "primary",
                "sim",
                &[
                    ("profile", primary),
                    ("timeScale", "60"),
                    ("seed", "1"),
                    ("maxConcurrency", "4"),
                ],
            )
            .route(
                "fallback",
                "sim",
                &[
                    ("profile", "healthy"),
                    ("timeScale", "60"),
                    ("seed", "1001"),
                    ("maxConcurrency", "4"),
                ],
            )
            .build(),
    )
    .unwrap();
    path
}

/// The spillover variant of `warden simulate --json --runs RUNS`.
fn spillover(repo: &Repo, config: &std::path::Path, runs: &str) -> Value {
    let out = repo
        .warden(&["simulate", "--json", "--runs", runs, "-c"])
        .arg(config)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let p: Value = serde_json::from_slice(&out.stdout).unwrap();
    p["variants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["routing"] == "spillover")
        .cloned()
        .unwrap()
}

/// The headline's clocks (at 60x): 15 minutes for the review, 5 for a unit, 2 for a
/// request (1.5 to its first token).
const HEADLINE: [&str; 4] = ["15s", "5s", "2s", "1500ms"];

fn figure(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("no {key}: {v}"))
}

#[test]
fn four_turn_loops_keep_95_percent_of_single_shot_coverage_on_the_headline_scenario() {
    // 100 changed files x the two built-in skills (Read Grep Glob, 4 turns) = 200 units.
    let repo = repo_with_grown_files(100, "m", 40);
    let dir = tempfile::tempdir().unwrap();
    let single = spillover(
        &repo,
        &config(dir.path(), "slow-tail", HEADLINE, "tools = false"),
        "3",
    );
    let looped = spillover(&repo, &config(dir.path(), "slow-tail", HEADLINE, ""), "3");
    let (s, l) = (
        figure(&single, "reviewedMedian"),
        figure(&looped, "reviewedMedian"),
    );
    eprintln!("single-shot {single}\nloops {looped}");
    assert!(
        s >= 80.0,
        "the headline scenario reviews about half: {single}"
    );
    assert!(
        l >= 0.95 * s,
        "loops reviewed {l} of 200, single-shot {s}: under 95 %\n{looped}"
    );
    assert!(single.get("toolCallsMedian").is_none(), "{single}");
    assert!(figure(&looped, "shedForBudgetMedian") > 0.0, "{looped}");
}

#[test]
fn a_healthy_provider_with_budget_to_spare_gives_every_unit_its_turns() {
    // 30 files x 2 skills = 60 units, both routes healthy, budgets of 60 and 20 minutes
    // and a 4-minute request deadline (twice the profile's p95): four turns fit a unit's
    // budget, and the review's covers every unit's.
    let repo = repo_with_grown_files(30, "h", 40);
    let dir = tempfile::tempdir().unwrap();
    let clocks = ["60s", "20s", "4s", "3s"];
    let v = spillover(&repo, &config(dir.path(), "healthy", clocks, ""), "3");
    eprintln!("{v}");
    assert_eq!(figure(&v, "reviewedMedian"), 60.0, "{v}");
    assert_eq!(figure(&v, "shedForBudgetMedian"), 0.0, "{v}");
    // Each unit read its file, grepped a symbol and listed its folder, then submitted.
    assert_eq!(figure(&v, "toolCallsMedian"), 180.0, "{v}");
    // Four turns each, and the few a timeout made the engine retry (a turn, not the unit).
    let attempts = figure(&v, "attemptsMedian");
    assert!((240.0..=252.0).contains(&attempts), "{v}");
}
