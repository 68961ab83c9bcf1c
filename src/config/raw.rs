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
    pub(crate) version: Option<S<i64>>,
    /// Unknown keys are errors instead of warnings (as `--strict-config`).
    pub(crate) strict_config: Option<bool>,
    #[serde(default)]
    pub(crate) defaults: RawDefaults,
    #[serde(default)]
    pub(crate) skills: Vec<RawSkill>,
    #[serde(default)]
    pub(crate) runner: RawRunner,
    #[serde(default)]
    pub(crate) execution: RawExecution,
    #[serde(default)]
    pub(crate) routes: Vec<RawRoute>,
    /// Warden's earlier layout: `[[triggers]]` name the skills to run.
    #[serde(default)]
    pub(crate) triggers: Vec<RawTrigger>,
    pub(crate) cache: Option<RawCache>,
    pub(crate) fleet: Option<RawFleet>,
    pub(crate) publish: Option<RawPublish>,
    /// `[[instructions]]`: repository guidance for the files `paths` matches.
    #[serde(default)]
    pub(crate) instructions: Vec<RawInstruction>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawDefaults {
    pub(crate) fail_on: Option<S<String>>,
    pub(crate) report_on: Option<S<String>>,
    pub(crate) min_confidence: Option<S<String>>,
    pub(crate) max_findings: Option<u32>,
    pub(crate) ignore_paths: Option<S<Vec<String>>>,
    pub(crate) ignore: Option<RawIgnore>,
    pub(crate) default_branch: Option<String>,
    pub(crate) model: Option<S<String>>,
    /// Warden's agent turn cap: the tool loop's `maxTurns` (docs/design.md §14).
    pub(crate) max_turns: Option<S<u32>>,
    pub(crate) agent: Option<RawAgent>,
    pub(crate) verification: Option<RawVerification>,
    /// Warden's earlier layout: thresholds under `[defaults.output]`.
    pub(crate) output: Option<RawOutput>,
    /// Warden's earlier layout: include/exclude globs for every skill.
    pub(crate) filters: Option<RawFilters>,
    #[serde(default)]
    pub(crate) scan: RawScan,
    #[serde(default)]
    pub(crate) chunking: RawChunking,
}

/// `[defaults.output]` / `[triggers.output]` of Warden's earlier layout.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawOutput {
    pub(crate) fail_on: Option<S<String>>,
    /// The lowest severity shown: our `reportOn`.
    pub(crate) comment_on: Option<S<String>>,
    pub(crate) max_findings: Option<u32>,
}

