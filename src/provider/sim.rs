//! The built-in `sim` provider: an in-process route with the latency and fault profiles of
//! docs/design.md section 11, played `timeScale` times faster than real time, with findings
//! from a few built-in heuristics so a run shows real output. It sees exactly what a real
//! model sees (the prompt) and answers through the same findings extraction.
//!
//! Draws depend on the route's seed and the prompt (not on call order), so a run with the
//! same seed and diff is repeatable under any concurrency.

use super::answered::Answered;
use super::attempt::{AttemptRecord, Outcome, Stage, Usage};
use super::classify::Failure;
use super::sim_load::{Admit, LoadState};
pub use super::sim_load::{DEFAULT_CAPACITY, Load};
use super::{Attempt, AttemptFuture, AttemptRequest, Limits, Provider};
use crate::config::Route;
use crate::findings;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, LogNormal};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;
use std::time::Duration;

/// The profile names of docs/design.md sections 11 and 13 (the list lives with the config that
/// validates a route's `profile`; every name has a [`Profile::named`]).
pub use crate::config::SIM_PROFILES as PROFILES;

/// A profile: success latency (log-normal, minutes) and its faults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Profile {
    /// Median success latency, minutes.
    pub median_min: f64,
    /// 95th percentile success latency, minutes.
    pub p95_min: f64,
    /// The longest success, minutes.
    pub clip_min: f64,
    /// Share of calls that are slow provider errors, and their duration range (minutes).
    pub error_rate: f64,
    /// How long slow errors take, minutes (uniform in the range).
    pub error_min: (f64, f64),
    /// Share of calls answered 503 at once.
    pub fast_503_rate: f64,
    /// Share of calls answered 429, with Retry-After range (seconds).
    pub rate_limit_rate: f64,
    /// The Retry-After of 429s, seconds (uniform in the range).
    pub retry_after_s: (f64, f64),
    /// Every call hangs until cancelled.
    pub hang: bool,
    /// How answers depend on the route's load (N is the route's `capacity`).
    pub load: Load,
}

impl Profile {
    /// The profile of docs/design.md section 11 named `name` (see [`PROFILES`]).
    pub fn named(name: &str) -> Option<Profile> {
        let healthy = Profile {
            median_min: 0.6,
            p95_min: 2.0,
            clip_min: 45.0,
            error_rate: 0.005,
            error_min: (0.0, 3.0),
            fast_503_rate: 0.0,
            rate_limit_rate: 0.0,
            retry_after_s: (5.0, 60.0),
            hang: false,
            load: Load::Free,
        };
        // A fast model (median 300 ms, like the gateways' test models) behind a limit.
        let fast = Profile {
            median_min: 0.005,
            p95_min: 0.01,
            clip_min: 0.05,
            error_rate: 0.0,
            ..healthy
        };
        Some(match name {
            // The starter's and `--sim`'s: median 6 s, p95 18 s, never past 60 s (half
            // the default request timeout, so even four tool turns fit the hunk budget),
            // no errors. The slow profiles stay for `warden simulate` and `--sim=NAME`.
            "quick" => Profile {
                median_min: 0.1,
                p95_min: 0.3,
                clip_min: 1.0,
                error_rate: 0.0,
                ..healthy
            },
            "healthy" => healthy,
            "slow-tail" => Profile {
                median_min: 1.5,
                p95_min: 6.2,
                clip_min: 45.0,
                error_rate: 0.03,
                error_min: (0.5, 58.0),
                ..healthy
            },
            "outage" => Profile {
                hang: true,
                ..healthy
            },
            "flaky" => Profile {
                fast_503_rate: 0.2,
                ..healthy
            },
            "rate-limited" => Profile {
                rate_limit_rate: 0.3,
                ..healthy
            },
            "limited" => Profile {
                load: Load::Parallel,
                ..fast
            },
            "paced" => Profile {
                load: Load::PerSecond,
                ..fast
            },
            "saturating" => Profile {
                load: Load::Knee,
                ..healthy
            },
            _ => return None,
        })
    }

