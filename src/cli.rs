//! Command-line types (clap). Values are typed at this boundary (severities, formats,
//! durations), so `--help` lists them and a bad value is a clap error naming the flag.
//! They stop at the command layer, which turns them into a [`prepare::Selection`] and
//! [`config::Overrides`]; nothing in the library below sees clap.

use crate::config::{self, Overrides};
use crate::diff::Target;
use crate::prepare;
use crate::severity::{Confidence, FailOn, Severity};
use crate::shard::Shard;
use clap::builder::PossibleValue;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;

/// `warden [COMMAND] [ARGS]`.
#[derive(Debug, Parser)]
#[command(
    name = "warden",
    version,
    about = "AI code review that finishes inside its budget and says what it did not review",
    args_conflicts_with_subcommands = true,
    after_help = "Start with `warden review --sim --demo` (no key, no network), then `warden init`.\nEvery page of the manual: https://github.com/warden-review/warden/tree/main/docs"
)]
pub struct Cli {
    /// The command; none means `review`.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// With no subcommand, warden runs `review`.
    #[command(flatten)]
    pub review: ReviewArgs,
}

/// A report format written as a flag (`--sarif`, `--markdown=x`) where warden has none of
/// that name: the message that says how to ask for that format. Without it clap suggests
/// the nearest flag by spelling (`--sarif` → `--shard`).
pub fn format_as_flag(args: &[std::ffi::OsString]) -> Option<String> {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let is_flag = |name: &str| {
        std::iter::once(&cmd)
            .chain(cmd.get_subcommands())
            .flat_map(|c| c.get_arguments())
            .any(|a| a.get_long() == Some(name))
    };
    for word in args.iter().skip(1) {
        let word = word.to_str()?;
        if word == "--" {
            return None;
        }
        let Some(name) = word.strip_prefix("--") else {
            continue;
        };
        let name = name.split('=').next().unwrap_or(name);
        let Some(format) = Format::named(name) else {
            continue;
        };
        if is_flag(name) {
            continue;
        }
        let f = format.name();
        let ext = match format {
            Format::Sarif => Some("warden.sarif"),
            Format::Markdown => Some("warden.md"),
            Format::Rdjsonl => Some("warden.jsonl"),
            Format::Rdjson => Some("warden.rdjson"),
            Format::Text => Some("warden.txt"),
            _ => None,
        };
        let file = match ext {
            Some(e) => {
                format!("`-o {e}` (a file: its extension names the format) or `-o {f}=PATH`")
            }
            None => format!("`-o {f}=PATH` (a file)"),
        };
        return Some(format!(
            "unexpected argument `{word}`: report formats are not flags; for {f} write `--format {f}` (stdout), {file}"
        ));
    }
    None
}

/// The subcommand a user wrote after top-level options (`warden -C DIR plan`, as git
/// and cargo allow), where warden's parser reads a review target and would look `plan` up
/// as a ref; None when the command line is not like that. A value of an option is
/// skipped, so `warden -c plan` (a config file named `plan`) is a review.
pub fn command_after_options(args: &[std::ffi::OsString]) -> Option<String> {
    use clap::CommandFactory;
    let cmd = Cli::command();
    if !args.get(1)?.to_str()?.starts_with('-') {
        return None;
    }
    // `-C DIR`, `--config FILE`: the next word is the value (not `--sim`, whose
    // optional value needs `=`).
    let takes_next = |word: &str| {
        cmd.get_arguments().any(|a| {
            let named = match word.strip_prefix("--") {
                Some(long) => a.get_long() == Some(long),
                None => word.len() == 2 && a.get_short() == word.chars().nth(1),
            };
            named && a.get_action().takes_values() && !a.is_require_equals_set()
        })
    };
    let mut words = args.iter().skip(1);
    while let Some(word) = words.next() {
        let word = word.to_str()?;
        if word == "--" {
            return None;
        }
        if word.len() > 1 && word.starts_with('-') {
            if takes_next(word) {
                words.next();
            }
            continue;
        }
        return cmd
            .get_subcommands()
            .any(|c| c.get_name() == word)
            .then(|| word.to_string());
    }
    None
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Review a diff with the configured skills and routes (the default command).
    Review(ReviewArgs),
    /// Print what would be sent (files, chunks, units, skipped files); calls no model.
    Plan(PlanArgs),
    /// List the skills found and where each comes from.
    Skills(SkillsArgs),
    /// Write a starter warden.toml.
    Init(InitArgs),
    /// Inspect or empty the result cache: `stats`, `clear` or `path`.
    Cache(CacheArgs),
    /// Join the shard reports of one review (`review --shard K/N --json`) into its report.
    Merge(MergeArgs),
    /// Predict a review: run the plan through the engine on a simulated clock with each
    /// route's latency profile, for both routing policies; calls no model.
    Simulate(SimulateArgs),
    /// Print shell completions (bash, zsh, fish, powershell, elvish).
    ///
    /// For example `warden completions bash > ~/.local/share/bash-completion/completions/warden`.
    Completions(CompletionsArgs),
    /// Print a manual page (roff): warden(1), or a command's with every flag.
    ///
    /// For example `warden man > ~/.local/share/man/man1/warden.1`, `warden man review >
    /// warden-review.1`, or every page at once: `warden man --dir ~/.local/share/man/man1`.
    Man(ManArgs),
    /// Measure review quality on a corpus of cases with known problems: precision,
    /// recall, F1, noise on clean cases, cost and time per true finding.
    Eval(EvalArgs),
    /// Publish a finished review (`warden review --json`) onto its pull request: inline
    /// comments posted once and kept across pushes, fixed ones resolved, a sticky summary.
    ///
    /// For example `warden publish warden.json --to github` in a job with
    /// `pull-requests: write` (docs/ci.md shows the split workflow for forks).
    Publish(PublishArgs),
}

