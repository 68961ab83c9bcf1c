//! An in-process model in a tool loop, for the engine's tests on tokio's paused clock:
//! each call follows a script of (call number, turn) → what the model does (call tools,
//! submit findings, answer in text, fail, hang). It records every request's conversation,
//! so a test can assert what a route was sent (the transcript after a failover).

#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;
use warden::provider::{
    Attempt, AttemptFuture, AttemptRecord, AttemptRequest, Conversation, Outcome, Provider, Stage,
    ToolCall,
};

/// What the model does on one call.
#[derive(Debug, Clone)]
pub enum Move {
    /// After this long, calls these tools: (name, arguments text).
    Call(Duration, Vec<(&'static str, String)>),
    /// After this long, submits `n` findings (a `submit_findings` call).
    Submit(Duration, usize),
    /// After this long, answers in text with `n` findings (a model ignoring tools).
    Text(Duration, usize),
    /// Fails with this outcome after this long.
    Fail(Duration, Outcome),
    /// No answer: times out at the attempt's deadline.
    Hang,
}

type Script = dyn Fn(usize, usize) -> Move + Send + Sync;

/// The model of one route.
pub struct Agent {
    name: String,
    script: Box<Script>,
    pub calls: AtomicUsize,
    /// Each request's conversation (None: a single-shot request), in order.
    pub seen: Mutex<Vec<Option<Conversation>>>,
    /// When each request started.
    pub started: Mutex<Vec<Instant>>,
}

impl Agent {
    /// `script(n, turn)`: call n (0-based on this route) at `turn` (0-based: the number
    /// of result turns in the request's transcript).
    pub fn new(
        name: &str,
        script: impl Fn(usize, usize) -> Move + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(Agent {
            name: name.into(),
            script: Box::new(script),
            calls: AtomicUsize::new(0),
            seen: Mutex::new(Vec::new()),
            started: Mutex::new(Vec::new()),
        })
    }

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    pub fn seen(&self) -> Vec<Option<Conversation>> {
        self.seen.lock().unwrap().clone()
    }

    async fn run(&self, req: &AttemptRequest) -> Attempt {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        self.seen.lock().unwrap().push(req.conversation.clone());
        self.started.lock().unwrap().push(Instant::now());
        let turn = req.conversation.as_ref().map_or(0, |c| {
            c.turns
                .iter()
                .filter(|t| matches!(t, warden::provider::Turn::Results(_)))
                .count()
        });
        let deadline = req.limits.total;
        let start = Instant::now();
        let mut record = AttemptRecord::new(&self.name, "scripted", "m", deadline);
        let mv = match (self.script)(n, turn) {
            // Offered no tools, a model answers in text.
            Move::Call(d, _) if req.conversation.is_none() => Move::Text(d, 0),
            mv => mv,
        };
        let d = match &mv {
            Move::Call(d, _) | Move::Submit(d, _) | Move::Text(d, _) | Move::Fail(d, _) => *d,
            Move::Hang => Duration::MAX,
        };
        if d > deadline {
            tokio::time::sleep(deadline).await;
            record.duration = start.elapsed();
            record.outcome = Outcome::Timeout;
            record.stage = Some(Stage::Total);
            record.reason = "deadline".into();
            return Attempt::new(record, None);
        }
        tokio::time::sleep(d).await;
        record.duration = start.elapsed();
        let findings = |k: usize| {
            serde_json::json!({"findings": (0..k).map(|i| serde_json::json!({
                "severity": "high", "confidence": "high", "title": format!("f{i}"), "line": req.lines.0
            })).collect::<Vec<_>>()})
        };
        let ok = |mut record: AttemptRecord, text: &str| {
            let extracted = warden::findings::extract(text, req.lines.0, req.lines.1).unwrap();
            record.outcome = Outcome::Ok;
            record.reason = "ok".into();
            Attempt::new(record, Some(extracted))
        };
        match mv {
            Move::Call(_, calls) => {
                record.outcome = Outcome::Ok;
                record.reason = "tool calls".into();
                let mut a = Attempt::new(record, None);
                a.calls = calls
                    .into_iter()
                    .enumerate()
                    .map(|(i, (name, arguments))| ToolCall {
                        id: format!("{}_{n}_{i}", self.name),
                        name: name.into(),
                        arguments,
                    })
                    .collect();
                a
            }
            Move::Submit(_, k) | Move::Text(_, k) => ok(record, &findings(k).to_string()),
            Move::Fail(_, o) => {
                record.outcome = o;
                record.reason = format!("scripted {o}");
                // A 429 is back-pressure, as the HTTP clients mark it.
                record.backpressure = o == Outcome::RateLimited;
                Attempt::new(record, None)
            }
            Move::Hang => unreachable!(),
        }
    }
}

impl Provider for Agent {
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

/// `read_file` of `path`, as a model calls it.
pub fn read(path: &str) -> (&'static str, String) {
    ("read_file", serde_json::json!({ "path": path }).to_string())
}
