//! The validated configuration every other module works with: compiled path rules,
//! parsed durations and levels, resolved routes. Built by `resolve.rs` from the TOML
//! and then adjusted by command-line flags.

use super::place::ConfigPlace;
use super::route_settings::Route;
use crate::path_rules::PathRules;
use crate::severity::{Confidence, FailOn, Severity};
use std::path::PathBuf;
use std::time::Duration;

/// The validated configuration every other module works with: thresholds, scan and chunking limits, skills, execution budgets and routes. Built from `warden.toml` by `resolve.rs`, then adjusted by command-line [`super::Overrides`].
#[derive(Debug, Clone)]
pub struct Settings {
    /// The file the settings came from (None: built-in defaults).
    pub config_path: Option<PathBuf>,
    /// The default `failOn` (a skill may set its own).
    pub fail_on: FailOn,
    /// The default `reportOn`.
    pub report_on: Severity,
    /// The default `minConfidence`.
    pub min_confidence: Confidence,
    /// The default `maxFindings` per skill.
    pub max_findings: Option<usize>,
    /// `defaults.ignorePaths` plus `defaults.ignore.paths`, in that order.
    pub ignore: PathRules,
    /// `[[instructions]]`: repository guidance by path.
    pub instructions: Vec<super::Instruction>,
    /// The repository's guidance as read from the config's side (filled by the loader:
    /// `trust`), which each unit's prompt carries where its paths match.
    pub guidance: super::Guidance,
    /// `defaultBranch`: the base of a clean tree's review.
    pub default_branch: Option<String>,
    /// `[defaults.verification] enabled`: optional second pass, shed first on low budget.
    pub verification: bool,
    /// `[defaults.scan]` caps.
    pub scan: ScanLimits,
    /// `[defaults.chunking]`.
    pub chunking: Chunking,
    /// `[[skills]]` entries in file order; empty means "the triggers' skills, else the
    /// default skills".
    pub skills: Vec<SkillConfig>,
    /// Warden's earlier layout: `[[triggers]]`, whose skills run when `[[skills]]` names none.
    pub triggers: Vec<Trigger>,
    /// Skills defined in the config itself (`[[skills]] prompt = …`).
    pub inline_skills: Vec<InlineSkill>,
    /// `[defaults.filters] paths`: files every skill without its own `paths` reviews.
    pub default_paths: Option<PathRules>,
    /// `[execution]`: budgets, attempts, breakers.
    pub execution: Execution,
    /// `[execution] toolDeny`: paths the tools refuse, over the built-in deny list.
    pub tool_deny: Vec<String>,
    /// Failover order = file order.
    pub routes: Vec<Route>,
    /// `[cache]`: where and whether reviewed answers are kept for the next run.
    pub cache: CacheSettings,
    /// `[fleet]`: Redis shared by warden processes (breakers, permits, cache).
    pub fleet: FleetSettings,
    /// `[publish]`: how a review is written onto its pull request.
    pub publish: super::publish::PublishSettings,
    /// Keys that were ignored, named once each, for the user to see on stderr.
    pub warnings: Vec<String>,
    /// The keys no one documents (of `warnings`), each with its place and the key meant.
    pub unknown_keys: Vec<super::UnknownKey>,
    /// `strictConfig = true`: unknown keys are errors (the command line can ask it too).
    pub strict_config: bool,
}

/// The result cache as configured (`[cache]`); flags and `WARDEN_CACHE_DIR` are applied on
/// top by the review command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheSettings {
    /// `[cache] enabled` (`--no-cache` turns it off for one run).
    pub enabled: bool,
    /// `[cache] dir`, made absolute against the config file's directory.
    pub dir: Option<PathBuf>,
    /// Bytes of stored answers kept before the least recently used are evicted.
    pub max_size: u64,
    /// Answers older than this are not used and are deleted.
    pub max_age: Duration,
}

impl Default for CacheSettings {
    fn default() -> Self {
        CacheSettings {
            enabled: true,
            dir: None,
            max_size: 256 * 1024 * 1024,
            max_age: Duration::from_secs(30 * 24 * 3600),
        }
    }
}