/// The forge `warden publish` writes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PublishTo {
    /// GitHub and GitHub Enterprise Server.
    Github,
    /// GitLab merge requests.
    Gitlab,
}

/// `warden publish`.
#[derive(Debug, Clone, Args)]
pub struct PublishArgs {
    /// The JSON report of `warden review --json` (untrusted: checked before use).
    #[arg(value_name = "REPORT.json")]
    pub report: PathBuf,
    /// Where to publish.
    #[arg(long, value_enum, value_name = "FORGE")]
    pub to: PublishTo,
    /// Read the pull request and list what would be written; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The repository, OWNER/NAME (default: GITHUB_REPOSITORY).
    #[arg(long, value_name = "OWNER/NAME")]
    pub repo: Option<String>,
    /// The pull request's number (default: from GITHUB_EVENT_PATH).
    #[arg(long, value_name = "N")]
    pub pr: Option<u64>,
    /// The reviewed head commit (default: from GITHUB_EVENT_PATH).
    #[arg(long, value_name = "SHA")]
    pub head: Option<String>,
    /// The REST API's address (default: GITHUB_API_URL, else GitHub's).
    #[arg(long, value_name = "URL")]
    pub api_url: Option<String>,
    /// The GraphQL endpoint (default: GITHUB_GRAPHQL_URL; on the API's origin).
    #[arg(long, value_name = "URL")]
    pub graphql_url: Option<String>,
    /// Every request and rate-limit wait fits in this, e.g. 60s.
    #[arg(long, value_name = "DUR", value_parser = parse_budget)]
    pub budget: Option<Duration>,
    /// Config file (default: warden.toml of the checkout, read as `warden review` reads it).
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Print what happened as JSON (`{"publish": {…}}`).
    #[arg(long)]
    pub json: bool,
}

/// `warden completions`.
#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// The names of warden's commands (as `warden help` lists them), for "did you mean".
pub fn command_names() -> Vec<String> {
    use clap::CommandFactory;
    Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect()
}

/// The command `word` was probably meant to be: the closest command name within two
/// edits (`revew` → `review`), None when none is that close.
pub fn near_command(word: &str) -> Option<String> {
    let word = word.to_ascii_lowercase();
    command_names()
        .into_iter()
        .map(|name| (strsim::damerau_levenshtein(&word, &name), name))
        .filter(|(d, name)| *d > 0 && *d <= 2 && *d < name.len())
        .min_by_key(|(d, _)| *d)
        .map(|(_, name)| name)
}

