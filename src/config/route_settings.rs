//! A route's validated settings: the wire it speaks, its model, key variable, endpoint,
//! caps, prices and simulator options (what `[[routes]]` resolves to).

use std::path::PathBuf;

/// The wire a route speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// OpenAI Chat Completions.
    OpenAi,
    /// OpenRouter (the OpenAI wire).
    OpenRouter,
    /// Anthropic Messages.
    Anthropic,
    /// A LiteLLM proxy (OpenAI wire format) asked not to retry or fall back on its own.
    LiteLlm,
    /// The built-in simulator.
    Sim,
    /// llama.cpp's `llama-server` (OpenAI wire; slots and window from `/props`).
    LlamaCpp,
    /// Ollama's OpenAI-compatible endpoint (window from `/api/show`).
    Ollama,
    /// vLLM's OpenAI-compatible server (window from `/v1/models` `max_model_len`).
    Vllm,
}

/// One configured (provider, model, endpoint, key) in failover order. Holds the *name*
/// of the key's environment variable, never the key.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    /// Its name (unique; failover order is file order).
    pub name: String,
    /// The wire it speaks.
    pub provider: ProviderKind,
    /// The model asked for.
    pub model: String,
    /// The variable its key is read from.
    pub api_key_env: Option<String>,
    /// `maxConcurrency`: the ceiling of its bulkhead; the effective limit adapts under it.
    pub max_concurrency: usize,
    /// Whether `maxConcurrency = "auto"` was written (the ceiling is then
    /// [`AUTO_CONCURRENCY`]).
    pub auto_concurrency: bool,
    /// Server-sent events (false: one JSON answer).
    pub stream: bool,
    /// Its endpoint, when not the provider's own.
    pub base_url: Option<String>,
    /// The answer's token cap sent with each request.
    pub max_tokens: u32,
    /// `maxTokensCeiling`: the most a cut answer's one retry asks for (unset: twice
    /// `maxTokens`, so the retry doubles the cap; set it to the model's own output
    /// limit when that is lower).
    pub max_tokens_ceiling: Option<u32>,
    /// `caCert`: CA certificates trusted for this route, beside the built-in and
    /// system roots (a private CA, a TLS-inspecting proxy).
    pub ca_cert: Option<CaCert>,
    /// Options of the `sim` provider.
    pub sim: SimOptions,
    /// Under `routing = "spillover"`, whether new units may take this route's free
    /// permits (false: it serves only failovers).
    pub spill: bool,
    /// USD per million input / output tokens, when configured.
    pub prices: Option<Prices>,
    /// `fleetMaxConcurrency`: attempts in flight across every process of the fleet.
    pub fleet_max_concurrency: Option<usize>,
    /// `[execution] maxFindingsPerAnswer`: findings kept from one of its answers; the
    /// rest are counted as cut (docs/design.md §13).
    pub max_findings_per_answer: usize,
    /// `reasoningEffort`: OpenAI's `reasoning_effort` (OpenRouter: `reasoning.effort`).
    pub reasoning_effort: Option<String>,
    /// `params`: a table merged into every request body (the gateway escape hatch).
    pub params: serde_json::Map<String, serde_json::Value>,
    /// `structuredOutput`: findings through the provider's schema enforcement.
    pub structured_output: StructuredOutput,
    /// `contextWindow`: the model's window in tokens; a chunk whose prompt would not fit
    /// is split before it is sent.
    pub context_window: Option<u32>,
    /// What the config left for a local server to say (docs/design.md §15): set on the
    /// `llamacpp`, `ollama` and `vllm` presets, for each key not written.
    pub from_server: FromServer,
}

/// The settings of a local preset the config did not write, to be learnt from the
/// server before the review (see `provider::local`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FromServer {
    /// `maxConcurrency` from the server's slots.
    pub slots: bool,
    /// `contextWindow` from the server.
    pub window: bool,
    /// `maxTokens` was not written: a quarter of the window at most.
    pub max_tokens: bool,
}

/// The output cap of a local preset when `maxTokens` is not written: an answer a CPU
/// generates in well under a minute, and a findings object fits (the bounded schema
/// ends it sooner).
pub(crate) const LOCAL_MAX_TOKENS: u32 = 1024;

