//! An in-process provider whose every call follows a script: for the engine's
//! deterministic tests on tokio's paused clock (no sockets: paused time and real I/O
//! do not mix).

#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;
use warden::engine::{UnitLabels, UnitWork};
use warden::prompt::Prompt;
use warden::provider::{
    Attempt, AttemptFuture, AttemptRecord, AttemptRequest, Outcome, Provider, Stage,
};

/// What one call does.
#[derive(Debug, Clone, Copy)]
pub enum Step {
    /// Answer after this long with `findings` findings on the chunk's first line.
    Ok(Duration, usize),
    /// Fail with this outcome after this long.
    Fail(Duration, Outcome),
    /// 429 after this long with this Retry-After.
    RateLimited(Duration, Duration),
    /// 529 overloaded after this long (back-pressure without a Retry-After).
    Overloaded(Duration),
    /// The connection is refused after this long (nothing listens at the address).
    Refused(Duration),
    /// No answer: time out at the attempt's deadline, as a real client does.
    Hang,
    /// Never return at all (only cancellation ends it).
    HangForever,
}

type Script = dyn Fn(usize) -> Step + Send + Sync;

pub struct Scripted {
    name: String,
    script: Box<Script>,
    pub calls: AtomicUsize,
    in_flight: AtomicUsize,
    pub peak: AtomicUsize,
    /// (call number, start, deadline given) per call.
    pub log: Mutex<Vec<(usize, Instant, Duration)>>,
    /// Output tokens an answer reports (input: the prompt's characters / 4), if any.
    output_tokens: Option<u64>,
    /// At most this many calls at once; one beyond is answered 429 at once with this
    /// Retry-After (a provider that says "not now" past its capacity).
    limited: Option<(usize, Option<Duration>)>,
    /// Calls answered with back-pressure.
    pub refused: AtomicUsize,
}

impl Scripted {
    /// `script(n)` decides call n (0-based, in the order calls reach this route).
    pub fn new(name: &str, script: impl Fn(usize) -> Step + Send + Sync + 'static) -> Arc<Self> {
        Arc::new(Scripted {
            name: name.into(),
            script: Box::new(script),
            calls: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            log: Mutex::new(Vec::new()),
            output_tokens: None,
            limited: None,
            refused: AtomicUsize::new(0),
        })
    }

    /// As [`Scripted::new`], serving at most `n` calls at once: a call beyond them is
    /// answered 429 at once (with `retry_after`, if any) and not counted in flight.
    pub fn limited(
        name: &str,
        n: usize,
        retry_after: Option<Duration>,
        script: impl Fn(usize) -> Step + Send + Sync + 'static,
    ) -> Arc<Self> {
        let mut s = Arc::into_inner(Self::new(name, script)).expect("just made");
        s.limited = Some((n, retry_after));
        Arc::new(s)
    }

    pub fn refused(&self) -> usize {
        self.refused.load(Ordering::SeqCst)
    }

    /// As [`Scripted::new`], with answers that report usage: input tokens of a quarter of
    /// the prompt's characters, `output_tokens` output tokens.
    pub fn with_usage(
        name: &str,
        output_tokens: u64,
        script: impl Fn(usize) -> Step + Send + Sync + 'static,
    ) -> Arc<Self> {
        let mut s = Arc::into_inner(Self::new(name, script)).expect("just made");
        s.output_tokens = Some(output_tokens);
        Arc::new(s)
    }