/// `warden eval`.
#[derive(Debug, Clone, Args)]
pub struct EvalArgs {
    /// The corpus: a JSONL file of AACR-Bench-shaped cases, a case folder (holding
    /// case.json) or a folder of case folders.
    #[arg(
        value_name = "CORPUS",
        required_unless_present = "from_history",
        conflicts_with = "from_history"
    )]
    pub corpus: Option<PathBuf>,
    /// Where the JSONL corpus's repositories are cloned: `repo` owner/name is DIR/owner/name,
    /// DIR/name or DIR/owner__name (default: the JSONL file's folder). Nothing is fetched.
    #[arg(long, value_name = "DIR")]
    pub repos: Option<PathBuf>,
    /// Build the corpus from the repository's last N fix commits, each reviewed reversed
    /// (the change that puts the bug back), the lines the fix changed as the reference.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub from_history: Option<u32>,
    /// With --from-history: the commit subjects that are fixes (a regular expression).
    #[arg(long, value_name = "REGEX", default_value = crate::eval::history::DEFAULT_PATTERN, value_parser = parse_regex)]
    pub fix_pattern: regex::Regex,
    /// With --from-history: the most changed lines (code files, whitespace ignored) a fix
    /// may have.
    #[arg(long, value_name = "LINES", default_value_t = crate::eval::history::DEFAULT_MAX_LINES)]
    pub max_fix_lines: u32,
    /// Run as if started in DIR (its repository's warden.toml and skills are the setup
    /// evaluated).
    #[arg(short = 'C', value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// The config every case is reviewed with (default: warden.toml at the repository root).
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Refuse the config when it has a key warden does not know (a typo), naming its file
    /// and line, instead of warning; `strictConfig = true` in warden.toml asks the same.
    #[arg(long)]
    pub strict_config: bool,
    /// Run only this skill (repeatable).
    #[arg(long = "skill", value_name = "NAME")]
    pub skills: Vec<String>,
    /// The whole evaluation's budget: case reviews running when it ends are cancelled
    /// (what they received is scored), later ones do not start.
    #[arg(long, value_name = "DUR", value_parser = parse_budget)]
    pub budget: Option<Duration>,
    /// Each case review's budget (default: the config's review budget).
    #[arg(long, value_name = "DUR", value_parser = parse_budget)]
    pub case_budget: Option<Duration>,
    /// Review every case N times, for the figures' spread.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub runs: u32,
    /// A finding matches a reference on the same file whose lines overlap or lie within
    /// this many lines.
    #[arg(long, default_value_t = 3, value_name = "LINES", value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub line_window: u32,
    /// Ask this route whether each candidate pair means the same problem (its cost is
    /// reported apart).
    #[arg(long, value_name = "ROUTE")]
    pub judge: Option<String>,
    /// Use the built-in simulator instead of the configured routes (default profile:
    /// healthy). No key, no network.
    #[arg(long, value_name = "PROFILE", num_args = 0..=1, require_equals = true, default_missing_value = "healthy")]
    pub sim: Option<String>,
    /// Report findings at or above this severity, for every skill.
    #[arg(long, value_enum, ignore_case = true, value_name = "SEV")]
    pub report_on: Option<Severity>,
    /// Drop findings below this confidence, for every skill.
    #[arg(long, value_enum, ignore_case = true, value_name = "LVL")]
    pub min_confidence: Option<Confidence>,
    /// Use the result cache (off by default: an evaluation measures the model's answers).
    #[arg(long)]
    pub cache: bool,
    /// With --cache: keep answers in DIR.
    #[arg(long, value_name = "DIR", requires = "cache")]
    pub cache_dir: Option<PathBuf>,
    /// Print each figure's change against an earlier `warden eval --json` report.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Report format.
    #[arg(long, value_enum, default_value_t = EvalFormat::Text, value_name = "FORMAT")]
    pub format: EvalFormat,
    /// Shorthand for --format json.
    #[arg(long)]
    pub json: bool,
    /// Write the report to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Output settings.
    #[command(flatten)]
    pub ui: Ui,
}

/// `warden eval --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EvalFormat {
    /// For people.
    Text,
    /// schemas/eval-report-v1.schema.json.
    Json,
    /// A Markdown summary.
    Markdown,
}

/// `--fix-pattern`: a regular expression.
fn parse_regex(s: &str) -> Result<regex::Regex, String> {
    regex::Regex::new(s).map_err(|e| format!("not a regular expression: {e}"))
}

