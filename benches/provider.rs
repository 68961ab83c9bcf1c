//! Client overhead per attempt against the fake provider on 127.0.0.1: attempts per second
//! and CPU time per attempt at 1 and 32 concurrent attempts, for both protocols, streaming
//! and not. The client runs on a current-thread runtime on this thread, so this thread's
//! CPU time (RUSAGE_THREAD) is the client's alone; the fake runs on its own threads.
//!   cargo bench --bench provider

#[path = "../tests/it/support/fake_provider.rs"]
mod fake_provider;

use fake_provider::{Behavior, FakeProvider, finding, findings_answer};
use serde_json::json;
use std::time::{Duration, Instant};
use warden::config::{ProviderKind, Route, SimOptions};
use warden::prompt::Prompt;
use warden::provider::{AttemptRequest, HttpProvider, Limits, Outcome, Provider};

fn thread_cpu() -> Duration {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we own.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    Duration::from_secs(ru.ru_utime.tv_sec as u64 + ru.ru_stime.tv_sec as u64)
        + Duration::from_micros(ru.ru_utime.tv_usec as u64 + ru.ru_stime.tv_usec as u64)
}

fn main() {
    let fake = FakeProvider::start();
    let answer = findings_answer(json!([
        finding(3, "high", "a bug"),
        finding(5, "low", "a nit")
    ]));
    fake.default_behavior(Behavior::Answer(answer));
    let prompt = Prompt {
        system: "s".repeat(2_000),
        user: "u".repeat(6_000),
    };
    println!(
        "{:<28} {:>5} {:>10} {:>12} {:>14}",
        "protocol", "conc", "attempts", "attempts/s", "CPU/attempt"
    );
    for (label, kind, stream) in [
        ("openai streaming", ProviderKind::OpenAi, true),
        ("openai non-streaming", ProviderKind::OpenAi, false),
        ("anthropic streaming", ProviderKind::Anthropic, true),
        ("anthropic non-streaming", ProviderKind::Anthropic, false),
    ] {
        for conc in [1usize, 32] {
            let route = Route {
                name: "bench".into(),
                provider: kind,
                model: "bench".into(),
                api_key_env: None,
                max_concurrency: conc,
                stream,
                base_url: Some(fake.base_url()),
                max_tokens: 1024,
                max_tokens_ceiling: None,
                ca_cert: None,
                sim: SimOptions::default(),
                spill: true,
                prices: None,
                fleet_max_concurrency: None,
                auto_concurrency: false,
                max_findings_per_answer: 100,
                reasoning_effort: None,
                params: Default::default(),
                structured_output: Default::default(),
                context_window: None,
                from_server: Default::default(),
            };
            let provider = HttpProvider::new(&route, None, Duration::from_secs(2));
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let total = if conc == 1 { 500 } else { 2_000 };
            let req = AttemptRequest {
                prompt: prompt.clone(),
                lines: (1, 10),
                path: None,
                limits: Limits {
                    connect: Duration::from_secs(2),
                    first_token: Duration::from_secs(5),
                    idle: Duration::from_secs(5),
                    total: Duration::from_secs(10),
                },
                conversation: None,
                output_cap: None,
            };
            let cpu0 = thread_cpu();
            let t0 = Instant::now();
            let ok = rt.block_on(async {
                use futures_util::StreamExt;
                futures_util::stream::iter(0..total)
                    .map(|_| provider.attempt(&req))
                    .buffer_unordered(conc)
                    .filter(|a| std::future::ready(a.record.outcome == Outcome::Ok))
                    .count()
                    .await
            });
            let wall = t0.elapsed();
            let cpu = thread_cpu() - cpu0;
            assert_eq!(ok, total, "every attempt should succeed against the fake");
            println!(
                "{label:<28} {conc:>5} {total:>10} {:>12.0} {:>11.0} µs",
                total as f64 / wall.as_secs_f64(),
                cpu.as_secs_f64() * 1e6 / total as f64
            );
        }
    }
}