    fn sigma(&self) -> f64 {
        (self.p95_min / self.median_min).ln() / 1.645
    }
}

/// What one simulated call does, in simulated minutes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Draw {
    /// An answer after this long.
    Answer {
        /// Simulated minutes.
        minutes: f64,
    },
    /// A provider error (502) after this long.
    SlowError {
        /// Simulated minutes.
        minutes: f64,
    },
    /// A 503 at once.
    Fast503,
    /// A 429 at once.
    RateLimited {
        /// Its Retry-After, simulated seconds.
        retry_after_s: f64,
    },
    /// No answer until cancelled.
    Hang,
}

impl Draw {
    /// The draw with its latency `factor` times longer (a `saturating` route under load).
    pub(crate) fn slowed(self, factor: f64) -> Draw {
        match self {
            Draw::Answer { minutes } => Draw::Answer {
                minutes: minutes * factor,
            },
            other => other,
        }
    }

    /// One draw from `profile`.
    pub fn sample(profile: &Profile, rng: &mut SmallRng) -> Draw {
        if profile.hang {
            return Draw::Hang;
        }
        let u: f64 = rng.random();
        if u < profile.error_rate {
            let (lo, hi) = profile.error_min;
            return Draw::SlowError {
                minutes: rng.random_range(lo..=hi),
            };
        }
        if u < profile.error_rate + profile.fast_503_rate {
            return Draw::Fast503;
        }
        if u < profile.error_rate + profile.fast_503_rate + profile.rate_limit_rate {
            let (lo, hi) = profile.retry_after_s;
            return Draw::RateLimited {
                retry_after_s: rng.random_range(lo..=hi),
            };
        }
        let ln =
            LogNormal::new(profile.median_min.ln(), profile.sigma()).expect("valid log-normal");
        Draw::Answer {
            minutes: ln.sample(rng).min(profile.clip_min),
        }
    }
}

/// Chooses the draw for a call, given the request and how many times this prompt was
/// seen before (1 for the first attempt).
pub(crate) type DrawFn = dyn Fn(&AttemptRequest, u64) -> Draw + Send + Sync;

/// The simulator as a route: latency and faults from a profile (or exact draws), findings from heuristics, answers through the same extraction as real models.
pub struct SimProvider {
    route: Route,
    profile: Profile,
    /// Attempts seen per prompt, so a retry of the same unit draws anew.
    seen: Mutex<HashMap<u64, u64>>,
    /// Benchmarks replay exact draws (the same ones for two policies); None: the profile.
    draw_fn: Option<Box<DrawFn>>,
    /// The route's load, shared by its attempts (profiles of docs/design.md section 13).
    load: LoadState,
}

impl SimProvider {
    /// A sim route playing the route's profile.
    pub fn new(route: &Route) -> Self {
        let profile = Profile::named(&route.sim.profile)
            .unwrap_or_else(|| Profile::named("healthy").expect("built in"));
        Self::with_profile(route, profile)
    }

    /// A sim route that plays `profile` instead of the route's named one (`warden
    /// simulate` with `--profile` or a profile fitted from a trace).
    pub(crate) fn with_profile(route: &Route, profile: Profile) -> Self {
        SimProvider {
            profile,
            route: route.clone(),
            seen: Mutex::new(HashMap::new()),
            draw_fn: None,
            load: LoadState::new(profile.load, route.sim.capacity, route.sim.time_scale),
        }
    }

    /// A sim route whose draws come from `f` instead of the profile.
    pub fn with_draws(
        route: &Route,
        f: impl Fn(&AttemptRequest, u64) -> Draw + Send + Sync + 'static,
    ) -> Self {
        SimProvider {
            draw_fn: Some(Box::new(f)),
            ..SimProvider::new(route)
        }
    }

