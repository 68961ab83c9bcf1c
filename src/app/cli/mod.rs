//! Command-line types (clap): the binary's alone. Values are typed at this boundary
//! (severities, formats, durations), so `--help` lists them and a bad value is a clap error
//! naming the flag. The commands turn them into the library's plain types
//! ([`warden::prepare::Selection`], [`warden::config::Overrides`], [`warden::report::Format`]);
//! nothing in the library sees clap.

mod commands;
mod eval;
mod review;
mod selection;
#[cfg(test)]
mod tests;
mod values;

use clap::{Args, Parser, Subcommand, ValueEnum};
pub(crate) use commands::{
    CacheAction, CacheArgs, CompletionsArgs, InitArgs, ManArgs, PlanArgs, PlanFormat, PublishArgs,
    PublishTo, SimulateArgs, SkillsArgs,
};
pub(crate) use eval::{EvalArgs, EvalFormat};
pub(crate) use review::{MergeArgs, ReviewArgs};
use warden::report::Format;

/// `warden [COMMAND] [ARGS]`.
#[derive(Debug, Parser)]
#[command(
    name = "warden",
    version,
    about = "AI code review that finishes inside its budget and says what it did not review",
    args_conflicts_with_subcommands = true,
    after_help = "Start with `warden review --sim --demo` (no key, no network), then `warden init`.\nEvery page of the manual: https://github.com/warden-review/warden/tree/main/docs"
)]
pub(crate) struct Cli {
    /// The command; none means `review`.
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
    /// With no subcommand, warden runs `review`.
    #[command(flatten)]
    pub(crate) review: ReviewArgs,
}

/// A report format written as a flag (`--sarif`, `--markdown=x`) where warden has none of
/// that name: the message that says how to ask for that format. Without it clap suggests
/// the nearest flag by spelling (`--sarif` → `--shard`).
pub(crate) fn format_as_flag(args: &[std::ffi::OsString]) -> Option<String> {
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
pub(crate) fn command_after_options(args: &[std::ffi::OsString]) -> Option<String> {
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
pub(crate) enum Command {
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

/// The names of warden's commands (as `warden help` lists them), for "did you mean".
pub(crate) fn command_names() -> Vec<String> {
    use clap::CommandFactory;
    Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect()
}

/// The command `word` was probably meant to be: the closest command name within two
/// edits (`revew` → `review`), None when none is that close.
pub(crate) fn near_command(word: &str) -> Option<String> {
    let word = word.to_ascii_lowercase();
    command_names()
        .into_iter()
        .map(|name| (strsim::damerau_levenshtein(&word, &name), name))
        .filter(|(d, name)| *d > 0 && *d <= 2 && *d < name.len())
        .min_by_key(|(d, _)| *d)
        .map(|(_, name)| name)
}

/// Output settings shared by the commands.
#[derive(Debug, Clone, Args, Default)]
pub(crate) struct Ui {
    /// When to use colour.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub(crate) color: ColorChoice,
    /// Print only the report: no progress, no warnings of the run (mistakes in the config
    /// file, such as unknown keys, are still shown).
    #[arg(short, long, conflicts_with = "verbose")]
    pub(crate) quiet: bool,
    /// Print more detail on stderr.
    #[arg(short, long)]
    pub(crate) verbose: bool,
}

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum ColorChoice {
    /// Colour on a terminal, unless `NO_COLOR` is set.
    #[default]
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}
