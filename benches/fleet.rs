//! Fleet mode against a hanging primary: 6 concurrent `warden review` processes (the real
//! release binary) over the fake provider on 127.0.0.1, whose primary accepts requests and
//! never answers. Without `[fleet]` each process learns on its own that the primary hangs
//! (paying `minCalls` timeouts each); with `[fleet]` on a real `redis-server` they share
//! the breaker; with `fleetMaxConcurrency` they also share the primary's permits. Two
//! starts: all six at once (their first attempts are all in flight before any times out),
//! and staggered 1.5 s apart (CI jobs starting one after another). Prints, per setup:
//! requests sent to the primary, units reviewed, and wall time.
//!   cargo bench --bench fleet [-- ROUNDS]

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

const PROCESSES: usize = 6;
const FILES: usize = 8;

/// The config: short budgets, a breaker that opens after 3 timeouts for a minute, both
/// routes on the fake at `base`; `[fleet]` when given, `fleetMaxConcurrency` when `cap`.
fn config(base: &str, fleet: Option<(&str, &str)>, cap: bool) -> String {
    let mut t = String::from(
        "version = 1\n[execution]\nreviewBudget = \"30s\"\nhunkBudget = \"5s\"\nrequestTimeout = \"1s\"\nfirstTokenTimeout = \"1s\"\nconnectTimeout = \"500ms\"\nidleTimeout = \"1s\"\nmaxAttempts = 2\n[execution.breaker]\nminCalls = 3\nfailureRate = 0.5\nopenFor = \"60s\"\n",
    );
    if let Some((url, ns)) = fleet {
        t.push_str(&format!(
            "[fleet]\nredis = \"{url}\"\nnamespace = \"{ns}\"\n"
        ));
    }
    for (name, provider) in [("primary", "openai"), ("fallback", "anthropic")] {
        t.push_str(&format!(
            "[[routes]]\nname = \"{name}\"\nprovider = \"{provider}\"\nmodel = \"{name}\"\nbaseUrl = \"{base}\"\napiKeyEnv = \"{KEY_VAR}\"\nmaxConcurrency = 4\n"
        ));
        if cap && name == "primary" {
            t.push_str("fleetMaxConcurrency = 2\n");
        }
    }
    t
}

/// One round: a fresh fake, six reviews at once; (requests to the primary, units
/// reviewed, units, wall seconds).
fn round(
    dir: &Path,
    fleet: Option<(&str, &str)>,
    cap: bool,
    stagger: Duration,
) -> (usize, u64, u64, f64) {
    let fake = FakeProvider::start();
    fake.script("primary", vec![Behavior::Hang]);
    fake.script(
        "fallback",
        vec![Behavior::Answer(findings_answer(json!([])))],
    );
    let cfg_path = dir.join("warden.toml");
    std::fs::write(&cfg_path, config(&fake.base_url(), fleet, cap)).unwrap();
    let started = Instant::now();
    let (reviewed, units) = processes::reviews(
        Path::new(env!("CARGO_BIN_EXE_warden")),
        &dir.join("repo"),
        &cfg_path,
        PROCESSES,
        stagger,
    );
    let wall = started.elapsed().as_secs_f64();
    (fake.requests_for("primary").len(), reviewed, units, wall)
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
        "{PROCESSES} concurrent reviews x {FILES} units, primary hangs (requestTimeout 1s, minCalls 3, maxConcurrency 4), mean of {rounds} rounds"
    );
    println!(
        "{:<12} {:<36} {:>16} {:>16} {:>8}",
        "start", "setup", "primary_requests", "units_reviewed", "wall_s"
    );
    let setups = [
        ("without [fleet]", false, false),
        ("[fleet] (shared breakers)", true, false),
        ("[fleet] + fleetMaxConcurrency = 2", true, true),
    ];
    let starts = [
        ("at once", Duration::ZERO),
        ("1.5s apart", Duration::from_millis(1500)),
    ];
    let runs = starts
        .iter()
        .flat_map(|s| setups.iter().map(move |x| (*s, *x)));
    for (i, ((start, stagger), (label, fleet, cap))) in runs.enumerate() {
        let (mut req, mut rev, mut all, mut wall) = (0, 0, 0, 0.0);
        for r in 0..rounds {
            let ns = format!("bench-{i}-{r}-{}", std::process::id());
            let fleet = fleet.then_some((url.as_str(), ns.as_str()));
            let (q, rv, u, w) = round(work.path(), fleet, cap, stagger);
            req += q;
            rev += rv;
            all += u;
            wall += w;
        }
        let n = rounds as f64;
        let reviewed = format!("{:.1}/{}", rev as f64 / n, all / rounds as u64);
        println!(
            "{start:<12} {label:<36} {:>16.1} {reviewed:>16} {:>8.2}",
            req as f64 / n,
            wall / n
        );
    }
}