    fn draw(&self, req: &AttemptRequest) -> Draw {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        req.prompt.user.hash(&mut h);
        req.prompt.system.hash(&mut h);
        let key = h.finish();
        let n = {
            let mut seen = self.seen.lock().expect("sim lock");
            let n = seen.entry(key).or_insert(0);
            *n += 1;
            *n
        };
        if let Some(f) = &self.draw_fn {
            return f(req, n);
        }
        let seed = key
            ^ self.route.sim.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ n.wrapping_mul(0xD1B5_4A32_D192_ED03);
        Draw::sample(&self.profile, &mut SmallRng::seed_from_u64(seed))
    }

    fn real(&self, minutes: f64) -> Duration {
        Duration::from_secs_f64((minutes * 60.0 / self.route.sim.time_scale).max(0.0))
    }

    async fn run(&self, req: &AttemptRequest) -> Attempt {
        let limits = &req.limits;
        let mut record =
            AttemptRecord::new(&self.route.name, "sim", &self.route.model, limits.total);
        let quick = self.real(0.02).min(Duration::from_millis(200));
        // The route's load decides first: a refusal is the same 429 as a drawn one.
        let (draw, _slot) = match self.load.admit() {
            Admit::Refuse { retry_after_s } => (Draw::RateLimited { retry_after_s }, None),
            Admit::Serve { slow, slot } => (self.draw(req).slowed(slow), Some(slot)),
        };
        let mut answered = None;
        let result = match draw {
            Draw::Hang => Err(no_token(&mut record, limits).await),
            Draw::Fast503 => {
                wait(&mut record, quick, Some(503)).await;
                let f = Failure::new(
                    Outcome::Unavailable,
                    "503 provider unavailable (sim: flaky)",
                );
                Err(f)
            }
            Draw::RateLimited { retry_after_s } => {
                wait(&mut record, quick, Some(429)).await;
                let mut f = Failure::new(Outcome::RateLimited, "429 rate limited (sim)");
                let wait = retry_after_s / self.route.sim.time_scale;
                f.retry_after = Some(Duration::from_secs_f64(wait));
                f.backpressure = true;
                Err(f)
            }
            Draw::SlowError { minutes } => Err(self.slow_error(&mut record, limits, minutes).await),
            Draw::Answer { minutes } => match self.answer(&mut record, req, minutes).await {
                Ok((turn, result)) => {
                    answered = Some(turn);
                    result
                }
                Err(f) => Err(f),
            },
        };
        if record.headers.is_none() && record.http_status.is_some() {
            record.headers = Some(record.duration);
        }
        if record.http_status.is_some() {
            // A `paced` route's headers, as they stand when the answer arrives.
            record.rate_limit = self.load.headers().map(Box::new);
        }
        let attempt = super::finish(record, result, None);
        match answered {
            Some(a) => a.into_attempt(attempt),
            None => attempt,
        }
    }

    /// A provider error after `minutes`, unless the first-token clock runs out first.
    async fn slow_error(
        &self,
        record: &mut AttemptRecord,
        limits: &Limits,
        minutes: f64,
    ) -> Failure {
        let at = self.real(minutes);
        if at > limits.first_token.min(limits.total) {
            return no_token(record, limits).await;
        }
        wait(record, at, Some(502)).await;
        Failure::new(
            Outcome::Unavailable,
            format!(
                "502 provider error after {} (sim)",
                crate::config::format_duration(at)
            ),
        )
    }