/// `structuredOutput` (docs/design.md §14).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StructuredOutput {
    /// OpenAI `response_format` json_schema strict / Anthropic a forced `submit_findings`
    /// tool; a provider that refuses it gets the text contract (the refused parameter is
    /// dropped for the run), one that ignores it is read by the text contract.
    #[default]
    Auto,
    /// The text contract only.
    Off,
}

/// The values of `reasoningEffort` (OpenAI's, family-dependent).
pub(crate) const REASONING_EFFORTS: &[&str] =
    &["none", "minimal", "low", "medium", "high", "xhigh"];

/// A route's prices, USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Prices {
    /// USD per million input (prompt) tokens.
    pub input: f64,
    /// USD per million output (completion) tokens.
    pub output: f64,
    /// `cachedInputPrice`: USD per million input tokens read from the provider's prompt
    /// cache (unset: `input`).
    pub cached_input: Option<f64>,
    /// `cacheWritePrice`: USD per million input tokens written to the cache (unset:
    /// `input`).
    pub cache_write: Option<f64>,
}

impl Prices {
    /// The cost of an exchange of `input` and `output` tokens, in USD (all input at the
    /// input price).
    pub fn cost(&self, input: u64, output: u64) -> f64 {
        (input as f64 * self.input + output as f64 * self.output) / 1_000_000.0
    }

    /// The cost with the input split: `fresh` at the input price, `cached` read and
    /// `written` to the cache at their own prices; reasoning tokens are in `output`.
    pub(crate) fn cost_split(&self, fresh: u64, cached: u64, written: u64, output: u64) -> f64 {
        let read = self.cached_input.unwrap_or(self.input);
        let write = self.cache_write.unwrap_or(self.input);
        (fresh as f64 * self.input
            + cached as f64 * read
            + written as f64 * write
            + output as f64 * self.output)
            / 1_000_000.0
    }
}

/// A route's `caCert` file, read and checked when the config is loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct CaCert {
    /// Where it was read from (relative paths are relative to the config file).
    pub path: PathBuf,
    /// The certificates, DER-encoded, each usable as a trust anchor.
    pub der: Vec<Vec<u8>>,
}

/// The `sim` provider's latency profiles (docs/design.md section 11). Plain names here, so that
/// config validates a route's `profile` without knowing the provider; `provider::sim`
/// gives each its shape.
/// `quick` answers well inside every default deadline (the starter's and `--sim`'s: a
/// small change reviewed completely); the last three (section 13) depend on the route's
/// load, N being its `capacity`.
pub const SIM_PROFILES: &[&str] = &[
    "quick",
    "healthy",
    "slow-tail",
    "outage",
    "flaky",
    "rate-limited",
    "limited",
    "paced",
    "saturating",
];

/// N of a load profile when the route's `capacity` does not say.
pub const SIM_DEFAULT_CAPACITY: u32 = 4;

/// Options of the built-in `sim` provider (ignored by the others).
#[derive(Debug, Clone, PartialEq)]
pub struct SimOptions {
    /// The latency profile (one of [`SIM_PROFILES`]).
    pub profile: String,
    /// How many times faster than real time it plays.
    pub time_scale: f64,
    /// The seed of its draws.
    pub seed: u64,
    /// `capacity`: N of the load profiles (`limited`: in flight, `paced`: per second,
    /// `saturating`: the knee).
    pub capacity: u32,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            profile: "healthy".into(),
            time_scale: 60.0,
            seed: 1,
            capacity: SIM_DEFAULT_CAPACITY,
        }
    }
}

/// `maxConcurrency = "auto"`: the ceiling the effective limit adapts under (docs/design.md
/// section 13).
pub(crate) const AUTO_CONCURRENCY: usize = 16;

/// The largest `maxConcurrency` written as a number: more attempts in flight than any
/// provider account serves at once, and a bound on what one route's bulkhead holds.
pub(crate) const MAX_CONCURRENCY: usize = 1024;

/// The answer's token cap when a route names none.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 4096;

