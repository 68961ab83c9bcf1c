//! `warden review` on a temp repository against fakes, for the tests of hostile
//! providers: a route per fake, the real binary, the JSON report read back.

use super::Repo;
use serde_json::Value;
use std::time::{Duration, Instant};

pub const KEY_VAR: &str = "WARDEN_HOSTILE_KEY";
pub const KEY: &str = "sk-hostile-canary-0123456789";

/// One `[[routes]]` entry pointing at a fake.
pub struct RouteCfg<'a> {
    pub name: &'a str,
    pub provider: &'a str,
    pub base: String,
    pub stream: bool,
    /// Extra `key = value` lines, as TOML.
    pub extra: &'a str,
}

pub fn route_cfg<'a>(name: &'a str, provider: &'a str, base: String, stream: bool) -> RouteCfg<'a> {
    RouteCfg {
        name,
        provider,
        base,
        stream,
        extra: "",
    }
}

/// A repository with `files` changed files, and a config outside it.
pub struct Review {
    pub repo: Repo,
    pub cfg: tempfile::TempDir,
}

impl Review {
    pub fn new(files: usize) -> Review {
        let repo = super::repo_with_changed_files(files);
        Review {
            repo,
            cfg: tempfile::tempdir().unwrap(),
        }
    }

    /// Writes the config: `[execution]` keys, then the routes in failover order.
    pub fn config(&self, exec: &[(&str, &str)], routes: &[RouteCfg]) -> &Self {
        let mut text = String::from("version = 1\n[execution]\n");
        for (k, v) in exec {
            text.push_str(&format!("{k} = \"{v}\"\n"));
        }
        for r in routes {
            text.push_str(&format!(
                "[[routes]]\nname = \"{}\"\nprovider = \"{}\"\nmodel = \"{}\"\nbaseUrl = \"{}\"\napiKeyEnv = \"{KEY_VAR}\"\nmaxConcurrency = 1\nstream = {}\n{}\n",
                r.name, r.provider, r.name, r.base, r.stream, r.extra
            ));
        }
        std::fs::write(self.config_path(), text).unwrap();
        self
    }

    pub fn config_path(&self) -> std::path::PathBuf {
        self.cfg.path().join("warden.toml")
    }

    /// The real binary: `review -c CONFIG --skill code-review ARGS`, with the key set.
    pub fn command(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("warden"));
        cmd.current_dir(self.repo.path())
            .args(["review", "--skill", "code-review", "-c"])
            .arg(self.config_path())
            .args(args)
            .env(KEY_VAR, KEY)
            .env_remove("GITHUB_STEP_SUMMARY")
            .env_remove("SSL_CERT_FILE")
            .env_remove("SSL_CERT_DIR")
            .env_remove("NO_COLOR")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            // Each run its own empty result cache, as `support::warden()` gives.
            .env("WARDEN_CACHE_DIR", super::fresh_cache_dir());
        for ci in [
            "CI",
            "GITHUB_SERVER_URL",
            "GITHUB_REPOSITORY",
            "GITHUB_SHA",
            "GITHUB_HEAD_REF",
            "GITHUB_REF_NAME",
        ] {
            cmd.env_remove(ci);
        }
        for proxy in [
            "HTTPS_PROXY",
            "https_proxy",
            "HTTP_PROXY",
            "http_proxy",
            "ALL_PROXY",
            "all_proxy",
            "NO_PROXY",
            "no_proxy",
        ] {
            cmd.env_remove(proxy);
        }
        cmd
    }

    /// Runs `review --json`, returning the exit code, the report, stderr and the wall time.
    pub fn json(&self, args: &[&str]) -> (i32, Value, String, Duration) {
        let started = Instant::now();
        let out = self
            .command(&[&["--json"], args].concat())
            .output()
            .unwrap();
        let took = started.elapsed();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!stderr.contains("panicked"), "{stderr}");
        let v: Value =
            serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
        (out.status.code().unwrap_or(-1), v, stderr, took)
    }
}

pub fn units(v: &Value) -> &Vec<Value> {
    v["units"].as_array().unwrap()
}

pub fn attempts(v: &Value) -> Vec<&Value> {
    units(v)
        .iter()
        .flat_map(|u| u["attempts"].as_array().unwrap())
        .collect()
}

/// The one attempt of the report's first unit, asserting that the unit `failed` on it as
/// a `bad_response` without a retry.
pub fn lone_bad_response<'a>(v: &'a Value, label: &str) -> &'a Value {
    let u = &units(v)[0];
    assert_eq!(u["status"], "failed", "{label}: {u}");
    let a = u["attempts"].as_array().unwrap();
    assert_eq!(a.len(), 1, "{label}: not retried: {u}");
    assert_eq!(a[0]["outcome"], "bad_response", "{label}");
    &a[0]
}

/// Both protocols, streaming and not: the four ways a route talks to a provider.
pub const EVERY_WIRE: [(&str, bool); 4] = [
    ("openai", true),
    ("anthropic", true),
    ("openai", false),
    ("anthropic", false),
];

impl Review {
    /// `review --json` with one route (`model` at `base`) and 20 s / 10 s budgets.
    pub fn one_route(
        &self,
        model: &str,
        provider: &str,
        base: String,
        stream: bool,
    ) -> (i32, Value, String) {
        self.config(
            &[("reviewBudget", "20s"), ("hunkBudget", "10s")],
            &[route_cfg(model, provider, base, stream)],
        );
        let (code, v, stderr, _) = self.json(&[]);
        (code, v, stderr)
    }
}