/// `[fleet]` as configured. `WARDEN_REDIS_URL` (the environment, trusted like API keys)
/// is applied on top by `crate::fleet`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FleetSettings {
    /// `[fleet] redis`: the server every process of the fleet shares (no password in it).
    pub redis: Option<RedisUrl>,
    /// `[fleet] passwordEnv`: the variable the Redis password is read from.
    pub password_env: Option<String>,
    /// `[fleet] namespace`: prefix of every key, so teams can share one server.
    pub namespace: Option<String>,
    /// `[fleet] cache`: the result cache's second level lives in Redis.
    pub cache: bool,
}

/// A Redis URL that cannot be used; the URL is shown without its password. A fragment
/// for the caller to prefix with the key or variable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RedisUrlError {
    /// Not a URL.
    #[error(
        "`{shown}` is not a valid URL ({why}): write it like \"redis://127.0.0.1:6379\" or \"rediss://redis.example.com:6380\""
    )]
    NotUrl {
        /// The URL, redacted.
        shown: String,
        /// The parser's reason.
        why: String,
    },
    /// Another scheme.
    #[error("`{0}` must start with redis:// (or rediss:// for TLS)")]
    Scheme(String),
    /// No host, or white space in it.
    #[error("`{0}` names no host: write it like \"redis://127.0.0.1:6379\"")]
    NoHost(String),
}

/// A `redis://` or `rediss://` URL, checked when read. Shown without its password
/// (`Display` and `Debug`), so it can go into any message.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisUrl(String);

impl RedisUrl {
    /// Checks `text`: scheme `redis` or `rediss`, a host, no white space. The error is a
    /// fragment for the caller to prefix with the key or variable.
    pub fn parse(text: &str) -> Result<RedisUrl, RedisUrlError> {
        let t = text.trim();
        let shown = redact_url(t);
        let url = reqwest::Url::parse(t).map_err(|e| RedisUrlError::NotUrl {
            shown: shown.clone(),
            why: e.to_string(),
        })?;
        if !matches!(url.scheme(), "redis" | "rediss") {
            return Err(RedisUrlError::Scheme(shown));
        }
        if url.host_str().is_none_or(str::is_empty) || t.contains(char::is_whitespace) {
            return Err(RedisUrlError::NoHost(shown));
        }
        Ok(RedisUrl(t.to_string()))
    }

    /// The URL as written, password included: only for connecting.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the URL carries a password (or a user name).
    pub(crate) fn has_credentials(&self) -> bool {
        reqwest::Url::parse(&self.0)
            .is_ok_and(|u| u.password().is_some() || !u.username().is_empty())
    }
}

impl std::fmt::Display for RedisUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&redact_url(&self.0))
    }
}

impl std::fmt::Debug for RedisUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RedisUrl({self})")
    }
}

/// A URL with its user and password replaced by `***` (unparsable text is withheld).
fn redact_url(text: &str) -> String {
    match reqwest::Url::parse(text.trim()) {
        Ok(mut u) => {
            if u.password().is_some() || !u.username().is_empty() {
                let _ = u.set_username("***");
                let _ = u.set_password(None);
            }
            u.to_string()
        }
        Err(_) if text.contains('@') => "<url withheld: it may hold a password>".into(),
        Err(_) => text.trim().to_string(),
    }
}

/// `[defaults.scan]`: files past these caps are skipped with a reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanLimits {
    /// Files reviewed at most (most relevant first).
    pub max_files: usize,
    /// Changed lines reviewed at most.
    pub max_changed_lines: usize,
    /// A file larger than this is skipped.
    pub max_file_bytes: u64,
    /// A file longer than this is skipped.
    pub max_file_lines: usize,
}

/// How a file is cut into chunks (`[defaults.chunking] filePatterns`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkMode {
    /// Hunks, coalesced and split to fit.
    PerHunk,
    /// The whole new file as context.
    WholeFile,
    /// Not reviewed.
    Skip,
}

/// One `filePatterns` entry.
#[derive(Debug, Clone)]
pub struct FilePattern {
    /// The glob as written.
    pub pattern: String,
    /// The glob, compiled.
    pub rules: PathRules,
    /// The mode of matching files.
    pub mode: ChunkMode,
}