impl EvalArgs {
    /// The settings these flags override (each case review's budget among them).
    pub fn overrides(&self) -> Overrides {
        Overrides {
            fail_on: None,
            report_on: self.report_on,
            min_confidence: self.min_confidence,
            budget: self.case_budget,
            sim: self.sim.clone(),
            no_tools: false,
        }
    }

    /// The report format (`--json` is `--format json`).
    pub fn format(&self) -> EvalFormat {
        if self.json {
            EvalFormat::Json
        } else {
            self.format
        }
    }
}

/// `warden simulate`.
#[derive(Debug, Clone, Args)]
pub struct SimulateArgs {
    /// Which diff.
    #[command(flatten)]
    pub selection: Selection,
    /// Runs (seeds) per routing policy.
    #[arg(long, default_value_t = 5, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// Play ROUTE with the named profile (healthy, slow-tail, outage, flaky,
    /// rate-limited, limited, paced, saturating); repeatable.
    #[arg(long = "profile", value_name = "ROUTE=NAME", value_parser = parse_route_profile)]
    pub profiles: Vec<(String, String)>,
    /// Fit each route's profile from the JSONL trace of an earlier review (`--trace`).
    #[arg(long, value_name = "FILE")]
    pub from_trace: Option<PathBuf>,
    /// Compare ceilings of one route's maxConcurrency: the simulation once per cap (whole
    /// numbers or auto), under the config's routing policy, side by side.
    #[arg(long, value_name = "ROUTE=CAPS", value_parser = crate::simulate::caps::parse)]
    pub caps: Option<crate::simulate::caps::RouteCaps>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Output settings.
    #[command(flatten)]
    pub ui: Ui,
}

/// `--profile ROUTE=NAME`.
fn parse_route_profile(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((r, p)) if !r.trim().is_empty() && !p.trim().is_empty() => {
            Ok((r.trim().to_string(), p.trim().to_string()))
        }
        _ => Err(format!(
            "`{s}`: write ROUTE=PROFILE, for example --profile primary=slow-tail"
        )),
    }
}

/// Which diff to review, and where the repository and config are.
#[derive(Debug, Clone, Args, Default)]
pub struct Selection {
    /// A..B, A...B (from the merge-base) or REF (working tree vs REF). Default: on a branch,
    /// the branch vs its merge-base with the default branch, uncommitted changes included;
    /// on the default branch, the uncommitted changes.
    #[arg(value_name = "TARGET")]
    pub target: Option<String>,
    /// Compare from this ref (with --head, default HEAD).
    #[arg(long, value_name = "REF")]
    pub base: Option<String>,
    /// Compare up to this ref (needs --base).
    #[arg(long, value_name = "REF")]
    pub head: Option<String>,
    /// Review only the staged changes (index vs HEAD).
    #[arg(long)]
    pub staged: bool,
    /// Review a unified diff from FILE, or from stdin with `-` (no repository needed).
    #[arg(long, value_name = "FILE|-")]
    pub diff: Option<String>,
    /// Review the demo change built into warden (try `warden review --sim --demo`).
    #[arg(long)]
    pub demo: bool,
    /// Strip N leading components from the patch's paths, as `git apply -p N` (default
    /// 1: the `a/` and `b/` of git's patches; 0 for `git diff --no-prefix`).
    #[arg(short = 'p', long = "strip", value_name = "N", value_parser = clap::value_parser!(u16).range(0..=64))]
    pub strip: Option<u16>,
    /// Run as if started in DIR.
    #[arg(short = 'C', value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Config file (default: warden.toml at the repository root).
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Run only this skill (repeatable).
    #[arg(long = "skill", value_name = "NAME")]
    pub skills: Vec<String>,
    /// Read warden.toml and skills from the working tree even in CI or for a commit range,
    /// where they are otherwise read from the base of the change. The change under review
    /// then decides its own routes, keys' destinations and review instructions.
    #[arg(long)]
    pub trust_head_config: bool,
    /// Refuse the config when it has a key warden does not know (a typo), naming its file
    /// and line, instead of warning; `strictConfig = true` in warden.toml asks the same.
    #[arg(long)]
    pub strict_config: bool,
}

/// Output settings shared by the commands.
#[derive(Debug, Clone, Args, Default)]
pub struct Ui {
    /// When to use colour.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,
    /// Print only the report: no progress, no warnings of the run (mistakes in the config
    /// file, such as unknown keys, are still shown).
    #[arg(short, long, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Print more detail on stderr.
    #[arg(short, long)]
    pub verbose: bool,
}

