//! The flags of the smaller commands: plan, skills, init, cache, simulate, publish,
//! completions and man.

use super::Ui;
use super::selection::Selection;
use super::values;
use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;

/// `warden plan`.
#[derive(Debug, Clone, Args)]
pub(crate) struct PlanArgs {
    /// Which diff.
    #[command(flatten)]
    pub(crate) selection: Selection,
    /// Output format.
    #[arg(long, value_enum, default_value_t = PlanFormat::Text, value_name = "FORMAT")]
    pub(crate) format: PlanFormat,
    /// Shorthand for --format json.
    #[arg(long)]
    pub(crate) json: bool,
    /// Write the plan to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// Output settings.
    #[command(flatten)]
    pub(crate) ui: Ui,
}

/// `warden plan --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PlanFormat {
    /// For people.
    Text,
    /// The plan as JSON.
    Json,
}

/// `warden skills`.
#[derive(Debug, Clone, Args)]
pub(crate) struct SkillsArgs {
    /// Run as if started in DIR.
    #[arg(short = 'C', value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,
    /// Config file (default: warden.toml at the repository root).
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
    /// Refuse the config when it has a key warden does not know (a typo), naming its file
    /// and line, instead of warning; `strictConfig = true` in warden.toml asks the same.
    #[arg(long)]
    pub(crate) strict_config: bool,
    /// Output settings.
    #[command(flatten)]
    pub(crate) ui: Ui,
}

/// `warden init`.
#[derive(Debug, Clone, Args)]
pub(crate) struct InitArgs {
    /// Run as if started in DIR.
    #[arg(short = 'C', value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,
    /// Overwrite an existing warden.toml.
    #[arg(long)]
    pub(crate) force: bool,
    /// Write the full example instead of the starter: every key warden reads, with its
    /// default and what it does.
    #[arg(long)]
    pub(crate) example: bool,
}

/// `warden cache`.
#[derive(Debug, Clone, Args)]
pub(crate) struct CacheArgs {
    /// What to do.
    #[command(subcommand)]
    pub(crate) action: CacheAction,
    /// Run as if started in DIR (its warden.toml may set `[cache] dir`).
    #[arg(short = 'C', value_name = "DIR", global = true)]
    pub(crate) dir: Option<PathBuf>,
    /// Config file (default: warden.toml at the repository root).
    #[arg(short = 'c', long = "config", value_name = "FILE", global = true)]
    pub(crate) config: Option<PathBuf>,
    /// The cache directory (as `warden review --cache-dir`).
    #[arg(long, value_name = "DIR", global = true)]
    pub(crate) cache_dir: Option<PathBuf>,
    /// Refuse the config when it has a key warden does not know (a typo), naming its file
    /// and line, instead of warning; `strictConfig = true` in warden.toml asks the same.
    #[arg(long, global = true)]
    pub(crate) strict_config: bool,
}

/// The `warden cache` actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Subcommand)]
pub(crate) enum CacheAction {
    /// Entries, size and age of the cache.
    Stats {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete every cached answer of this machine's cache directory.
    Clear {
        /// Also delete the namespace's answers from the fleet's shared level in Redis
        /// (`[fleet] cache = true`); the fleet's other keys are left alone.
        #[arg(long)]
        shared: bool,
    },
    /// Print the cache database's path.
    Path,
}

/// `warden simulate`.
#[derive(Debug, Clone, Args)]
pub(crate) struct SimulateArgs {
    /// Which diff.
    #[command(flatten)]
    pub(crate) selection: Selection,
    /// Runs (seeds) per routing policy.
    #[arg(long, default_value_t = 5, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) runs: u32,
    /// Play ROUTE with the named profile (healthy, slow-tail, outage, flaky,
    /// rate-limited, limited, paced, saturating); repeatable.
    #[arg(long = "profile", value_name = "ROUTE=NAME", value_parser = parse_route_profile)]
    pub(crate) profiles: Vec<(String, String)>,
    /// Fit each route's profile from the JSONL trace of an earlier review (`--trace`).
    #[arg(long, value_name = "FILE")]
    pub(crate) from_trace: Option<PathBuf>,
    /// Compare ceilings of one route's maxConcurrency: the simulation once per cap (whole
    /// numbers or auto), under the config's routing policy, side by side.
    #[arg(long, value_name = "ROUTE=CAPS", value_parser = warden::simulate::caps::parse)]
    pub(crate) caps: Option<warden::simulate::caps::RouteCaps>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
    /// Output settings.
    #[command(flatten)]
    pub(crate) ui: Ui,
}

/// `--profile ROUTE=NAME`.
fn parse_route_profile(s: &str) -> Result<(String, String), NotARouteProfile> {
    match s.split_once('=') {
        Some((r, p)) if !r.trim().is_empty() && !p.trim().is_empty() => {
            Ok((r.trim().to_string(), p.trim().to_string()))
        }
        _ => Err(NotARouteProfile(s.to_string())),
    }
}

/// A `--profile` value that is not ROUTE=PROFILE.
#[derive(Debug, thiserror::Error)]
#[error("`{0}`: write ROUTE=PROFILE, for example --profile primary=slow-tail")]
pub(crate) struct NotARouteProfile(String);

/// The forge `warden publish` writes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PublishTo {
    /// GitHub and GitHub Enterprise Server.
    Github,
    /// GitLab merge requests.
    Gitlab,
}

/// `warden publish`.
#[derive(Debug, Clone, Args)]
pub(crate) struct PublishArgs {
    /// The JSON report of `warden review --json` (untrusted: checked before use).
    #[arg(value_name = "REPORT.json")]
    pub(crate) report: PathBuf,
    /// Where to publish.
    #[arg(long, value_enum, value_name = "FORGE")]
    pub(crate) to: PublishTo,
    /// Read the pull request and list what would be written; write nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// The repository, OWNER/NAME (default: GITHUB_REPOSITORY).
    #[arg(long, value_name = "OWNER/NAME")]
    pub(crate) repo: Option<String>,
    /// The pull request's number (default: from GITHUB_EVENT_PATH).
    #[arg(long, value_name = "N")]
    pub(crate) pr: Option<u64>,
    /// The reviewed head commit (default: from GITHUB_EVENT_PATH).
    #[arg(long, value_name = "SHA")]
    pub(crate) head: Option<String>,
    /// The REST API's address (default: GITHUB_API_URL, else GitHub's).
    #[arg(long, value_name = "URL")]
    pub(crate) api_url: Option<String>,
    /// The GraphQL endpoint (default: GITHUB_GRAPHQL_URL; on the API's origin).
    #[arg(long, value_name = "URL")]
    pub(crate) graphql_url: Option<String>,
    /// Every request and rate-limit wait fits in this, e.g. 60s.
    #[arg(long, value_name = "DUR", value_parser = values::parse_budget)]
    pub(crate) budget: Option<Duration>,
    /// Config file (default: warden.toml of the checkout, read as `warden review` reads it).
    #[arg(long, value_name = "PATH")]
    pub(crate) config: Option<PathBuf>,
    /// Print what happened as JSON (`{"publish": {…}}`).
    #[arg(long)]
    pub(crate) json: bool,
}

/// `warden completions`.
#[derive(Debug, Clone, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum, value_name = "SHELL")]
    pub(crate) shell: clap_complete::Shell,
}

/// `warden man`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ManArgs {
    /// The command whose page to print (warden-COMMAND(1)); none: warden(1).
    #[arg(value_name = "COMMAND")]
    pub(crate) command: Option<String>,
    /// Write every page (warden.1 and one per command) into DIR instead of printing one.
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub(crate) dir: Option<PathBuf>,
}
