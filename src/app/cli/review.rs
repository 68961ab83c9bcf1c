//! `warden review` and `warden merge`: the report flags (formats, outputs, thresholds,
//! budget, cache, trace, shard) and the report format they ask for.

use super::selection::Selection;
use super::values;
use super::{PublishTo, Ui};
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;
use warden::config::Overrides;
use warden::prepare;
use warden::report::{Format, OutputSpec};
use warden::severity::{Confidence, FailOn, Severity};
use warden::shard::Shard;
use warden::telemetry::TraceFormat;

/// `warden review`.
#[derive(Debug, Clone, Args, Default)]
pub(crate) struct ReviewArgs {
    /// Which diff.
    #[command(flatten)]
    pub(crate) selection: Selection,
    /// Report format (of stdout, or of a bare `-o PATH`, whose extension says when this
    /// is not given: .sarif, .json, .jsonl, .rdjson, .md, .txt).
    #[arg(long, value_name = "FORMAT", value_parser = values::format())]
    pub(crate) format: Option<Format>,
    /// Shorthand for --format json.
    #[arg(long, conflicts_with = "format")]
    pub(crate) json: bool,
    /// Write a report to PATH: `FORMAT=PATH` (repeatable; e.g. `sarif=warden.sarif`) adds
    /// a report in that format; a bare PATH receives the --format report instead of
    /// stdout. Every file is created before the first model request.
    #[arg(short, long = "output", value_name = "[FORMAT=]PATH")]
    pub(crate) outputs: Vec<OutputSpec>,
    /// Fail (exit 1) on a finding at or above this severity, for every skill (`off`: never).
    #[arg(long, ignore_case = true, value_name = "SEV", value_parser = values::fail_on())]
    pub(crate) fail_on: Option<FailOn>,
    /// Report findings at or above this severity, for every skill.
    #[arg(long, ignore_case = true, value_name = "SEV", value_parser = values::severity())]
    pub(crate) report_on: Option<Severity>,
    /// Drop findings below this confidence, for every skill.
    #[arg(long, ignore_case = true, value_name = "LVL", value_parser = values::confidence())]
    pub(crate) min_confidence: Option<Confidence>,
    /// Review budget for the whole run, e.g. 15m, 90s (at most 7 days).
    #[arg(long, value_name = "DUR", value_parser = values::parse_budget)]
    pub(crate) budget: Option<Duration>,
    /// Then publish the review on the pull request the CI event names (as `warden publish`
    /// does; the token from `[publish] tokenEnv`, checked before the review starts).
    #[arg(long, value_enum, value_name = "FORGE")]
    pub(crate) publish: Option<PublishTo>,
    /// Use the built-in simulator instead of the configured routes: a `quick` (or
    /// PROFILE: healthy, slow-tail, outage, …) primary and a `healthy` fallback, played 60x
    /// faster, with the budgets scaled to match. No key, no network.
    #[arg(long, value_name = "PROFILE", num_args = 0..=1, require_equals = true, default_missing_value = "quick")]
    pub(crate) sim: Option<String>,
    /// Review every unit in one request: no skill reads the repository in a tool loop
    /// (as `[execution] tools = false`).
    #[arg(long)]
    pub(crate) no_tools: bool,
    /// Write a trace of the run to FILE: every span and event as JSONL, or with
    /// `--trace-format chrome` a timeline for Perfetto or chrome://tracing.
    #[arg(long, value_name = "FILE")]
    pub(crate) trace: Option<PathBuf>,
    /// The --trace file's format.
    #[arg(long, default_value = "jsonl", value_name = "FORMAT", requires = "trace", value_parser = values::trace_format())]
    pub(crate) trace_format: TraceFormat,
    /// Put prompts (diff content) on attempt spans in the trace and OTLP export. Off by
    /// default: telemetry carries no repository content unless you opt in.
    #[arg(long)]
    pub(crate) trace_content: bool,
    /// The result cache.
    #[command(flatten)]
    pub(crate) cache: CacheFlags,
    /// Review only the K-th of N disjoint parts of the plan (units dealt round-robin in
    /// priority order), e.g. one CI matrix job each; join the reports with `warden merge`.
    #[arg(long, value_name = "K/N")]
    pub(crate) shard: Option<Shard>,
    /// Output settings.
    #[command(flatten)]
    pub(crate) ui: Ui,
}

/// Where the result cache lives and whether a review uses it.
#[derive(Debug, Clone, Args, Default)]
pub(crate) struct CacheFlags {
    /// Keep reviewed answers in DIR (default: WARDEN_CACHE_DIR, `[cache] dir`, then
    /// $XDG_CACHE_HOME/warden or ~/.cache/warden).
    #[arg(long, value_name = "DIR")]
    pub(crate) cache_dir: Option<PathBuf>,
    /// Neither read nor write the result cache: every unit is asked.
    #[arg(long)]
    pub(crate) no_cache: bool,
}

/// `warden merge`.
#[derive(Debug, Clone, Args)]
pub(crate) struct MergeArgs {
    /// The JSON reports of `warden review --shard K/N --json`, one per shard.
    #[arg(value_name = "REPORT.json", required = true)]
    pub(crate) reports: Vec<PathBuf>,
    /// Report format (of stdout, or of a bare `-o PATH`, whose extension says when this
    /// is not given: .sarif, .json, .jsonl, .rdjson, .md, .txt).
    #[arg(long, value_name = "FORMAT", value_parser = values::format())]
    pub(crate) format: Option<Format>,
    /// Shorthand for --format json.
    #[arg(long, conflicts_with = "format")]
    pub(crate) json: bool,
    /// Write a report to PATH: `FORMAT=PATH` (repeatable), or a bare PATH for the
    /// --format report instead of stdout.
    #[arg(short, long = "output", value_name = "[FORMAT=]PATH")]
    pub(crate) outputs: Vec<OutputSpec>,
    /// Output settings.
    #[command(flatten)]
    pub(crate) ui: Ui,
}

impl MergeArgs {
    /// The report format of stdout, or of a bare `-o PATH` (`--json` is `--format json`;
    /// with neither flag, the bare path's extension says).
    pub(crate) fn format(&self) -> warden::Result<Format> {
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
) -> warden::Result<Format> {
    Ok(match (json, format) {
        (true, _) => Format::Json,
        (false, Some(f)) => f,
        (false, None) => match outputs.iter().find(|o| o.format.is_none()) {
            Some(bare) => Format::from_extension(&bare.path)
                .map_err(warden::Error::Usage)?
                .unwrap_or(Format::Text),
            None => Format::Text,
        },
    })
}

impl ReviewArgs {
    /// The selection, with the settings these flags override.
    pub(crate) fn resolve(&self) -> warden::Result<prepare::Selection> {
        Ok(prepare::Selection {
            overrides: self.overrides(),
            ..self.selection.resolve()?
        })
    }

    /// The report format of stdout, or of a bare `-o PATH` (`--json` is `--format json`;
    /// with neither flag, the bare path's extension says).
    pub(crate) fn format(&self) -> warden::Result<Format> {
        report_format(self.json, self.format, &self.outputs)
    }

    /// The settings these flags override.
    pub(crate) fn overrides(&self) -> Overrides {
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