/// `warden review`.
#[derive(Debug, Clone, Args, Default)]
pub struct ReviewArgs {
    /// Which diff.
    #[command(flatten)]
    pub selection: Selection,
    /// Report format (of stdout, or of a bare `-o PATH`, whose extension says when this
    /// is not given: .sarif, .json, .jsonl, .rdjson, .md, .txt).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<Format>,
    /// Shorthand for --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Write a report to PATH: `FORMAT=PATH` (repeatable; e.g. `sarif=warden.sarif`) adds
    /// a report in that format; a bare PATH receives the --format report instead of
    /// stdout. Every file is created before the first model request.
    #[arg(short, long = "output", value_name = "[FORMAT=]PATH")]
    pub outputs: Vec<OutputSpec>,
    /// Fail (exit 1) on a finding at or above this severity, for every skill (`off`: never).
    #[arg(long, value_enum, ignore_case = true, value_name = "SEV")]
    pub fail_on: Option<FailOn>,
    /// Report findings at or above this severity, for every skill.
    #[arg(long, value_enum, ignore_case = true, value_name = "SEV")]
    pub report_on: Option<Severity>,
    /// Drop findings below this confidence, for every skill.
    #[arg(long, value_enum, ignore_case = true, value_name = "LVL")]
    pub min_confidence: Option<Confidence>,
    /// Review budget for the whole run, e.g. 15m, 90s (at most 7 days).
    #[arg(long, value_name = "DUR", value_parser = parse_budget)]
    pub budget: Option<Duration>,
    /// Then publish the review on the pull request the CI event names (as `warden publish`
    /// does; the token from `[publish] tokenEnv`, checked before the review starts).
    #[arg(long, value_enum, value_name = "FORGE")]
    pub publish: Option<PublishTo>,
    /// Use the built-in simulator instead of the configured routes: a `quick` (or
    /// PROFILE: healthy, slow-tail, outage, …) primary and a `healthy` fallback, played 60x
    /// faster, with the budgets scaled to match. No key, no network.
    #[arg(long, value_name = "PROFILE", num_args = 0..=1, require_equals = true, default_missing_value = "quick")]
    pub sim: Option<String>,
    /// Review every unit in one request: no skill reads the repository in a tool loop
    /// (as `[execution] tools = false`).
    #[arg(long)]
    pub no_tools: bool,
    /// Write a trace of the run to FILE: every span and event as JSONL, or with
    /// `--trace-format chrome` a timeline for Perfetto or chrome://tracing.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// The --trace file's format.
    #[arg(long, value_enum, default_value_t = TraceFormat::Jsonl, value_name = "FORMAT", requires = "trace")]
    pub trace_format: TraceFormat,
    /// Put prompts (diff content) on attempt spans in the trace and OTLP export. Off by
    /// default: telemetry carries no repository content unless you opt in.
    #[arg(long)]
    pub trace_content: bool,
    /// The result cache.
    #[command(flatten)]
    pub cache: CacheFlags,
    /// Review only the K-th of N disjoint parts of the plan (units dealt round-robin in
    /// priority order), e.g. one CI matrix job each; join the reports with `warden merge`.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<Shard>,
    /// Output settings.
    #[command(flatten)]
    pub ui: Ui,
}

/// Where the result cache lives and whether a review uses it.
#[derive(Debug, Clone, Args, Default)]
pub struct CacheFlags {
    /// Keep reviewed answers in DIR (default: WARDEN_CACHE_DIR, `[cache] dir`, then
    /// $XDG_CACHE_HOME/warden or ~/.cache/warden).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Neither read nor write the result cache: every unit is asked.
    #[arg(long)]
    pub no_cache: bool,
}

/// `warden cache`.
#[derive(Debug, Clone, Args)]
pub struct CacheArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: CacheAction,
    /// Run as if started in DIR (its warden.toml may set `[cache] dir`).
    #[arg(short = 'C', value_name = "DIR", global = true)]
    pub dir: Option<PathBuf>,
    /// Config file (default: warden.toml at the repository root).
    #[arg(short = 'c', long = "config", value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
    /// The cache directory (as `warden review --cache-dir`).
    #[arg(long, value_name = "DIR", global = true)]
    pub cache_dir: Option<PathBuf>,
    /// Refuse the config when it has a key warden does not know (a typo), naming its file
    /// and line, instead of warning; `strictConfig = true` in warden.toml asks the same.
    #[arg(long, global = true)]
    pub strict_config: bool,
}