/// `[defaults.chunking]`: how files become chunks.
#[derive(Debug, Clone)]
pub struct Chunking {
    /// First match wins.
    pub file_patterns: Vec<FilePattern>,
    /// Merge neighbouring hunks.
    pub coalesce: bool,
    /// Hunks at most this many lines apart are merged.
    pub max_gap_lines: u32,
    /// A chunk's size cap (bytes of its rendered lines).
    pub max_chunk_size: usize,
    /// New-side lines around each chunk.
    pub context_lines: u32,
    /// Other changed files named in a prompt, at most.
    pub max_context_files: usize,
    /// The mode of files no pattern matches (`[defaults.chunking] enabled = false`:
    /// whole files).
    pub default_mode: ChunkMode,
}

/// One skill's settings (`[[skills]]`, or a trigger's in Warden's earlier layout).
#[derive(Debug, Clone)]
pub struct SkillConfig {
    /// The skill.
    pub name: String,
    /// Only files these match (None: every file).
    pub paths: Option<PathRules>,
    /// Files it skips.
    pub ignore: PathRules,
    /// Its `failOn` (None: the default).
    pub fail_on: Option<FailOn>,
    /// Its `reportOn`.
    pub report_on: Option<Severity>,
    /// Its `minConfidence`.
    pub min_confidence: Option<Confidence>,
    /// Its `maxFindings`.
    pub max_findings: Option<usize>,
    /// The routes this skill may use, in this order (None: every route, in config order).
    pub routes: Option<Vec<String>>,
    /// Shares one request per chunk with the other consolidated skills.
    pub consolidate: bool,
    /// Where the config file names this skill (None: `--skill`, or a default), so a
    /// name no skill answers to is reported at its file, line and column.
    pub named_at: Option<ConfigPlace>,
    /// Its tools (`[[skills]] tools`), over its front matter's `allowed-tools`.
    pub tools: Option<Vec<String>>,
    /// Its turn cap (`[[skills]]` / `[[triggers]] maxTurns`), over `[execution] maxTurns`.
    pub max_turns: Option<u32>,
}

impl SkillConfig {
    /// A skill with no settings of its own.
    pub fn named(name: &str) -> Self {
        SkillConfig {
            name: name.to_string(),
            paths: None,
            ignore: PathRules::empty(),
            fail_on: None,
            report_on: None,
            min_confidence: None,
            max_findings: None,
            routes: None,
            consolidate: false,
            named_at: None,
            tools: None,
            max_turns: None,
        }
    }
}

/// One `[[triggers]]` entry of Warden's earlier layout: run `config.name` on `event`.
#[derive(Debug, Clone)]
pub struct Trigger {
    /// The trigger's name.
    pub name: String,
    /// The GitHub event it reacts to (`pull_request`, `issues`, …); None: any.
    pub event: Option<String>,
    /// The event's actions it reacts to; empty: any.
    pub actions: Vec<String>,
    /// The skill it runs, with the trigger's filters and output thresholds.
    pub config: SkillConfig,
}

/// The CI event a run reacts to (GitHub Actions: `GITHUB_EVENT_NAME` and the payload's
/// `action`). Locally there is none, and every trigger's skill runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunEvent {
    /// `pull_request`, `issues`, `schedule`, …
    pub name: String,
    /// `opened`, `synchronize`, … when the payload has one.
    pub action: Option<String>,
}

impl Trigger {
    /// Whether the trigger reacts to `event` (None: a local run, where every trigger does).
    pub fn matches(&self, event: Option<&RunEvent>) -> bool {
        let Some(e) = event else { return true };
        let event_ok = self.event.as_deref().is_none_or(|name| name == e.name);
        let action_ok = self.actions.is_empty()
            || e.action
                .as_ref()
                .is_some_and(|a| self.actions.iter().any(|x| x == a));
        event_ok && action_ok
    }
}

/// A skill defined in the config (`[[skills]] name, description, prompt`).
#[derive(Debug, Clone)]
pub struct InlineSkill {
    /// Its name.
    pub name: String,
    /// What it checks.
    pub description: String,
    /// Its instructions to the model.
    pub prompt: String,
    /// Its `tools` (as a skill file's `allowed-tools`).
    pub allowed_tools: Vec<String>,
}