    /// An answer after `minutes` (its first token after a quarter of that), within the
    /// attempt's clocks; its findings come from the heuristics.
    async fn answer(
        &self,
        record: &mut AttemptRecord,
        req: &AttemptRequest,
        minutes: f64,
    ) -> Result<(Answered, Result<Option<findings::Extracted>, Failure>), Failure> {
        let limits = &req.limits;
        let total = self.real(minutes);
        let ttft = total / 4;
        if ttft > limits.first_token.min(limits.total) {
            return Err(no_token(record, limits).await);
        }
        record.ttft = Some(ttft);
        record.first_content = Some(ttft);
        if total > limits.total {
            wait(record, limits.total, None).await;
            return Err(Failure::timeout(Stage::Total, limits));
        }
        wait(record, total, Some(200)).await;
        record.headers = Some(Duration::ZERO);
        record.model_answered = Some(self.route.model.clone());
        let turn = super::sim_tools::respond(req, heuristics::findings(&req.prompt));
        let answer_len =
            turn.text.len() + turn.calls.iter().map(|c| c.arguments.len()).sum::<usize>();
        record.bytes = answer_len as u64;
        record.usage = Some(Usage {
            input_tokens: Some((req.prompt.chars() / 4) as u64),
            output_tokens: Some((answer_len / 4) as u64),
            cost: None,
            ..Usage::default()
        });
        let mut answered = Answered::new(turn.text, turn.calls, Some(turn.finish), req);
        let result = answered.findings(req, findings::DEFAULT_MAX_FINDINGS_PER_ANSWER);
        Ok((answered, result))
    }
}

/// Sleeps `d` (simulated work) and records it, with the HTTP status the call would end with.
async fn wait(record: &mut AttemptRecord, d: Duration, status: Option<u16>) {
    tokio::time::sleep(d).await;
    record.duration = d;
    record.http_status = status;
}

/// No token before the first-token clock (or the whole deadline, if shorter) runs out.
async fn no_token(record: &mut AttemptRecord, limits: &Limits) -> Failure {
    let first = limits.first_token.min(limits.total);
    wait(record, first, None).await;
    let stage = if first >= limits.total {
        Stage::Total
    } else {
        Stage::FirstToken
    };
    Failure::timeout(stage, limits)
}

impl Provider for SimProvider {
    fn route(&self) -> &str {
        &self.route.name
    }

    fn kind(&self) -> &'static str {
        "sim"
    }

    fn model(&self) -> &str {
        &self.route.model
    }

    fn attempt<'a>(&'a self, req: &'a AttemptRequest) -> AttemptFuture<'a> {
        Box::pin(self.run(req))
    }
}

/// The sim's "model": a few line heuristics over the added lines of the prompt's chunk.
mod heuristics {
    use crate::prompt::Prompt;
    use serde_json::json;

    struct Rule {
        security: bool,
        severity: &'static str,
        title: &'static str,
        description: &'static str,
        matches: fn(&str) -> bool,
    }

    const RULES: &[Rule] = &[
        Rule {
            security: true,
            severity: "high",
            title: "SQL query built by string concatenation",
            description: "User input concatenated into SQL allows injection; use bound parameters.",
            matches: |l| {
                let u = l.to_ascii_uppercase();
                (u.contains("SELECT ")
                    || u.contains("INSERT ")
                    || u.contains("UPDATE ")
                    || u.contains("DELETE "))
                    && (l.contains("\" +")
                        || l.contains("+ \"")
                        || l.contains("format!(")
                        || l.contains("f\"")
                        || l.contains("${"))
            },
        },
        Rule {
            security: true,
            severity: "high",
            title: "Shell command built from a variable",
            description: "A command run through the shell with interpolated input allows command injection; pass arguments as a list.",
            matches: |l| {
                (l.contains("shell=True") || l.contains("os.system(") || l.contains("exec("))
                    && (l.contains('+') || l.contains("${") || l.contains("f\""))
            },
        },
        Rule {
            security: true,
            severity: "high",
            title: "Hard-coded secret",
            description: "A credential in source code leaks through the repository; read it from the environment or a secret store.",
            matches: |l| {
                let low = l.to_ascii_lowercase();
                ["password =", "passwd =", "secret =", "api_key =", "token ="]
                    .iter()
                    .any(|k| low.contains(k))
                    && (l.contains("= \"") || l.contains("= '"))
            },
        },
        Rule {
            security: true,
            severity: "medium",
            title: "HTML assigned without sanitizing",
            description: "Assigning untrusted HTML to innerHTML allows cross-site scripting.",
            matches: |l| l.contains("innerHTML ="),
        },
        Rule {
            security: false,
            severity: "medium",
            title: "unwrap() can panic on bad input",
            description: "This unwrap() turns a missing file or malformed value into a crash; return an error instead.",
            matches: |l| l.contains(".unwrap()"),
        },
        Rule {
            security: false,
            severity: "info",
            title: "Unfinished work left in a TODO",
            description: "A TODO in new code marks a known gap; track it or finish it.",
            matches: |l| l.contains("TODO") || l.contains("FIXME"),
        },
    ];

