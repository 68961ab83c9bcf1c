//! Through the provider: the load profiles (`sim_load.rs`) as a route plays them, attempts
//! at once.

use crate::config::Route;
use crate::prompt::Prompt;
use crate::provider::sim::{Draw, SimProvider};
use crate::provider::{Attempt, AttemptRequest, Limits, Outcome, Provider};
use std::time::Duration;

fn request(k: usize) -> AttemptRequest {
    let long = Duration::from_secs(3600);
    AttemptRequest {
        prompt: Prompt {
            system: "running the review skill `code-review`.".into(),
            user: format!("unit {k}"),
        },
        lines: (1, 10),
        path: None,
        limits: Limits {
            connect: long,
            first_token: long,
            idle: long,
            total: long,
        },
        conversation: None,
        output_cap: None,
    }
}

async fn at_once(p: &SimProvider, n: usize) -> Vec<Attempt> {
    let reqs: Vec<_> = (0..n).map(request).collect();
    futures_util::future::join_all(reqs.iter().map(|r| p.attempt(r))).await
}

fn route(profile: &str, capacity: u32) -> Route {
    let mut r = Route::sim("r", profile, 60.0, 1, 16);
    r.sim.capacity = capacity;
    r
}

#[tokio::test(start_paused = true)]
async fn limited_answers_429_with_retry_after_beyond_n() {
    let p = SimProvider::new(&route("limited", 4));
    let a = at_once(&p, 6).await;
    let ok = a.iter().filter(|a| a.record.outcome == Outcome::Ok).count();
    let limited: Vec<_> = a
        .iter()
        .filter(|a| a.record.outcome == Outcome::RateLimited)
        .collect();
    assert_eq!((ok, limited.len()), (4, 2));
    for l in limited {
        assert_eq!(l.record.http_status, Some(429));
        assert_eq!(
            l.record.retry_after,
            Some(Duration::from_secs_f64(1.0 / 60.0))
        );
    }
    // All ended: the route serves N again.
    let a = at_once(&p, 4).await;
    assert!(a.iter().all(|a| a.record.outcome == Outcome::Ok));
}

#[tokio::test(start_paused = true)]
async fn paced_serves_n_per_second_with_headers_on_every_answer() {
    let p = SimProvider::new(&route("paced", 5));
    let a = at_once(&p, 8).await;
    let ok: Vec<_> = a
        .iter()
        .filter(|a| a.record.outcome == Outcome::Ok)
        .collect();
    assert_eq!(ok.len(), 5);
    for a in &a {
        let w = a.record.rate_limit.as_ref().and_then(|r| r.requests);
        let w = w.unwrap_or_else(|| panic!("no headers: {:?}", a.record));
        assert_eq!(w.limit, Some(5));
        assert!(w.remaining <= 5 && w.reset_after <= Duration::from_secs_f64(1.0 / 60.0));
        if a.record.outcome == Outcome::RateLimited {
            assert!(a.record.retry_after.is_some());
        }
    }
}

#[tokio::test(start_paused = true)]
async fn saturating_latency_grows_with_the_load_past_its_knee() {
    let p = SimProvider::with_draws(&route("saturating", 2), |_, _| Draw::Answer {
        minutes: 1.0,
    });
    let alone = at_once(&p, 1).await[0].record.duration;
    assert_eq!(alone, Duration::from_secs(1), "a minute at 60x");
    let mut d: Vec<_> = at_once(&p, 8)
        .await
        .iter()
        .map(|a| a.record.duration)
        .collect();
    d.sort();
    assert_eq!(d[0], alone);
    assert_eq!(d[7], alone * 4, "8 in flight past a knee of 2: 4x");
}