/// The `warden cache` actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Subcommand)]
pub enum CacheAction {
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

/// `warden merge`.
#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// The JSON reports of `warden review --shard K/N --json`, one per shard.
    #[arg(value_name = "REPORT.json", required = true)]
    pub reports: Vec<PathBuf>,
    /// Report format (of stdout, or of a bare `-o PATH`, whose extension says when this
    /// is not given: .sarif, .json, .jsonl, .rdjson, .md, .txt).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<Format>,
    /// Shorthand for --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Write a report to PATH: `FORMAT=PATH` (repeatable), or a bare PATH for the
    /// --format report instead of stdout.
    #[arg(short, long = "output", value_name = "[FORMAT=]PATH")]
    pub outputs: Vec<OutputSpec>,
    /// Output settings.
    #[command(flatten)]
    pub ui: Ui,
}

impl MergeArgs {
    /// The report format of stdout, or of a bare `-o PATH` (`--json` is `--format json`;
    /// with neither flag, the bare path's extension says).
    pub fn format(&self) -> crate::error::Result<ReviewFormat> {
        report_format(self.json, self.format, &self.outputs)
    }
}

/// `--json` is `--format json`; neither: the format a bare `-o PATH`'s extension names
/// (`-o out.sarif` writes SARIF), else text. An extension that names no format, with no
/// format flag, is a usage error naming `-o`.
fn report_format(
    json: bool,
    format: Option<Format>,
    outputs: &[OutputSpec],
) -> crate::error::Result<ReviewFormat> {
    Ok(match (json, format) {
        (true, _) => ReviewFormat::Json,
        (false, Some(f)) => f,
        (false, None) => match outputs.iter().find(|o| o.format.is_none()) {
            Some(bare) => Format::from_extension(&bare.path)
                .map_err(crate::error::Error::Usage)?
                .unwrap_or(ReviewFormat::Text),
            None => ReviewFormat::Text,
        },
    })
}

/// `warden plan`.
#[derive(Debug, Clone, Args)]
pub struct PlanArgs {
    /// Which diff.
    #[command(flatten)]
    pub selection: Selection,
    /// Output format.
    #[arg(long, value_enum, default_value_t = PlanFormat::Text, value_name = "FORMAT")]
    pub format: PlanFormat,
    /// Shorthand for --format json.
    #[arg(long)]
    pub json: bool,
    /// Write the plan to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Output settings.
    #[command(flatten)]
    pub ui: Ui,
}

/// `warden skills`.
#[derive(Debug, Clone, Args)]
pub struct SkillsArgs {
    /// Run as if started in DIR.
    #[arg(short = 'C', value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Config file (default: warden.toml at the repository root).
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Refuse the config when it has a key warden does not know (a typo), naming its file
    /// and line, instead of warning; `strictConfig = true` in warden.toml asks the same.
    #[arg(long)]
    pub strict_config: bool,
    /// Output settings.
    #[command(flatten)]
    pub ui: Ui,
}

/// `warden init`.
#[derive(Debug, Clone, Args)]
pub struct InitArgs {
    /// Run as if started in DIR.
    #[arg(short = 'C', value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Overwrite an existing warden.toml.
    #[arg(long)]
    pub force: bool,
    /// Write the full example instead of the starter: every key warden reads, with its
    /// default and what it does.
    #[arg(long)]
    pub example: bool,
}

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ColorChoice {
    /// Colour on a terminal, unless `NO_COLOR` is set.
    #[default]
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

pub use crate::report::{Format, OutputSpec};
pub use crate::telemetry::TraceFormat;

/// `warden review --format` (the report formats).
pub type ReviewFormat = Format;

/// `warden plan --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    /// For people.
    Text,
    /// The plan as JSON.
    Json,
}

/// `--budget`: a duration such as 15m, 90s or 500ms, above zero and at most 7 days.
fn parse_budget(s: &str) -> Result<Duration, String> {
    config::parse_duration(s)
}

