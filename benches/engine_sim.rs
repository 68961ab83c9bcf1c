//! The headline scenario of docs/design.md section 11, on tokio's paused clock: 200 units,
//! primary `slow-tail` (cap 4), fallback `healthy` (cap 4), budgets 15 / 5 / 2 minutes.
//! Compares warden's engine with a model of the old reviewer (no deadline, 3 hunk retries
//! × 3 provider attempts, global concurrency 4, a global breaker that opens after 5
//! consecutive failed hunks and that any success resets) on the same random draws, and
//! warden's two routing policies side by side (`ordered`, `spillover`), then the same for
//! a 60-unit review.
//!   cargo bench --bench engine_sim [-- SEEDS]

use rand::SeedableRng;
use rand::rngs::SmallRng;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use warden::config::{Execution, Route, Routing};
use warden::engine::{Engine, EngineRoute, Sink, UnitStatus, UnitWork};
use warden::prompt::Prompt;
use warden::provider::sim::{Draw, Profile, SimProvider};
use warden::provider::{AttemptRequest, Outcome, Provider};

const UNITS: usize = 200;
/// The smaller review of the second figure.
const SMALL: usize = 60;

fn draw(profile: &Profile, seed: u64, unit: usize, attempt: u64) -> Draw {
    let s = seed
        ^ (unit as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ attempt.wrapping_mul(0xD1B5_4A32_D192_ED03);
    Draw::sample(profile, &mut SmallRng::seed_from_u64(s))
}

fn unit_of(req: &AttemptRequest) -> usize {
    req.prompt.user.trim_start_matches("unit ").parse().unwrap()
}

fn route(name: &str, profile: &str) -> Route {
    Route::sim(name, profile, 1.0, 0, 4)
}

struct Figures {
    reviewed_in_budget: usize,
    reviewed_total: usize,
    wall: Duration,
    attempts: usize,
    provider_minutes: f64,
    wasted_minutes: f64,
}

fn ours(seed: u64, routing: Routing, n_units: usize) -> Figures {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        let slow = Profile::named("slow-tail").unwrap();
        let healthy = Profile::named("healthy").unwrap();
        let primary = SimProvider::with_draws(&route("primary", "slow-tail"), move |req, n| {
            draw(&slow, seed, unit_of(req), n)
        });
        let fallback = SimProvider::with_draws(&route("fallback", "healthy"), move |req, n| {
            draw(&healthy, seed ^ 0xFA11, unit_of(req), n)
        });
        let routes = vec![
            EngineRoute::new(Arc::new(primary) as Arc<dyn Provider>, 4),
            EngineRoute::new(Arc::new(fallback) as Arc<dyn Provider>, 4),
        ];
        let units = (0..n_units)
            .map(|i| UnitWork {
                index: i,
                prompt: Prompt {
                    system: "review skill `code-review`".into(),
                    user: format!("unit {i}"),
                },
                lines: (1, 10),
                optional: false,
                labels: Default::default(),
                routes: vec![],
                tools: None,
                split: None,
            })
            .collect();
        let exec = Execution {
            routing,
            ..Execution::default()
        };
        let r = Engine::new(routes, exec, Sink::none())
            .run(units, CancellationToken::new())
            .await;
        let attempts: Vec<_> = r.units.iter().flat_map(|u| &u.attempts).collect();
        if std::env::var_os("SIM_DEBUG").is_some() {
            let mut counts = std::collections::BTreeMap::new();
            for a in &attempts {
                *counts
                    .entry((
                        a.record.route.clone(),
                        a.record.outcome.as_str(),
                        a.record.stage.map(|s| s.as_str()),
                    ))
                    .or_insert(0) += 1;
            }
            eprintln!("seed {seed}: {counts:?} routes {:?}", r.routes);
        }
        let mins = |d: Duration| d.as_secs_f64() / 60.0;
        let reviewed = r
            .units
            .iter()
            .filter(|u| u.status == UnitStatus::Reviewed)
            .count();
        Figures {
            reviewed_in_budget: reviewed,
            reviewed_total: reviewed,
            wall: r.elapsed,
            attempts: attempts.len(),
            provider_minutes: attempts.iter().map(|a| mins(a.record.duration)).sum(),
            wasted_minutes: attempts
                .iter()
                .filter(|a| a.record.outcome != Outcome::Ok)
                .map(|a| mins(a.record.duration))
                .sum(),
        }
    })
}

