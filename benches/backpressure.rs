//! Back-pressure (docs/design.md section 13): the engine with real HTTP clients against the
//! fake provider on 127.0.0.1, 300 ms answers, for route ceilings 1, 2, 4, 8 and 16
//! (`auto`): a provider that serves 4 at once (429 with Retry-After: 1 beyond), 80 units;
//! one that serves 5 a second and says so in OpenAI's headers (429 beyond), 40 units.
//! Prints units reviewed, wall time, requests, answers of 429 and the limit's range.
//!   cargo bench --bench backpressure [-- CAP...]   (e.g. `-- 4 auto`: only those rows)

#[path = "../tests/it/support/fake_provider.rs"]
mod fake_provider;
#[path = "support/timed.rs"]
mod timed;

use fake_provider::{Behavior, FakeProvider, findings_answer};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use warden::config::{Execution, ProviderKind, Route, SimOptions};
use warden::engine::{Engine, EngineRoute, Event, Sink, UnitLabels, UnitWork};
use warden::prompt::Prompt;
use warden::provider::{HttpProvider, Provider};

fn route(base: String, cap: usize) -> Route {
    Route {
        name: "primary".into(),
        provider: ProviderKind::OpenAi,
        model: "m".into(),
        api_key_env: None,
        max_concurrency: cap,
        stream: true,
        base_url: Some(base),
        max_tokens: 1024,
        max_tokens_ceiling: None,
        ca_cert: None,
        sim: SimOptions::default(),
        spill: true,
        prices: None,
        fleet_max_concurrency: None,
        auto_concurrency: cap == 16,
        max_findings_per_answer: 100,
        reasoning_effort: None,
        params: Default::default(),
        structured_output: Default::default(),
        context_window: None,
        from_server: Default::default(),
    }
}

fn units(n: usize) -> Vec<UnitWork> {
    (0..n)
        .map(|i| UnitWork {
            index: i,
            prompt: Prompt {
                system: "s".into(),
                user: format!("unit {i}"),
            },
            lines: (1, 10),
            optional: false,
            labels: UnitLabels::default(),
            routes: vec![],
            tools: None,
            split: None,
        })
        .collect()
}

fn run(label: &str, setup: impl Fn(&FakeProvider), n: usize, cap: usize) {
    let fake = FakeProvider::start();
    setup(&fake);
    fake.default_behavior(Behavior::DelayHeaders(
        Duration::from_millis(300),
        Box::new(Behavior::Answer(findings_answer(json!([])))),
    ));
    let r = route(fake.base_url(), cap);
    let provider: Arc<dyn Provider> = Arc::new(HttpProvider::new(&r, None, Duration::from_secs(2)));
    let exec = Execution {
        review_budget: Duration::from_secs(120),
        max_attempts: 1,
        ..Default::default()
    };
    let (sink, events) = Sink::collect();
    let engine = Engine::new(vec![EngineRoute::configured(provider, &r)], exec, sink);
    let (_, wall, reviewed) = timed::review(&engine, units(n));
    let limits: Vec<usize> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            Event::LimitChanged { limit, .. } => Some(*limit),
            _ => None,
        })
        .collect();
    let start = cap.min(4);
    let lo = limits.iter().copied().chain([start]).min().unwrap();
    let hi = limits.iter().copied().chain([start]).max().unwrap();
    let cap_label = if cap == 16 {
        "auto".to_string()
    } else {
        cap.to_string()
    };
    println!(
        "{label:<12} {cap_label:>5} {reviewed:>4}/{n:<3} {:>8.2}s {:>9} {:>6} {:>8}",
        wall.as_secs_f64(),
        fake.requests().len(),
        fake.refused(),
        format!("{lo}-{hi}")
    );
}

/// Whether the row of this cap runs: every row, or those the command line names.
fn wanted(cap: usize) -> bool {
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let label = if cap == 16 {
        "auto".to_string()
    } else {
        cap.to_string()
    };
    only.is_empty() || only.contains(&label)
}

fn main() {
    println!(
        "{:<12} {:>5} {:>8} {:>9} {:>9} {:>6} {:>8}",
        "provider", "cap", "reviewed", "wall", "requests", "429", "limit"
    );
    for cap in [1, 2, 4, 8, 16].into_iter().filter(|c| wanted(*c)) {
        run(
            "limited(4)",
            |f| {
                f.limited(4);
            },
            80,
            cap,
        );
    }
    for cap in [2, 4, 8, 16].into_iter().filter(|c| wanted(*c)) {
        run(
            "paced(5)",
            |f| {
                f.paced(5);
            },
            40,
            cap,
        );
    }
}
