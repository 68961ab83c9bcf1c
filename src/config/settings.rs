//! The validated configuration every other module works with: compiled path rules,
//! parsed durations and levels, resolved routes. Built by `resolve.rs` from the TOML
//! and then adjusted by command-line flags.

use crate::scan::path_rules::PathRules;
use crate::severity::{Confidence, FailOn, Severity};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Settings {
    /// The file the settings came from (None: built-in defaults).
    pub config_path: Option<PathBuf>,
    pub fail_on: FailOn,
    pub report_on: Severity,
    pub min_confidence: Confidence,
    pub max_findings: Option<usize>,
    /// `defaults.ignorePaths` plus `defaults.ignore.paths`, in that order.
    pub ignore: PathRules,
    pub default_branch: Option<String>,
    /// `[defaults.verification] enabled`: optional second pass, shed first on low budget.
    pub verification: bool,
    pub scan: ScanLimits,
    pub chunking: Chunking,
    /// `[[skills]]` entries in file order; empty means "the default skills".
    pub skills: Vec<SkillConfig>,
    pub execution: Execution,
    /// Failover order = file order.
    pub routes: Vec<Route>,
    /// Keys that were ignored, named once each, for the user to see on stderr.
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanLimits {
    pub max_files: usize,
    pub max_changed_lines: usize,
    pub max_file_bytes: u64,
    pub max_file_lines: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkMode {
    PerHunk,
    WholeFile,
    Skip,
}

#[derive(Debug, Clone)]
pub struct FilePattern {
    pub pattern: String,
    pub rules: PathRules,
    pub mode: ChunkMode,
}

#[derive(Debug, Clone)]
pub struct Chunking {
    /// First match wins.
    pub file_patterns: Vec<FilePattern>,
    pub coalesce: bool,
    pub max_gap_lines: u32,
    pub max_chunk_size: usize,
    pub context_lines: u32,
    pub max_context_files: usize,
}

#[derive(Debug, Clone)]
pub struct SkillConfig {
    pub name: String,
    /// Only files these match (None: every file).
    pub paths: Option<PathRules>,
    pub ignore: PathRules,
    pub fail_on: Option<FailOn>,
    pub report_on: Option<Severity>,
    pub min_confidence: Option<Confidence>,
    pub max_findings: Option<usize>,
    pub model: Option<String>,
    /// Shares one request per chunk with the other consolidated skills.
    pub consolidate: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Execution {
    pub review_budget: Duration,
    pub hunk_budget: Duration,
    pub request_timeout: Duration,
    /// Inside an attempt: TCP/TLS connect, time to first token, idle between tokens.
    pub connect_timeout: Duration,
    pub first_token_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_attempts: u32,
    pub breaker: BreakerSettings,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BreakerSettings {
    pub window: Duration,
    pub min_calls: u32,
    pub failure_rate: f64,
    pub open_for: Duration,
    pub half_open_probes: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    OpenAi,
    OpenRouter,
    Anthropic,
    Sim,
}

/// One configured (provider, model, endpoint, key) in failover order. Holds the *name*
/// of the key's environment variable, never the key.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    pub name: String,
    pub provider: ProviderKind,
    pub model: String,
    pub api_key_env: Option<String>,
    pub max_concurrency: usize,
    pub stream: bool,
    pub base_url: Option<String>,
    /// The answer's token cap sent with each request.
    pub max_tokens: u32,
    pub sim: SimOptions,
}

/// Options of the built-in `sim` provider (ignored by the others).
#[derive(Debug, Clone, PartialEq)]
pub struct SimOptions {
    pub profile: String,
    pub time_scale: f64,
    pub seed: u64,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            profile: "healthy".into(),
            time_scale: 60.0,
            seed: 1,
        }
    }
}

impl Route {
    /// A route on the built-in simulator.
    pub fn sim(
        name: &str,
        profile: &str,
        time_scale: f64,
        seed: u64,
        max_concurrency: usize,
    ) -> Route {
        Route {
            name: name.into(),
            provider: ProviderKind::Sim,
            model: format!("sim-{profile}"),
            api_key_env: None,
            max_concurrency,
            stream: true,
            base_url: None,
            max_tokens: 4096,
            sim: SimOptions {
                profile: profile.into(),
                time_scale,
                seed,
            },
        }
    }
}

impl ProviderKind {
    pub const NAMES: &'static str = "openai, openrouter, anthropic, sim";

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "openai" => Some(ProviderKind::OpenAi),
            "openrouter" => Some(ProviderKind::OpenRouter),
            "anthropic" => Some(ProviderKind::Anthropic),
            "sim" => Some(ProviderKind::Sim),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::OpenRouter => "openrouter",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Sim => "sim",
        }
    }

    /// The conventional key variable, used when a route names none.
    pub fn default_key_env(self) -> Option<&'static str> {
        match self {
            ProviderKind::OpenAi => Some("OPENAI_API_KEY"),
            ProviderKind::OpenRouter => Some("OPENROUTER_API_KEY"),
            ProviderKind::Anthropic => Some("ANTHROPIC_API_KEY"),
            ProviderKind::Sim => None,
        }
    }
}

impl Default for ScanLimits {
    fn default() -> Self {
        ScanLimits {
            max_files: 150,
            max_changed_lines: 10_000,
            max_file_bytes: 1_048_576,
            max_file_lines: 3000,
        }
    }
}

impl Default for Chunking {
    fn default() -> Self {
        Chunking {
            file_patterns: Vec::new(),
            coalesce: true,
            max_gap_lines: 30,
            max_chunk_size: 8000,
            context_lines: 20,
            max_context_files: 50,
        }
    }
}

impl Default for BreakerSettings {
    fn default() -> Self {
        BreakerSettings {
            window: Duration::from_secs(120),
            min_calls: 5,
            failure_rate: 0.5,
            open_for: Duration::from_secs(30),
            half_open_probes: 1,
        }
    }
}

impl Default for Execution {
    fn default() -> Self {
        Execution {
            review_budget: Duration::from_secs(15 * 60),
            hunk_budget: Duration::from_secs(5 * 60),
            request_timeout: Duration::from_secs(2 * 60),
            connect_timeout: Duration::from_secs(10),
            first_token_timeout: Duration::from_secs(90),
            idle_timeout: Duration::from_secs(30),
            max_attempts: 2,
            breaker: BreakerSettings::default(),
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            config_path: None,
            fail_on: FailOn::At(Severity::High),
            report_on: Severity::Low,
            min_confidence: Confidence::Medium,
            max_findings: None,
            ignore: PathRules::empty(),
            default_branch: None,
            verification: false,
            scan: ScanLimits::default(),
            chunking: Chunking::default(),
            skills: Vec::new(),
            execution: Execution::default(),
            routes: Vec::new(),
            warnings: Vec::new(),
        }
    }
}
