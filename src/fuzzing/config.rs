//! Config loading: any text gives validated settings or a typed config error that names
//! the file and a line and column inside the text; never a panic, never another error.

use crate::config::{self, Beside, MAX_DURATION, Settings};
use crate::error::Error;
use std::path::Path;
use std::time::Duration;

/// Parses `data` as a `warden.toml` and checks the result.
pub fn check(data: &[u8]) {
    // load() refuses non-UTF-8 before parsing; the lossy text still exercises the parser.
    let text = String::from_utf8_lossy(data);
    let path = Path::new("fuzz/warden.toml");
    // Files the config names (`caCert`) are read from an empty commit, not from this
    // machine's disk.
    let read = |_: &str| -> crate::Result<Option<Vec<u8>>> { Ok(None) };
    let shown = |p: &str| Path::new(p).to_path_buf();
    let beside = Beside::Commit {
        dir: String::new(),
        read: &read,
        shown: &shown,
    };
    match config::parse_str_beside(&text, path, &beside) {
        Ok(s) => settings_are_valid(&s, path),
        Err(e) => {
            let shown = e.to_string();
            match e {
                Error::Config {
                    path: p,
                    line,
                    column,
                    message,
                } => {
                    assert_eq!(p, path, "error names another file");
                    let lines = text.split('\n').count();
                    assert!((1..=lines).contains(&line), "line {line} of {lines}");
                    assert!(column >= 1, "column {column}");
                    assert!(!message.trim().is_empty(), "empty message: {shown}");
                }
                Error::ConfigFile { path: p, message } => {
                    assert_eq!(p, path, "error names another file");
                    assert!(!message.trim().is_empty(), "empty message: {shown}");
                }
                other => panic!("config text gave a non-config error: {other}"),
            }
        }
    }
}

fn duration_ok(name: &str, d: Duration) {
    assert!(
        !d.is_zero() && d <= MAX_DURATION,
        "{name} = {d:?} passed validation"
    );
}

/// What resolve promises about settings it returns.
fn settings_are_valid(s: &Settings, path: &Path) {
    assert_eq!(s.config_path.as_deref(), Some(path));
    let e = &s.execution;
    for (name, d) in [
        ("reviewBudget", e.review_budget),
        ("hunkBudget", e.hunk_budget),
        ("requestTimeout", e.request_timeout),
        ("connectTimeout", e.connect_timeout),
        ("firstTokenTimeout", e.first_token_timeout),
        ("idleTimeout", e.idle_timeout),
        ("breaker.window", e.breaker.window),
        ("breaker.openFor", e.breaker.open_for),
    ] {
        duration_ok(name, d);
    }
    let b = &e.breaker;
    assert!(b.failure_rate > 0.0 && b.failure_rate <= 1.0, "{b:?}");
    assert!(e.max_attempts >= 1 && b.min_calls >= 1 && b.half_open_probes >= 1);
    for r in &s.routes {
        assert!(!r.name.is_empty() && r.name == r.name.trim(), "{r:?}");
        assert!(!r.model.trim().is_empty(), "{r:?}");
        assert!(r.max_concurrency >= 1 && r.max_tokens >= 1, "{r:?}");
        assert!(
            r.sim.time_scale >= 1.0 && r.sim.time_scale.is_finite(),
            "{r:?}"
        );
        if let Some(u) = &r.base_url {
            assert!(u.starts_with("http://") || u.starts_with("https://"), "{u}");
        }
    }
    for (i, k) in s.skills.iter().enumerate() {
        assert!(!k.name.is_empty(), "a skill entry without a name");
        assert!(
            s.skills[..i].iter().all(|o| o.name != k.name),
            "skill `{}` configured twice",
            k.name
        );
        for r in k.routes.iter().flatten() {
            assert!(
                s.routes.iter().any(|x| &x.name == r),
                "skill `{}` names route `{r}` that does not exist",
                k.name
            );
        }
    }
    for k in &s.inline_skills {
        assert!(!k.name.is_empty() && !k.prompt.trim().is_empty(), "{k:?}");
    }
    for w in &s.warnings {
        assert!(!w.trim().is_empty(), "empty warning");
    }
}
