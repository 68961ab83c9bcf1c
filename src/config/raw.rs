//! The TOML shape of `warden.toml`, exactly as written (camelCase, strings for
//! durations and levels). Nothing outside `config/` sees these types: `resolve.rs`
//! turns them into a validated [`super::Settings`]. Keys not declared here are
//! collected by serde_ignored and reported as warnings, never errors.

use serde::Deserialize;
use toml::Spanned;

pub(crate) type S<T> = Spanned<T>;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawConfig {
    pub version: Option<S<i64>>,
    #[serde(default)]
    pub defaults: RawDefaults,
    #[serde(default)]
    pub skills: Vec<RawSkill>,
    #[serde(default)]
    pub runner: RawRunner,
    #[serde(default)]
    pub execution: RawExecution,
    #[serde(default)]
    pub routes: Vec<RawRoute>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawDefaults {
    pub fail_on: Option<S<String>>,
    pub report_on: Option<S<String>>,
    pub min_confidence: Option<S<String>>,
    pub max_findings: Option<u32>,
    pub ignore_paths: Option<S<Vec<String>>>,
    pub ignore: Option<RawIgnore>,
    pub default_branch: Option<String>,
    pub model: Option<S<String>>,
    pub agent: Option<RawAgent>,
    pub verification: Option<RawVerification>,
    #[serde(default)]
    pub scan: RawScan,
    #[serde(default)]
    pub chunking: RawChunking,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct RawIgnore {
    pub paths: Option<S<Vec<String>>>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct RawAgent {
    pub model: Option<S<String>>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct RawVerification {
    pub enabled: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawScan {
    pub max_files: Option<u32>,
    pub max_changed_lines: Option<u32>,
    pub max_file_bytes: Option<u64>,
    pub max_file_lines: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawChunking {
    pub file_patterns: Option<Vec<RawFilePattern>>,
    #[serde(default)]
    pub coalesce: RawCoalesce,
    pub max_context_files: Option<u32>,
    pub context_lines: Option<u32>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RawFilePattern {
    pub pattern: S<String>,
    pub mode: S<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawCoalesce {
    pub enabled: Option<bool>,
    pub max_gap_lines: Option<u32>,
    pub max_chunk_size: Option<S<u32>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawSkill {
    pub name: S<String>,
    pub paths: Option<S<Vec<String>>>,
    pub ignore_paths: Option<S<Vec<String>>>,
    pub fail_on: Option<S<String>>,
    pub report_on: Option<S<String>>,
    pub min_confidence: Option<S<String>>,
    pub max_findings: Option<u32>,
    pub model: Option<String>,
    /// Skills marked `consolidate = true` share one request per chunk.
    pub consolidate: Option<bool>,
    pub remote: Option<String>,
    pub triggers: Option<Vec<RawTrigger>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RawTrigger {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Warden's GitHub event filters: parsed so they do not warn twice; unused.
    #[allow(dead_code)]
    pub actions: Option<Vec<String>>,
    #[allow(dead_code)]
    pub draft: Option<bool>,
    #[allow(dead_code)]
    pub labels: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct RawRunner {
    pub concurrency: Option<S<u32>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawExecution {
    pub review_budget: Option<S<String>>,
    pub hunk_budget: Option<S<String>>,
    pub request_timeout: Option<S<String>>,
    pub connect_timeout: Option<S<String>>,
    pub first_token_timeout: Option<S<String>>,
    pub idle_timeout: Option<S<String>>,
    pub max_attempts: Option<S<u32>>,
    #[serde(default)]
    pub breaker: RawBreaker,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawBreaker {
    pub window: Option<S<String>>,
    pub min_calls: Option<S<u32>>,
    pub failure_rate: Option<S<f64>>,
    pub open_for: Option<S<String>>,
    pub half_open_probes: Option<S<u32>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawRoute {
    pub name: S<String>,
    pub provider: S<String>,
    pub model: Option<S<String>>,
    pub api_key_env: Option<S<String>>,
    pub max_concurrency: Option<S<u32>>,
    pub stream: Option<bool>,
    pub base_url: Option<S<String>>,
    pub max_tokens: Option<S<u32>>,
    /// sim only: latency/fault profile name.
    pub profile: Option<S<String>>,
    /// sim only: how many times faster than real time the profile plays.
    pub time_scale: Option<S<f64>>,
    /// sim only: seed for repeatable runs.
    pub seed: Option<u64>,
}