    pub fn always(name: &str, step: Step) -> Arc<Self> {
        Self::new(name, move |_| step)
    }

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    async fn run(&self, req: &AttemptRequest) -> Attempt {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        self.log
            .lock()
            .unwrap()
            .push((n, Instant::now(), req.limits.total));
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some((cap, retry_after)) = self.limited
            && now > cap
        {
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            self.refused.fetch_add(1, Ordering::SeqCst);
            let mut record = AttemptRecord::new(&self.name, "scripted", "m", req.limits.total);
            record.outcome = Outcome::RateLimited;
            record.backpressure = true;
            record.retry_after = retry_after;
            record.http_status = Some(429);
            record.reason = "scripted 429: over capacity".into();
            return Attempt::new(record, None);
        }
        self.peak.fetch_max(now, Ordering::SeqCst);
        struct Guard<'a>(&'a AtomicUsize);
        impl Drop for Guard<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let _g = Guard(&self.in_flight);
        let start = Instant::now();
        let deadline = req.limits.total;
        let mut record = AttemptRecord {
            model_answered: Some("m".into()),
            ..AttemptRecord::new(&self.name, "scripted", "m", deadline)
        };
        let wait = |d: Duration| async move {
            if d > deadline {
                tokio::time::sleep(deadline).await;
                false
            } else {
                tokio::time::sleep(d).await;
                true
            }
        };
        let step = (self.script)(n);
        let in_time = match step {
            Step::Ok(d, _)
            | Step::Fail(d, _)
            | Step::RateLimited(d, _)
            | Step::Overloaded(d)
            | Step::Refused(d) => wait(d).await,
            Step::Hang => wait(Duration::MAX).await,
            Step::HangForever => {
                std::future::pending::<()>().await;
                unreachable!()
            }
        };
        record.duration = start.elapsed();
        if !in_time {
            record.outcome = Outcome::Timeout;
            record.stage = Some(Stage::Total);
            record.reason = "deadline".into();
            return Attempt::new(record, None);
        }
        match step {
            Step::Ok(_, k) => {
                let answer = serde_json::json!({"findings": (0..k).map(|i| serde_json::json!({
                    "severity": "high", "confidence": "high", "title": format!("f{i}"), "line": req.lines.0
                })).collect::<Vec<_>>()})
                .to_string();
                let extracted =
                    warden::findings::extract(&answer, req.lines.0, req.lines.1).unwrap();
                record.outcome = Outcome::Ok;
                record.reason = "ok".into();
                record.usage = self.output_tokens.map(|o| warden::provider::Usage {
                    input_tokens: Some((req.prompt.chars() / 4) as u64),
                    output_tokens: Some(o),
                    cost: None,
                    ..Default::default()
                });
                Attempt::new(record, Some(extracted))
            }
            Step::Fail(_, o) => {
                record.outcome = o;
                record.reason = format!("scripted {o}");
                Attempt::new(record, None)
            }
            Step::Refused(_) => {
                record.outcome = Outcome::Unavailable;
                record.unreachable = Some("127.0.0.1:9".into());
                record.reason = "cannot connect to 127.0.0.1:9: Connection refused".into();
                Attempt::new(record, None)
            }
            Step::RateLimited(_, ra) => {
                self.refused.fetch_add(1, Ordering::SeqCst);
                record.outcome = Outcome::RateLimited;
                record.retry_after = Some(ra);
                record.backpressure = true;
                record.reason = "scripted 429".into();
                Attempt::new(record, None)
            }
            Step::Overloaded(_) => {
                self.refused.fetch_add(1, Ordering::SeqCst);
                record.outcome = Outcome::Unavailable;
                record.backpressure = true;
                record.http_status = Some(529);
                record.reason = "scripted 529 overloaded".into();
                Attempt::new(record, None)
            }
            Step::Hang | Step::HangForever => unreachable!(),
        }
    }
}

impl Provider for Scripted {
    fn route(&self) -> &str {
        &self.name
    }
    fn kind(&self) -> &'static str {
        "scripted"
    }
    fn model(&self) -> &str {
        "m"
    }
    fn attempt<'a>(&'a self, req: &'a AttemptRequest) -> AttemptFuture<'a> {
        Box::pin(self.run(req))
    }
}

/// `n` units in dispatch order; each prompt carries a content marker (`DIFF-CONTENT`) that
/// telemetry must never export.
pub fn units(n: usize) -> Vec<UnitWork> {
    (0..n)
        .map(|i| UnitWork {
            index: i,
            prompt: Prompt {
                system: "s".into(),
                user: format!("unit {i} DIFF-CONTENT"),
            },
            lines: (1, 50),
            optional: false,
            labels: UnitLabels {
                skill: "code-review".into(),
                path: format!("src/f{i}.rs"),
                priority: 40,
            },
            routes: vec![],
            tools: None,
            split: None,
        })
        .collect()
}