fn old(seed: u64) -> Figures {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        let slow = Profile::named("slow-tail").unwrap();
        let start = Instant::now();
        let permits = Arc::new(Semaphore::new(4));
        let consecutive_failed = Arc::new(AtomicUsize::new(0));
        let open_until = Arc::new(AtomicU64::new(0));
        let calls = Arc::new(AtomicUsize::new(0));
        let call_ms = Arc::new(AtomicU64::new(0));
        let wasted_ms = Arc::new(AtomicU64::new(0));
        let done: Vec<Option<Duration>> = futures_util::future::join_all((0..UNITS).map(|i| {
            let (permits, cf, ou, calls, call_ms, wasted_ms) = (
                permits.clone(),
                consecutive_failed.clone(),
                open_until.clone(),
                calls.clone(),
                call_ms.clone(),
                wasted_ms.clone(),
            );
            async move {
                let _p = permits.acquire().await.unwrap();
                let mut n = 0u64;
                for _hunk_try in 0..3 {
                    let since = start.elapsed().as_millis() as u64;
                    if since < ou.load(Ordering::SeqCst) {
                        continue; // breaker open: the hunk fails fast
                    }
                    for _provider_try in 0..3 {
                        n += 1;
                        calls.fetch_add(1, Ordering::SeqCst);
                        let (minutes, ok) = match draw(&slow, seed, i, n) {
                            Draw::Answer { minutes } => (minutes, true),
                            Draw::SlowError { minutes } => (minutes, false),
                            _ => (0.0, false),
                        };
                        let d = Duration::from_secs_f64(minutes * 60.0);
                        tokio::time::sleep(d).await; // no deadline
                        call_ms.fetch_add(d.as_millis() as u64, Ordering::SeqCst);
                        if ok {
                            cf.store(0, Ordering::SeqCst); // any success resets the global count
                            return Some(start.elapsed());
                        }
                        wasted_ms.fetch_add(d.as_millis() as u64, Ordering::SeqCst);
                    }
                    if cf.fetch_add(1, Ordering::SeqCst) + 1 >= 5 {
                        ou.store(
                            start.elapsed().as_millis() as u64 + 60_000,
                            Ordering::SeqCst,
                        );
                        cf.store(0, Ordering::SeqCst);
                    }
                }
                None
            }
        }))
        .await;
        let budget = Duration::from_secs(15 * 60);
        Figures {
            reviewed_in_budget: done.iter().flatten().filter(|t| **t <= budget).count(),
            reviewed_total: done.iter().flatten().count(),
            wall: start.elapsed(),
            attempts: calls.load(Ordering::SeqCst),
            provider_minutes: call_ms.load(Ordering::SeqCst) as f64 / 60_000.0,
            wasted_minutes: wasted_ms.load(Ordering::SeqCst) as f64 / 60_000.0,
        }
    })
}

fn main() {
    let seeds: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    println!(
        "200 units; primary slow-tail (cap 4), fallback healthy (cap 4); budgets 15m/5m/2m; paused clock"
    );
    println!(
        "{:<6} {:<8} {:>8} {:>10} {:>12} {:>9} {:>14} {:>14}",
        "seed", "policy", "in 15 min", "reviewed", "wall", "attempts", "provider-min", "wasted-min"
    );
    if std::env::var_os("SIM_DEBUG").is_some() {
        let slow = Profile::named("slow-tail").unwrap();
        for seed in 1..=3 {
            println!(
                "{seed}: {:?} {:?}",
                draw(&slow, seed, 0, 1),
                draw(&slow, seed, 1, 1)
            );
        }
    }
    let mut ratios = Vec::new();
    let mut small = Vec::new();
    for seed in 1..=seeds {
        let ordered = ours(seed, Routing::Ordered, UNITS);
        let spill = ours(seed, Routing::Spillover, UNITS);
        ratios.push(spill.reviewed_in_budget as f64 / ordered.reviewed_in_budget.max(1) as f64);
        for (name, f) in [("old", old(seed)), ("ordered", ordered), ("spill", spill)] {
            println!(
                "{seed:<6} {name:<8} {:>8} {:>10} {:>10.1} m {:>9} {:>14.0} {:>14.0}",
                f.reviewed_in_budget,
                f.reviewed_total,
                f.wall.as_secs_f64() / 60.0,
                f.attempts,
                f.provider_minutes,
                f.wasted_minutes
            );
        }
        let o = ours(seed, Routing::Ordered, SMALL).reviewed_in_budget;
        let s = ours(seed, Routing::Spillover, SMALL).reviewed_in_budget;
        small.push((o, s));
    }
    println!();
    println!("spillover / ordered, units reviewed in 15 min (200 units):");
    for (i, r) in ratios.iter().enumerate() {
        println!("  seed {}: {r:.2}x", i + 1);
    }
    println!("  median {:.2}x", median(&ratios));
    println!("{SMALL}-unit review, units reviewed (ordered, spillover):");
    for (i, (o, s)) in small.iter().enumerate() {
        println!("  seed {}: {o} / {s}", i + 1);
    }
    let so: Vec<f64> = small.iter().map(|(o, _)| *o as f64).collect();
    let ss: Vec<f64> = small.iter().map(|(_, s)| *s as f64).collect();
    println!("  median {} / {} of {SMALL}", median(&so), median(&ss));
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return 0.0;
    }
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}