impl Selection {
    /// The `warden plan` command that shows this selection's plan, as people type it.
    pub fn plan_command(&self) -> String {
        let mut words = vec!["warden".to_string(), "plan".to_string()];
        let mut push = |flag: &str, value: Option<String>| {
            words.push(flag.to_string());
            words.extend(value);
        };
        if let Some(d) = &self.dir {
            push("-C", Some(d.display().to_string()));
        }
        if let Some(c) = &self.config {
            push("-c", Some(c.display().to_string()));
        }
        if let Some(b) = &self.base {
            push("--base", Some(b.clone()));
        }
        if let Some(h) = &self.head {
            push("--head", Some(h.clone()));
        }
        if self.staged {
            push("--staged", None);
        }
        if let Some(d) = &self.diff {
            push("--diff", Some(d.clone()));
        }
        if let Some(p) = self.strip {
            push("-p", Some(p.to_string()));
        }
        if self.demo {
            push("--demo", None);
        }
        for s in &self.skills {
            push("--skill", Some(s.clone()));
        }
        words.extend(self.target.clone());
        words
            .into_iter()
            .map(|w| {
                if w.is_empty() || w.contains(|c: char| c.is_whitespace() || "'\"$`\\".contains(c))
                {
                    format!("'{}'", w.replace('\'', "'\\''"))
                } else {
                    w
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The selection as the library takes it: flags combined into one target.
    pub fn resolve(&self) -> crate::Result<prepare::Selection> {
        let ci = crate::trust::ci_from_env();
        Ok(prepare::Selection {
            target: Target::from_args(
                self.target.as_deref(),
                self.base.as_deref(),
                self.head.as_deref(),
                self.staged,
                self.diff.as_deref(),
                self.demo,
            )?,
            strip: match (self.strip, self.diff.is_some()) {
                (Some(_), false) => {
                    return Err(crate::Error::Usage(
                        "-p/--strip applies to a patch: use it with --diff FILE|-".into(),
                    ));
                }
                (strip, _) => strip.map(usize::from),
            },
            dir: prepare::start_dir(self.dir.as_deref())?,
            config: self.config.clone(),
            skills: self.skills.clone(),
            ci,
            event: if ci {
                prepare::run_event_from_env()
            } else {
                None
            },
            trust_head_config: self.trust_head_config,
            strict_config: self.strict_config,
            overrides: Overrides::default(),
        })
    }
}

impl ReviewArgs {
    /// The selection, with the settings these flags override.
    pub fn resolve(&self) -> crate::Result<prepare::Selection> {
        Ok(prepare::Selection {
            overrides: self.overrides(),
            ..self.selection.resolve()?
        })
    }

    /// The report format of stdout, or of a bare `-o PATH` (`--json` is `--format json`;
    /// with neither flag, the bare path's extension says).
    pub fn format(&self) -> crate::error::Result<ReviewFormat> {
        report_format(self.json, self.format, &self.outputs)
    }

    /// The settings these flags override.
    pub fn overrides(&self) -> Overrides {
        Overrides {
            fail_on: self.fail_on,
            report_on: self.report_on,
            min_confidence: self.min_confidence,
            budget: self.budget,
            sim: self.sim.clone(),
            no_tools: self.no_tools,
        }
    }
}

impl ValueEnum for Severity {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            Severity::Critical,
            Severity::High,
            Severity::Medium,
            Severity::Low,
            Severity::Info,
        ]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.as_str()))
    }
}

impl ValueEnum for Confidence {
    fn value_variants<'a>() -> &'a [Self] {
        &[Confidence::High, Confidence::Medium, Confidence::Low]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.as_str()))
    }
}

impl ValueEnum for FailOn {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            FailOn::At(Severity::Critical),
            FailOn::At(Severity::High),
            FailOn::At(Severity::Medium),
            FailOn::At(Severity::Low),
            FailOn::At(Severity::Info),
            FailOn::Off,
        ]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            FailOn::Off => PossibleValue::new("off").alias("none"),
            FailOn::At(s) => PossibleValue::new(s.as_str()),
        })
    }
}

/// `warden man`.
#[derive(Debug, Clone, Args)]
pub struct ManArgs {
    /// The command whose page to print (warden-COMMAND(1)); none: warden(1).
    #[arg(value_name = "COMMAND")]
    pub command: Option<String>,
    /// Write every page (warden.1 and one per command) into DIR instead of printing one.
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub dir: Option<PathBuf>,
}
