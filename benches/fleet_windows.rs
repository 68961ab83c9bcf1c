//! Rate-limit windows shared through the fleet (docs/design.md section 13): two concurrent
//! `warden review` processes (the real release binary), one account between them: the fake
//! provider on 127.0.0.1 serves `K` requests a second account-wide, says so in OpenAI's
//! headers (`x-ratelimit-limit-requests`, `-remaining-requests`, `-reset-requests`) and
//! answers 429 beyond. Without `[fleet]` each process spends what the headers say is left,
//! so the two overdraw it; with `[fleet]` on a real `redis-server` they take from one
//! window. Two starts: at once, and the second 1.5 s after the first. Prints, per setup:
//! requests, answers of 429, the most requests that reached the fake within one second,
//! units reviewed, and wall time.
//!   cargo bench --bench fleet_windows [-- ROUNDS]

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

const PROCESSES: usize = 2;
const FILES: usize = 20;
const K: u64 = 6;

/// One route on the fake, `maxConcurrency = 8`, `maxAttempts = 1`; `[fleet]` when given.
fn config(base: &str, fleet: Option<(&str, &str)>) -> String {
    let mut t = String::from(
        "version = 1\n[execution]\nreviewBudget = \"60s\"\nhunkBudget = \"30s\"\nmaxAttempts = 1\n",
    );
    if let Some((url, ns)) = fleet {
        t.push_str(&format!(
            "[fleet]\nredis = \"{url}\"\nnamespace = \"{ns}\"\n"
        ));
    }
    t.push_str(&format!(
        "[[routes]]\nname = \"primary\"\nprovider = \"openai\"\nmodel = \"m\"\nbaseUrl = \"{base}\"\napiKeyEnv = \"{KEY_VAR}\"\nmaxConcurrency = 8\n"
    ));
    t
}

struct Round {
    requests: usize,
    refused: usize,
    busiest: usize,
    reviewed: u64,
    units: u64,
    wall: f64,
}

/// One round: a fresh fake (one account), the processes started `stagger` apart.
fn round(dir: &Path, fleet: Option<(&str, &str)>, stagger: Duration) -> Round {
    let fake = FakeProvider::start();
    fake.paced(K).default_behavior(Behavior::DelayHeaders(
        Duration::from_millis(300),
        Box::new(Behavior::Answer(findings_answer(json!([])))),
    ));
    let cfg_path = dir.join("warden.toml");
    std::fs::write(&cfg_path, config(&fake.base_url(), fleet)).unwrap();
    let started = Instant::now();
    let (reviewed, units) = processes::reviews(
        Path::new(env!("CARGO_BIN_EXE_warden")),
        &dir.join("repo"),
        &cfg_path,
        PROCESSES,
        stagger,
    );
    let wall = started.elapsed().as_secs_f64();
    let times: Vec<Instant> = fake.requests().iter().map(|r| r.at).collect();
    let busiest = times
        .iter()
        .map(|t0| {
            times
                .iter()
                .filter(|t| **t >= *t0 && t.duration_since(*t0) < Duration::from_secs(1))
                .count()
        })
        .max()
        .unwrap_or(0);
    Round {
        requests: times.len(),
        refused: fake.refused(),
        busiest,
        reviewed,
        units,
        wall,
    }
}

fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(3);
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir(work.path().join("repo")).unwrap();
    repo(&work.path().join("repo"), FILES);
    let redis = RedisServer::start();
    let url = redis.url();
    println!(
        "{PROCESSES} concurrent reviews x {FILES} units, one account of {K} requests/s (headers, 429 beyond), maxConcurrency 8, 300 ms answers, mean of {rounds} rounds"
    );
    println!(
        "{:<12} {:<16} {:>9} {:>9} {:>14} {:>15} {:>8}",
        "start", "setup", "requests", "429s", "most_in_1s", "units_reviewed", "wall_s"
    );
    let starts = [
        ("at once", Duration::ZERO),
        ("1.5s apart", Duration::from_millis(1500)),
    ];
    let setups = [("without [fleet]", false), ("[fleet]", true)];
    let runs = starts
        .iter()
        .flat_map(|s| setups.iter().map(move |x| (*s, *x)));
    for (i, ((start, stagger), (label, fleet))) in runs.enumerate() {
        let mut sum = Round {
            requests: 0,
            refused: 0,
            busiest: 0,
            reviewed: 0,
            units: 0,
            wall: 0.0,
        };
        for r in 0..rounds {
            let ns = format!("bench-windows-{i}-{r}-{}", std::process::id());
            let fleet = fleet.then_some((url.as_str(), ns.as_str()));
            let x = round(work.path(), fleet, stagger);
            sum.requests += x.requests;
            sum.refused += x.refused;
            sum.busiest = sum.busiest.max(x.busiest);
            sum.reviewed += x.reviewed;
            sum.units += x.units;
            sum.wall += x.wall;
        }
        let n = rounds as f64;
        let reviewed = format!(
            "{:.1}/{}",
            sum.reviewed as f64 / n,
            sum.units / rounds as u64
        );
        println!(
            "{start:<12} {label:<16} {:>9.1} {:>9.1} {:>14} {reviewed:>15} {:>8.2}",
            sum.requests as f64 / n,
            sum.refused as f64 / n,
            sum.busiest,
            sum.wall / n
        );
    }
}
