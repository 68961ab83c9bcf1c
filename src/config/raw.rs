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
    /// Unknown keys are errors instead of warnings (as `--strict-config`).
    pub strict_config: Option<bool>,
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
    /// Warden's earlier layout: `[[triggers]]` name the skills to run.
    #[serde(default)]
    pub triggers: Vec<RawTrigger>,
    pub cache: Option<RawCache>,
    pub fleet: Option<RawFleet>,
    pub publish: Option<RawPublish>,
    /// `[[instructions]]`: repository guidance for the files `paths` matches.
    #[serde(default)]
    pub instructions: Vec<RawInstruction>,
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
    /// Warden's agent turn cap: the tool loop's `maxTurns` (docs/design.md §14).
    pub max_turns: Option<S<u32>>,
    pub agent: Option<RawAgent>,
    pub verification: Option<RawVerification>,
    /// Warden's earlier layout: thresholds under `[defaults.output]`.
    pub output: Option<RawOutput>,
    /// Warden's earlier layout: include/exclude globs for every skill.
    pub filters: Option<RawFilters>,
    #[serde(default)]
    pub scan: RawScan,
    #[serde(default)]
    pub chunking: RawChunking,
}

/// `[defaults.output]` / `[triggers.output]` of Warden's earlier layout.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawOutput {
    pub fail_on: Option<S<String>>,
    /// The lowest severity shown: our `reportOn`.
    pub comment_on: Option<S<String>>,
    pub max_findings: Option<u32>,
}

/// `[defaults.filters]` / `[triggers.filters]` of Warden's earlier layout.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawFilters {
    pub paths: Option<S<Vec<String>>>,
    pub ignore_paths: Option<S<Vec<String>>>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct RawIgnore {
    pub paths: Option<S<Vec<String>>>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct RawAgent {
    pub model: Option<S<String>>,
    /// Warden's agent turn cap: the tool loop's `maxTurns`.
    #[serde(rename = "maxTurns")]
    pub max_turns: Option<S<u32>>,
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
    /// Warden's chunking switch: `false` reviews whole files.
    pub enabled: Option<bool>,
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
    /// Warden's per-skill model: warned about (routes choose models here).
    pub model: Option<S<String>>,
    /// The routes this skill may use, in order.
    pub routes: Option<S<Vec<String>>>,
    /// Skills marked `consolidate = true` share one request per chunk.
    pub consolidate: Option<bool>,
    pub remote: Option<String>,
    pub triggers: Option<Vec<RawSkillTrigger>>,
    /// Warden's earlier layout: an inline skill defined in the config.
    pub description: Option<String>,
    pub prompt: Option<S<String>>,
    /// The skill's tools (its front matter's `allowed-tools` otherwise), docs/design.md §14.
    pub tools: Option<S<toml::Value>>,
    /// The skill's turn cap.
    pub max_turns: Option<S<u32>>,
}

/// `[[triggers]]` of Warden's earlier layout: run `skill` on `event` with `actions`.
#[derive(Debug, Deserialize)]
pub(crate) struct RawTrigger {
    pub name: Option<String>,
    pub event: Option<S<String>>,
    pub actions: Option<Vec<String>>,
    pub skill: S<String>,
    pub filters: Option<RawFilters>,
    pub output: Option<RawOutput>,
    pub model: Option<S<String>>,
    /// Warden's agent turn cap for this trigger's skill.
    #[serde(rename = "maxTurns")]
    pub max_turns: Option<S<u32>>,
}

/// `[[skills.triggers]]` of the newer layout.
#[derive(Debug, Deserialize)]
pub(crate) struct RawSkillTrigger {
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
    pub max_bounces: Option<S<u32>>,
    pub routing: Option<S<String>>,
    pub cost_budget: Option<S<f64>>,
    pub max_findings_per_answer: Option<S<u32>>,
    /// The tool loop (docs/design.md §14): every skill (`true`), none (`false`), or the
    /// skills that list tools (unset).
    pub tools: Option<bool>,
    pub max_turns: Option<S<u32>>,
    pub max_tool_calls: Option<S<u32>>,
    /// A size such as "32KiB" or a number of bytes.
    pub tool_result_bytes: Option<S<toml::Value>>,
    pub tool_bytes_per_unit: Option<S<toml::Value>>,
    pub tool_deny: Option<S<Vec<String>>>,
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
    /// A whole number, or `"auto"` (see `routes::max_concurrency`).
    pub max_concurrency: Option<S<toml::Value>>,
    pub stream: Option<bool>,
    pub base_url: Option<S<String>>,
    pub max_tokens: Option<S<u32>>,
    /// The most a cut answer's one retry may ask for (docs/design.md §14).
    pub max_tokens_ceiling: Option<S<u32>>,
    /// A PEM file of CA certificates this route's endpoint is trusted by.
    pub ca_cert: Option<S<String>>,
    /// sim only: latency/fault profile name.
    pub profile: Option<S<String>>,
    /// sim only: how many times faster than real time the profile plays.
    pub time_scale: Option<S<f64>>,
    /// sim only: seed for repeatable runs.
    pub seed: Option<u64>,
    /// sim only: N of the `limited`, `paced` and `saturating` profiles.
    pub capacity: Option<S<u32>>,
    /// Under spillover routing: false keeps new units off this route (failovers only).
    pub spill: Option<bool>,
    /// USD per million input tokens.
    pub input_price: Option<S<f64>>,
    /// USD per million output tokens.
    pub output_price: Option<S<f64>>,
    /// Attempts in flight across every warden process sharing `[fleet] redis`.
    pub fleet_max_concurrency: Option<S<u32>>,
    /// USD per million input tokens read from the prompt cache.
    pub cached_input_price: Option<S<f64>>,
    /// USD per million input tokens written to the prompt cache.
    pub cache_write_price: Option<S<f64>>,
    /// OpenAI's `reasoning_effort` (OpenRouter: `reasoning.effort`).
    pub reasoning_effort: Option<S<String>>,
    /// A table merged into every request body.
    pub params: Option<S<toml::Value>>,
    /// `"auto"` or `"off"`.
    pub structured_output: Option<S<String>>,
    /// The model's context window, tokens.
    pub context_window: Option<S<u32>>,
}

/// `[cache]`: the result cache (see `crate::cache`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawCache {
    pub enabled: Option<bool>,
    pub dir: Option<S<String>>,
    /// A size such as "256MiB" or a number of bytes.
    pub max_size: Option<S<toml::Value>>,
    pub max_age: Option<S<String>>,
}

/// `[fleet]`: route health and capacity shared through Redis (see `crate::fleet`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawFleet {
    pub redis: Option<S<String>>,
    pub password_env: Option<S<String>>,
    pub namespace: Option<S<String>>,
    pub cache: Option<bool>,
}

/// `[publish]`: how `warden publish` writes the review onto the pull request.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawPublish {
    pub token_env: Option<S<String>>,
    pub request_changes: Option<bool>,
    /// `true`, `false` or `"report"`.
    pub resolve: Option<S<toml::Value>>,
    pub max_resolve: Option<S<i64>>,
}

/// `[[instructions]]`: guidance for the files `paths` matches (every file without it).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawInstruction {
    pub paths: Option<S<Vec<String>>>,
    pub text: Option<S<String>>,
    pub file: Option<S<String>>,
}
