//! Back-pressure shared through the fleet (docs/design.md section 13): two concurrent `warden
//! review` processes (the real release binary) against the fake provider on 127.0.0.1,
//! which serves 2 (or 4) requests at once, 200 ms answers, and answers 429 with
//! Retry-After: 1 beyond. One route, `maxConcurrency = 8` (or "auto"), UNITS units each.
//! Without `[fleet]`, and with `[fleet]` on a real `redis-server`; with
//! `WARDEN_BASELINE=/path/to/warden` also with `[fleet]` on that binary (an earlier
//! build, to compare its sharing). Two starts: both at once, and the second a second after
//! the first. Prints, per setup, the median (min–max) over RUNS runs of the fake's answers
//! of 429 and the wall time of the pair (first start to last exit), and the units reviewed.
//!   cargo bench --bench fleet_pace [-- RUNS [UNITS]]

#[path = "../tests/it/support/fake_provider.rs"]
mod fake_provider;
#[path = "support/processes.rs"]
mod processes;
#[path = "../tests/it/support/redis.rs"]
#[allow(dead_code)]
mod redis_server;

use fake_provider::{Behavior, FakeProvider, findings_answer};
use processes::{KEY_VAR, repo};
use redis_server::RedisServer;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

/// One route on the fake at `base` with this ceiling; `[fleet]` when given.
fn config(base: &str, ceiling: &str, fleet: Option<(&str, &str)>) -> String {
    let mut t = String::from(
        "version = 1\n[execution]\nreviewBudget = \"90s\"\nhunkBudget = \"30s\"\nrequestTimeout = \"5s\"\nmaxAttempts = 2\n",
    );
    if let Some((url, ns)) = fleet {
        t.push_str(&format!(
            "[fleet]\nredis = \"{url}\"\nnamespace = \"{ns}\"\n"
        ));
    }
    t.push_str(&format!(
        "[[routes]]\nname = \"primary\"\nprovider = \"openai\"\nmodel = \"primary\"\nbaseUrl = \"{base}\"\napiKeyEnv = \"{KEY_VAR}\"\nmaxConcurrency = {ceiling}\n"
    ));
    t
}

/// What one pair of reviews did.
struct Pair {
    refused: usize,
    wall: f64,
    reviewed: u64,
    units: u64,
}

/// One run: a fresh fake serving `capacity` at once, two reviews by `bin`.
fn pair(
    dir: &Path,
    bin: &str,
    capacity: usize,
    ceiling: &str,
    fleet: Option<(&str, &str)>,
    stagger: Duration,
) -> Pair {
    let fake = FakeProvider::start();
    fake.limited(capacity);
    fake.default_behavior(Behavior::DelayHeaders(
        Duration::from_millis(200),
        Box::new(Behavior::Answer(findings_answer(json!([])))),
    ));
    let cfg_path = dir.join("warden.toml");
    std::fs::write(&cfg_path, config(&fake.base_url(), ceiling, fleet)).unwrap();
    let started = Instant::now();
    let (reviewed, units) =
        processes::reviews(Path::new(bin), &dir.join("repo"), &cfg_path, 2, stagger);
    Pair {
        refused: fake.refused(),
        wall: started.elapsed().as_secs_f64(),
        reviewed,
        units,
    }
}

/// "median (min–max)".
fn spread(mut xs: Vec<f64>, decimals: usize) -> String {
    xs.sort_by(f64::total_cmp);
    let med = xs[xs.len() / 2];
    let (lo, hi) = (xs[0], xs[xs.len() - 1]);
    format!("{med:.decimals$} ({lo:.decimals$}-{hi:.decimals$})")
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let runs = args.first().copied().unwrap_or(5);
    let files = args.get(1).copied().unwrap_or(24);
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir(work.path().join("repo")).unwrap();
    repo(&work.path().join("repo"), files);
    let redis = RedisServer::start();
    let url = redis.url();
    let this = env!("CARGO_BIN_EXE_warden").to_string();
    let baseline = std::env::var("WARDEN_BASELINE").ok();
    println!(
        "2 reviews x {files} units, fake serving N at once (200 ms answers, 429 + Retry-After: 1 beyond), one route; median (min-max) of {runs} runs"
    );
    println!(
        "{:<4} {:<8} {:<11} {:<26} {:>18} {:>20} {:>10}",
        "N", "ceiling", "start", "setup", "answers_429", "wall_s", "reviewed"
    );
    let blocks = [
        (2, "8", Duration::ZERO),
        (2, "8", Duration::from_secs(1)),
        (4, "8", Duration::ZERO),
        (4, "8", Duration::from_secs(1)),
        (4, "\"auto\"", Duration::ZERO),
    ];
    let mut setups: Vec<(&str, &str, bool)> = vec![
        ("without [fleet]", &this, false),
        ("[fleet] (this build)", &this, true),
    ];
    if let Some(b) = &baseline {
        setups.push(("[fleet] (baseline build)", b, true));
    }
    for (i, (capacity, ceiling, stagger)) in blocks.into_iter().enumerate() {
        let start = if stagger.is_zero() {
            "at once"
        } else {
            "1s apart"
        };
        for (j, (label, bin, fleet)) in setups.iter().enumerate() {
            let (mut refused, mut wall, mut reviewed, mut units) = (vec![], vec![], 0, 0);
            for r in 0..runs {
                let ns = format!("pace-{i}-{j}-{r}-{}", std::process::id());
                let fleet = fleet.then_some((url.as_str(), ns.as_str()));
                let p = pair(work.path(), bin, capacity, ceiling, fleet, stagger);
                refused.push(p.refused as f64);
                wall.push(p.wall);
                reviewed += p.reviewed;
                units += p.units;
            }
            println!(
                "{capacity:<4} {ceiling:<8} {start:<11} {label:<26} {:>18} {:>20} {:>10}",
                spread(refused, 0),
                spread(wall, 2),
                format!("{reviewed}/{units}")
            );
        }
    }
}