/// `[execution] maxBounces` when unset: a unit's answers of back-pressure before it ends
/// `unavailable` (docs/design.md section 13 gives 8).
pub(crate) const DEFAULT_MAX_BOUNCES: u32 = 8;

/// `[execution]` (docs/design.md section 4).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Execution {
    /// The whole run.
    pub review_budget: Duration,
    /// One unit, from its first attempt.
    pub hunk_budget: Duration,
    /// One request.
    pub request_timeout: Duration,
    /// Inside an attempt: TCP/TLS connect, time to first token, idle between tokens.
    pub connect_timeout: Duration,
    /// Time to first token.
    pub first_token_timeout: Duration,
    /// The longest wait between tokens.
    pub idle_timeout: Duration,
    /// Attempts per unit, the first included.
    pub max_attempts: u32,
    /// Answers of back-pressure a unit takes before it ends `unavailable` (docs/design.md
    /// section 13): back-pressure uses no attempt, so this bounds a route that says "not
    /// now" for ever within a budget that would allow it.
    pub max_bounces: u32,
    /// The routes' breakers.
    pub breaker: BreakerSettings,
    /// Which route a new unit takes (`[execution] routing`).
    pub routing: Routing,
    /// `[execution] costBudget`: USD for the whole review; None means no cost limit.
    pub cost_budget: Option<f64>,
    /// `[execution] tools` (`--no-tools`): which skills run as a tool loop.
    pub tools: super::ToolsMode,
    /// The bounds of one unit's tool loop.
    pub tool_bounds: super::ToolBounds,
}

/// How new units choose a route (failovers follow docs/design.md rules 5–6 under both).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Routing {
    /// The first route in order that admits calls; wait for its permit (the seed's rule).
    #[default]
    Ordered,
    /// The first route in order that admits calls and has a free permit (routes with
    /// `spill = false` excepted); wait only when none has.
    Spillover,
}

impl Routing {
    /// Both policies, in the order reports list them.
    pub const ALL: [Routing; 2] = [Routing::Ordered, Routing::Spillover];

    /// The policy as the config spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Routing::Ordered => "ordered",
            Routing::Spillover => "spillover",
        }
    }

    /// The policy named `s` in a config.
    pub fn parse(s: &str) -> Option<Routing> {
        match s {
            "ordered" => Some(Routing::Ordered),
            "spillover" => Some(Routing::Spillover),
            _ => None,
        }
    }
}

/// `[execution.breaker]` (rule 8).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BreakerSettings {
    /// The rolling window attempts are counted over.
    pub window: Duration,
    /// Attempts in the window before it may open.
    pub min_calls: u32,
    /// Share of timeouts and unavailable outcomes that opens it.
    pub failure_rate: f64,
    /// How long it stays open before a probe.
    pub open_for: Duration,
    /// Probes let through when half-open.
    pub half_open_probes: u32,
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
            default_mode: ChunkMode::PerHunk,
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
            max_bounces: DEFAULT_MAX_BOUNCES,
            breaker: BreakerSettings::default(),
            routing: Routing::Ordered,
            cost_budget: None,
            tools: super::ToolsMode::default(),
            tool_bounds: super::ToolBounds::default(),
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
            triggers: Vec::new(),
            inline_skills: Vec::new(),
            default_paths: None,
            execution: Execution::default(),
            tool_deny: Vec::new(),
            routes: Vec::new(),
            cache: CacheSettings::default(),
            fleet: FleetSettings::default(),
            publish: Default::default(),
            warnings: Vec::new(),
            instructions: Vec::new(),
            guidance: super::Guidance::default(),
            unknown_keys: Vec::new(),
            strict_config: false,
        }
    }
}

impl Settings {
    /// Under `--strict-config` (`asked`) or `strictConfig = true`, the first unknown key is
    /// an error naming its file and line.
    pub fn refuse_unknown_keys(&self, asked: bool) -> crate::Result<()> {
        if !(asked || self.strict_config) {
            return Ok(());
        }
        match (self.unknown_keys.first(), &self.config_path) {
            (Some(k), Some(path)) => Err(k.error(path)),
            _ => Ok(()),
        }
    }
}