    /// Answers with the JSON contract, as a model would.
    #[cfg(test)]
    pub fn review(prompt: &Prompt) -> String {
        format!("```json\n{}\n```", findings(prompt))
    }

    /// The findings object the sim's model finds in the prompt's chunk.
    pub fn findings(prompt: &Prompt) -> serde_json::Value {
        // "running the review skill `x`" or "running the review skills `a`, `b` in one pass".
        let head = prompt.system.lines().next().unwrap_or("");
        let skills: Vec<&str> = head.split('`').skip(1).step_by(2).collect();
        let consolidated = skills.len() > 1;
        // A skill gets the security rules unless it is code-review, and the code rules
        // unless it is security-review; in one pass each rule goes to one skill.
        let security_skill = skills.iter().find(|s| **s != "code-review").copied();
        let code_skill = skills.iter().find(|s| **s != "security-review").copied();
        let mut findings = Vec::new();
        for line in prompt.user.lines() {
            let Some((num, text)) = added_line(line) else {
                continue;
            };
            for r in RULES {
                let owner = if r.security {
                    security_skill
                } else {
                    code_skill
                };
                let Some(owner) = owner else { continue };
                if (r.matches)(text) {
                    let mut f = json!({
                        "severity": r.severity,
                        "confidence": "high",
                        "title": r.title,
                        "description": r.description,
                        "line": num,
                    });
                    if consolidated {
                        f["skill"] = json!(owner);
                    }
                    findings.push(f);
                }
            }
        }
        json!({ "findings": findings })
    }

    /// `   12 + text` → (12, text).
    fn added_line(line: &str) -> Option<(u32, &str)> {
        let t = line.trim_start();
        let (num, rest) = t.split_once(' ')?;
        let num: u32 = num.parse().ok()?;
        let text = rest.strip_prefix("+ ")?;
        Some((num, text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::Prompt;

    #[test]
    fn slow_tail_matches_its_reference_percentiles() {
        let p = Profile::named("slow-tail").unwrap();
        let mut rng = SmallRng::seed_from_u64(7);
        let mut ok: Vec<f64> = Vec::new();
        let mut errors = 0;
        for _ in 0..20_000 {
            match Draw::sample(&p, &mut rng) {
                Draw::Answer { minutes } => ok.push(minutes),
                Draw::SlowError { .. } => errors += 1,
                other => panic!("{other:?}"),
            }
        }
        ok.sort_by(f64::total_cmp);
        let q = |x: f64| ok[(x * (ok.len() - 1) as f64) as usize];
        assert!((q(0.5) - 1.5).abs() < 0.1, "median {}", q(0.5));
        assert!((q(0.95) - 6.2).abs() < 0.6, "p95 {}", q(0.95));
        assert!(ok.iter().all(|m| *m <= 45.0));
        let share = errors as f64 / 20_000.0;
        assert!((share - 0.03).abs() < 0.006, "{share}");
    }

    #[test]
    fn heuristics_find_the_demo_problems_by_skill() {
        let prompt = Prompt {
            system: "running the review skill `security-review`.".into(),
            user: "    18 +     query = \"SELECT id FROM users WHERE name = '\" + term + \"'\"\n    19 +     x = a.unwrap()\n".into(),
        };
        let answer = heuristics::review(&prompt);
        let e = findings::extract(&answer, 1, 100).unwrap();
        assert_eq!(e.findings.len(), 1);
        assert_eq!(e.findings[0].line, 18);
    }
}

#[cfg(test)]
#[path = "sim_played_tests.rs"]
mod played;
