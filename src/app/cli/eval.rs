//! `warden eval`: the corpus, the evaluation's budgets and runs, and the report format.

use super::Ui;
use super::values;
use clap::{Args, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;
use warden::config::Overrides;
use warden::severity::{Confidence, Severity};

/// `warden eval`.
#[derive(Debug, Clone, Args)]
pub(crate) struct EvalArgs {
    /// The corpus: a JSONL file of AACR-Bench-shaped cases, a case folder (holding
    /// case.json) or a folder of case folders.
    #[arg(
        value_name = "CORPUS",
        required_unless_present = "from_history",
        conflicts_with = "from_history"
    )]
    pub(crate) corpus: Option<PathBuf>,
    /// Where the JSONL corpus's repositories are cloned: `repo` owner/name is DIR/owner/name,
    /// DIR/name or DIR/owner__name (default: the JSONL file's folder). Nothing is fetched.
    #[arg(long, value_name = "DIR")]
    pub(crate) repos: Option<PathBuf>,
    /// Build the corpus from the repository's last N fix commits, each reviewed reversed
    /// (the change that puts the bug back), the lines the fix changed as the reference.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub(crate) from_history: Option<u32>,
    /// With --from-history: the commit subjects that are fixes (a regular expression).
    #[arg(long, value_name = "REGEX", default_value = warden::eval::history::DEFAULT_PATTERN, value_parser = parse_regex)]
    pub(crate) fix_pattern: regex::Regex,
    /// With --from-history: the most changed lines (code files, whitespace ignored) a fix
    /// may have.
    #[arg(long, value_name = "LINES", default_value_t = warden::eval::history::DEFAULT_MAX_LINES)]
    pub(crate) max_fix_lines: u32,
    /// Run as if started in DIR (its repository's warden.toml and skills are the setup
    /// evaluated).
    #[arg(short = 'C', value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,
    /// The config every case is reviewed with (default: warden.toml at the repository root).
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Refuse the config when it has a key warden does not know (a typo), naming its file
    /// and line, instead of warning; `strictConfig = true` in warden.toml asks the same.
    #[arg(long)]
    pub(crate) strict_config: bool,
    /// Run only this skill (repeatable).
    #[arg(long = "skill", value_name = "NAME")]
    pub(crate) skills: Vec<String>,
    /// The whole evaluation's budget: case reviews running when it ends are cancelled
    /// (what they received is scored), later ones do not start.
    #[arg(long, value_name = "DUR", value_parser = values::parse_budget)]
    pub(crate) budget: Option<Duration>,
    /// Each case review's budget (default: the config's review budget).
    #[arg(long, value_name = "DUR", value_parser = values::parse_budget)]
    pub(crate) case_budget: Option<Duration>,
    /// Review every case N times, for the figures' spread.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub(crate) runs: u32,
    /// A finding matches a reference on the same file whose lines overlap or lie within
    /// this many lines.
    #[arg(long, default_value_t = 3, value_name = "LINES", value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub(crate) line_window: u32,
    /// Ask this route whether each candidate pair means the same problem (its cost is
    /// reported apart).
    #[arg(long, value_name = "ROUTE")]
    pub(crate) judge: Option<String>,
    /// Use the built-in simulator instead of the configured routes (default profile:
    /// healthy). No key, no network.
    #[arg(long, value_name = "PROFILE", num_args = 0..=1, require_equals = true, default_missing_value = "healthy")]
    pub(crate) sim: Option<String>,
    /// Report findings at or above this severity, for every skill.
    #[arg(long, ignore_case = true, value_name = "SEV", value_parser = values::severity())]
    pub(crate) report_on: Option<Severity>,
    /// Drop findings below this confidence, for every skill.
    #[arg(long, ignore_case = true, value_name = "LVL", value_parser = values::confidence())]
    pub(crate) min_confidence: Option<Confidence>,
    /// Use the result cache (off by default: an evaluation measures the model's answers).
    #[arg(long)]
    pub(crate) cache: bool,
    /// With --cache: keep answers in DIR.
    #[arg(long, value_name = "DIR", requires = "cache")]
    pub(crate) cache_dir: Option<PathBuf>,
    /// Print each figure's change against an earlier `warden eval --json` report.
    #[arg(long, value_name = "FILE")]
    pub(crate) baseline: Option<PathBuf>,
    /// Report format.
    #[arg(long, value_enum, default_value_t = EvalFormat::Text, value_name = "FORMAT")]
    pub(crate) format: EvalFormat,
    /// Shorthand for --format json.
    #[arg(long)]
    pub(crate) json: bool,
    /// Write the report to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// Output settings.
    #[command(flatten)]
    pub(crate) ui: Ui,
}

/// `warden eval --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum EvalFormat {
    /// For people.
    Text,
    /// schemas/eval-report-v1.schema.json.
    Json,
    /// A Markdown summary.
    Markdown,
}

/// `--fix-pattern`: a regular expression.
fn parse_regex(s: &str) -> Result<regex::Regex, NotARegex> {
    regex::Regex::new(s).map_err(NotARegex)
}

/// A `--fix-pattern` the regex crate refuses, with its reason.
#[derive(Debug, thiserror::Error)]
#[error("not a regular expression: {0}")]
pub(crate) struct NotARegex(regex::Error);

impl EvalArgs {
    /// The settings these flags override (each case review's budget among them).
    pub(crate) fn overrides(&self) -> Overrides {
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
    pub(crate) fn format(&self) -> EvalFormat {
        if self.json {
            EvalFormat::Json
        } else {
            self.format
        }
    }
}
