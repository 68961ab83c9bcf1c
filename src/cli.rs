//! Command-line types (clap). They stop at `app.rs`, which turns them into a target and
//! settings; nothing below sees clap.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "warden",
    version,
    about = "AI code review that finishes inside its budget and says what it did not review",
    args_conflicts_with_subcommands = true,
    disable_help_subcommand = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// With no subcommand, warden runs `review`.
    #[command(flatten)]
    pub review: ReviewArgs,
}

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
}

/// Which diff to review, and where the repository and config are.
#[derive(Debug, Clone, Args, Default)]
pub struct Selection {
    /// A..B, A...B (from the merge-base) or REF (working tree vs REF). Default: uncommitted
    /// changes when the tree is dirty, else the branch vs its merge-base with the default branch.
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
    /// Run as if started in DIR.
    #[arg(short = 'C', value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Config file (default: warden.toml at the repository root).
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Run only this skill (repeatable).
    #[arg(long = "skill", value_name = "NAME")]
    pub skills: Vec<String>,
}

#[derive(Debug, Clone, Args, Default)]
pub struct Ui {
    /// When to use colour.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,
    /// Print only the report (no progress, no warnings).
    #[arg(short, long, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Print more detail on stderr.
    #[arg(short, long)]
    pub verbose: bool,
}

#[derive(Debug, Clone, Args, Default)]
pub struct ReviewArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// Report format.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<ReviewFormat>,
    /// Shorthand for --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Write the report to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Fail (exit 1) on a finding at or above this severity: critical, high, medium, low, info, off.
    #[arg(long, value_name = "SEV")]
    pub fail_on: Option<String>,
    /// Report findings at or above this severity.
    #[arg(long, value_name = "SEV")]
    pub report_on: Option<String>,
    /// Drop findings below this confidence: high, medium, low.
    #[arg(long, value_name = "LVL")]
    pub min_confidence: Option<String>,
    /// Review budget for the whole run, e.g. 15m, 90s.
    #[arg(long, value_name = "DUR")]
    pub budget: Option<String>,
    /// Use the built-in simulator instead of the configured routes: a `slow-tail` (or
    /// PROFILE) primary and a `healthy` fallback, played 60x faster, with the budgets
    /// scaled to match. No key, no network.
    #[arg(long, value_name = "PROFILE", num_args = 0..=1, require_equals = true, default_missing_value = "slow-tail")]
    pub sim: Option<String>,
    /// Write a JSONL trace of every span and event (review, units, attempts) to FILE.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Put prompts (diff content) on attempt spans in the trace and OTLP export. Off by
    /// default: telemetry carries no repository content unless you opt in.
    #[arg(long)]
    pub trace_content: bool,
    #[command(flatten)]
    pub ui: Ui,
}

#[derive(Debug, Clone, Args)]
pub struct PlanArgs {
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
    #[command(flatten)]
    pub ui: Ui,
}

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
    #[command(flatten)]
    pub ui: Ui,
}

#[derive(Debug, Clone, Args)]
pub struct InitArgs {
    /// Run as if started in DIR.
    #[arg(short = 'C', value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Overwrite an existing warden.toml.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReviewFormat {
    Text,
    Json,
    Sarif,
    Github,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    Text,
    Json,
}