impl Route {
    /// The most a cut answer's retry asks for (docs/design.md §14): `maxTokensCeiling`, else
    /// twice `maxTokens`.
    pub fn max_tokens_ceiling(&self) -> u32 {
        self.max_tokens_ceiling
            .unwrap_or(self.max_tokens.saturating_mul(2))
    }

    /// A route with every optional setting at its default: the provider's usual key
    /// variable, streaming, the provider's endpoint, [`DEFAULT_MAX_TOKENS`].
    pub fn new(name: &str, provider: ProviderKind, model: &str, max_concurrency: usize) -> Route {
        Route {
            name: name.into(),
            provider,
            model: model.into(),
            api_key_env: provider.default_key_env().map(str::to_string),
            max_concurrency,
            auto_concurrency: false,
            stream: true,
            base_url: None,
            max_tokens: DEFAULT_MAX_TOKENS,
            max_tokens_ceiling: None,
            ca_cert: None,
            sim: SimOptions::default(),
            spill: true,
            prices: None,
            fleet_max_concurrency: None,
            max_findings_per_answer: crate::findings::DEFAULT_MAX_FINDINGS_PER_ANSWER,
            reasoning_effort: None,
            params: serde_json::Map::new(),
            structured_output: StructuredOutput::Auto,
            context_window: None,
            from_server: FromServer::default(),
        }
    }

    /// A route on the built-in simulator.
    pub fn sim(
        name: &str,
        profile: &str,
        time_scale: f64,
        seed: u64,
        max_concurrency: usize,
    ) -> Route {
        Route {
            sim: SimOptions {
                profile: profile.into(),
                time_scale,
                seed,
                ..SimOptions::default()
            },
            ..Route::new(
                name,
                ProviderKind::Sim,
                &format!("sim-{profile}"),
                max_concurrency,
            )
        }
    }
}

impl ProviderKind {
    /// The provider names, as messages list them.
    pub const NAMES: &'static str =
        "openai, openrouter, anthropic, litellm, llamacpp, ollama, vllm, sim";

    /// The kind named `s` in a config.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "openai" => Some(ProviderKind::OpenAi),
            "openrouter" => Some(ProviderKind::OpenRouter),
            "anthropic" => Some(ProviderKind::Anthropic),
            "litellm" => Some(ProviderKind::LiteLlm),
            "sim" => Some(ProviderKind::Sim),
            "llamacpp" => Some(ProviderKind::LlamaCpp),
            "ollama" => Some(ProviderKind::Ollama),
            "vllm" => Some(ProviderKind::Vllm),
            _ => None,
        }
    }

    /// The kind as configs and reports spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::OpenRouter => "openrouter",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::LiteLlm => "litellm",
            ProviderKind::Sim => "sim",
            ProviderKind::LlamaCpp => "llamacpp",
            ProviderKind::Ollama => "ollama",
            ProviderKind::Vllm => "vllm",
        }
    }

    /// A server the user runs (docs/design.md §15): OpenAI wire, no key needed on loopback,
    /// slots and window read from the server, a bounded findings schema.
    pub(crate) fn is_local(self) -> bool {
        matches!(
            self,
            ProviderKind::LlamaCpp | ProviderKind::Ollama | ProviderKind::Vllm
        )
    }

    /// The conventional key variable, used when a route names none.
    pub(crate) fn default_key_env(self) -> Option<&'static str> {
        match self {
            ProviderKind::OpenAi => Some("OPENAI_API_KEY"),
            ProviderKind::OpenRouter => Some("OPENROUTER_API_KEY"),
            ProviderKind::Anthropic => Some("ANTHROPIC_API_KEY"),
            ProviderKind::LiteLlm => Some("LITELLM_API_KEY"),
            // What each server itself reads for `--api-key`, when it is not on loopback.
            ProviderKind::LlamaCpp => Some("LLAMA_API_KEY"),
            ProviderKind::Ollama => Some("OLLAMA_API_KEY"),
            ProviderKind::Vllm => Some("VLLM_API_KEY"),
            ProviderKind::Sim => None,
        }
    }
}