/// `[defaults.filters]` / `[triggers.filters]` of Warden's earlier layout.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawFilters {
    pub(crate) paths: Option<S<Vec<String>>>,
    pub(crate) ignore_paths: Option<S<Vec<String>>>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct RawIgnore {
    pub(crate) paths: Option<S<Vec<String>>>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct RawAgent {
    pub(crate) model: Option<S<String>>,
    /// Warden's agent turn cap: the tool loop's `maxTurns`.
    #[serde(rename = "maxTurns")]
    pub(crate) max_turns: Option<S<u32>>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct RawVerification {
    pub(crate) enabled: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawScan {
    pub(crate) max_files: Option<u32>,
    pub(crate) max_changed_lines: Option<u32>,
    pub(crate) max_file_bytes: Option<u64>,
    pub(crate) max_file_lines: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawChunking {
    /// Warden's chunking switch: `false` reviews whole files.
    pub(crate) enabled: Option<bool>,
    pub(crate) file_patterns: Option<Vec<RawFilePattern>>,
    #[serde(default)]
    pub(crate) coalesce: RawCoalesce,
    pub(crate) max_context_files: Option<u32>,
    pub(crate) context_lines: Option<u32>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RawFilePattern {
    pub(crate) pattern: S<String>,
    pub(crate) mode: S<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawCoalesce {
    pub(crate) enabled: Option<bool>,
    pub(crate) max_gap_lines: Option<u32>,
    pub(crate) max_chunk_size: Option<S<u32>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawSkill {
    pub(crate) name: S<String>,
    pub(crate) paths: Option<S<Vec<String>>>,
    pub(crate) ignore_paths: Option<S<Vec<String>>>,
    pub(crate) fail_on: Option<S<String>>,
    pub(crate) report_on: Option<S<String>>,
    pub(crate) min_confidence: Option<S<String>>,
    pub(crate) max_findings: Option<u32>,
    /// Warden's per-skill model: warned about (routes choose models here).
    pub(crate) model: Option<S<String>>,
    /// The routes this skill may use, in order.
    pub(crate) routes: Option<S<Vec<String>>>,
    /// Skills marked `consolidate = true` share one request per chunk.
    pub(crate) consolidate: Option<bool>,
    pub(crate) remote: Option<String>,
    pub(crate) triggers: Option<Vec<RawSkillTrigger>>,
    /// Warden's earlier layout: an inline skill defined in the config.
    pub(crate) description: Option<String>,
    pub(crate) prompt: Option<S<String>>,
    /// The skill's tools (its front matter's `allowed-tools` otherwise), docs/design.md §14.
    pub(crate) tools: Option<S<toml::Value>>,
    /// The skill's turn cap.
    pub(crate) max_turns: Option<S<u32>>,
}

/// `[[triggers]]` of Warden's earlier layout: run `skill` on `event` with `actions`.
#[derive(Debug, Deserialize)]
pub(crate) struct RawTrigger {
    pub(crate) name: Option<String>,
    pub(crate) event: Option<S<String>>,
    pub(crate) actions: Option<Vec<String>>,
    pub(crate) skill: S<String>,
    pub(crate) filters: Option<RawFilters>,
    pub(crate) output: Option<RawOutput>,
    pub(crate) model: Option<S<String>>,
    /// Warden's agent turn cap for this trigger's skill.
    #[serde(rename = "maxTurns")]
    pub(crate) max_turns: Option<S<u32>>,
}

/// `[[skills.triggers]]` of the newer layout.
#[derive(Debug, Deserialize)]
pub(crate) struct RawSkillTrigger {
    #[serde(rename = "type")]
    pub(crate) kind: Option<String>,
    /// Warden's GitHub event filters: parsed so they do not warn twice; unused.
    #[allow(dead_code)]
    pub(crate) actions: Option<Vec<String>>,
    #[allow(dead_code)]
    pub(crate) draft: Option<bool>,
    #[allow(dead_code)]
    pub(crate) labels: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct RawRunner {
    pub(crate) concurrency: Option<S<u32>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawExecution {
    pub(crate) review_budget: Option<S<String>>,
    pub(crate) hunk_budget: Option<S<String>>,
    pub(crate) request_timeout: Option<S<String>>,
    pub(crate) connect_timeout: Option<S<String>>,
    pub(crate) first_token_timeout: Option<S<String>>,
    pub(crate) idle_timeout: Option<S<String>>,
    pub(crate) max_attempts: Option<S<u32>>,
    pub(crate) max_bounces: Option<S<u32>>,
    pub(crate) routing: Option<S<String>>,
    pub(crate) cost_budget: Option<S<f64>>,
    pub(crate) max_findings_per_answer: Option<S<u32>>,
    /// The tool loop (docs/design.md §14): every skill (`true`), none (`false`), or the
    /// skills that list tools (unset).
    pub(crate) tools: Option<bool>,
    pub(crate) max_turns: Option<S<u32>>,
    pub(crate) max_tool_calls: Option<S<u32>>,
    /// A size such as "32KiB" or a number of bytes.
    pub(crate) tool_result_bytes: Option<S<toml::Value>>,
    pub(crate) tool_bytes_per_unit: Option<S<toml::Value>>,
    pub(crate) tool_deny: Option<S<Vec<String>>>,
    #[serde(default)]
    pub(crate) breaker: RawBreaker,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawBreaker {
    pub(crate) window: Option<S<String>>,
    pub(crate) min_calls: Option<S<u32>>,
    pub(crate) failure_rate: Option<S<f64>>,
    pub(crate) open_for: Option<S<String>>,
    pub(crate) half_open_probes: Option<S<u32>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawRoute {
    pub(crate) name: S<String>,
    pub(crate) provider: S<String>,
    pub(crate) model: Option<S<String>>,
    pub(crate) api_key_env: Option<S<String>>,
    /// A whole number, or `"auto"` (see `routes::max_concurrency`).
    pub(crate) max_concurrency: Option<S<toml::Value>>,
    pub(crate) stream: Option<bool>,
    pub(crate) base_url: Option<S<String>>,
    pub(crate) max_tokens: Option<S<u32>>,
    /// The most a cut answer's one retry may ask for (docs/design.md §14).
    pub(crate) max_tokens_ceiling: Option<S<u32>>,
    /// A PEM file of CA certificates this route's endpoint is trusted by.
    pub(crate) ca_cert: Option<S<String>>,
    /// sim only: latency/fault profile name.
    pub(crate) profile: Option<S<String>>,
    /// sim only: how many times faster than real time the profile plays.
    pub(crate) time_scale: Option<S<f64>>,
    /// sim only: seed for repeatable runs.
    pub(crate) seed: Option<u64>,
    /// sim only: N of the `limited`, `paced` and `saturating` profiles.
    pub(crate) capacity: Option<S<u32>>,
    /// Under spillover routing: false keeps new units off this route (failovers only).
    pub(crate) spill: Option<bool>,
    /// USD per million input tokens.
    pub(crate) input_price: Option<S<f64>>,
    /// USD per million output tokens.
    pub(crate) output_price: Option<S<f64>>,
    /// Attempts in flight across every warden process sharing `[fleet] redis`.
    pub(crate) fleet_max_concurrency: Option<S<u32>>,
    /// USD per million input tokens read from the prompt cache.
    pub(crate) cached_input_price: Option<S<f64>>,
    /// USD per million input tokens written to the prompt cache.
    pub(crate) cache_write_price: Option<S<f64>>,
    /// OpenAI's `reasoning_effort` (OpenRouter: `reasoning.effort`).
    pub(crate) reasoning_effort: Option<S<String>>,
    /// A table merged into every request body.
    pub(crate) params: Option<S<toml::Value>>,
    /// `"auto"` or `"off"`.
    pub(crate) structured_output: Option<S<String>>,
    /// The model's context window, tokens.
    pub(crate) context_window: Option<S<u32>>,
}

/// `[cache]`: the result cache (see `crate::cache`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawCache {
    pub(crate) enabled: Option<bool>,
    pub(crate) dir: Option<S<String>>,
    /// A size such as "256MiB" or a number of bytes.
    pub(crate) max_size: Option<S<toml::Value>>,
    pub(crate) max_age: Option<S<String>>,
}

/// `[fleet]`: route health and capacity shared through Redis (see `crate::fleet`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawFleet {
    pub(crate) redis: Option<S<String>>,
    pub(crate) password_env: Option<S<String>>,
    pub(crate) namespace: Option<S<String>>,
    pub(crate) cache: Option<bool>,
}

/// `[publish]`: how `warden publish` writes the review onto the pull request.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawPublish {
    pub(crate) token_env: Option<S<String>>,
    pub(crate) request_changes: Option<bool>,
    /// `true`, `false` or `"report"`.
    pub(crate) resolve: Option<S<toml::Value>>,
    pub(crate) max_resolve: Option<S<i64>>,
}

/// `[[instructions]]`: guidance for the files `paths` matches (every file without it).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawInstruction {
    pub(crate) paths: Option<S<Vec<String>>>,
    pub(crate) text: Option<S<String>>,
    pub(crate) file: Option<S<String>>,
}
