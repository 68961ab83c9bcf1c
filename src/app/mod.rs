//! The commands: parse → call the library → render → exit code. Nothing here decides
//! policy; the library never calls back up into this layer.

mod cache;
pub(crate) mod cli;
mod completions;
mod eval;
mod init;
mod merge;
mod publish;
mod review;
mod signals;
mod simulate;
mod skills;

use cli::{Cli, ColorChoice, Command, PlanArgs, PlanFormat, Ui};
use std::io::IsTerminal;
use std::path::Path;
use warden::config::Settings;
use warden::error::{Error, Result};
use warden::plan;
use warden::prepare::prepare;
use warden::text::escape;
use warden::trust::TrustReport;

/// Runs the command line; returns the process exit code.
pub fn run(cli: Cli) -> Result<i32> {
    match cli.command {
        Some(Command::Plan(args)) => plan_cmd(&args),
        Some(Command::Skills(args)) => skills::skills_cmd(&args),
        Some(Command::Init(args)) => init::init_cmd(&args),
        Some(Command::Cache(args)) => cache::cache_cmd(&args),
        Some(Command::Simulate(args)) => simulate::simulate_cmd(&args),
        Some(Command::Review(args)) => review::review_cmd(&args),
        Some(Command::Merge(args)) => merge::merge_cmd(&args),
        Some(Command::Eval(args)) => eval::eval_cmd(&args),
        Some(Command::Publish(args)) => publish::publish_cmd(&args),
        Some(Command::Completions(args)) => completions::completions_cmd(&args),
        Some(Command::Man(args)) => completions::man_cmd(&args),
        None => review::review_cmd(&cli.review)
            .map_err(|e| misspelt_command(e, cli.review.selection.target.as_deref())),
    }
}

/// `warden revew`: a target that is neither a ref nor near one, but close to a command,
/// was meant as the command.
fn misspelt_command(err: Error, target: Option<&str>) -> Error {
    let Error::UnknownRef {
        spec, near: None, ..
    } = &err
    else {
        return err;
    };
    match cli::near_command(spec) {
        Some(cmd) if Some(spec.as_str()) == target => Error::Usage(format!(
            "`{spec}` is neither a command nor a ref of this repository: did you mean `warden {cmd}`? (`warden help` lists the commands)"
        )),
        _ => err,
    }
}

/// Sets colour output for stdout and stderr from `--color` and `NO_COLOR`.
fn setup_color(ui: &Ui, to_file: bool) {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let on = |terminal: bool| match ui.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => !no_color && terminal,
    };
    console::set_colors_enabled(on(!to_file && std::io::stdout().is_terminal()));
    console::set_colors_enabled_stderr(on(std::io::stderr().is_terminal()));
}

/// Writes `text` to `-o FILE` or stdout, through the line guard (plans and skill lists
/// quote repository names). A closed stdout (`warden --json | head`) is not an error:
/// warden stops writing and exits quietly, as ripgrep does.
fn emit(output: Option<&Path>, text: &str) -> Result<()> {
    let guarded = escape::guard(text);
    let text = guarded.as_ref();
    if let Some(path) = output {
        let checkout = std::env::current_dir()
            .ok()
            .and_then(|d| warden::prepare::repo_root(&d));
        warden::outputs::refuse_linked_folders(path, checkout.as_deref(), "-o")?;
        let written =
            warden::atomic_file::Output::open(path, checkout.as_deref()).and_then(|mut o| {
                std::io::Write::write_all(o.file(), text.as_bytes())?;
                o.commit()
            });
        return written.map_err(|e| {
            Error::Usage(format!(
                "-o {}: cannot write the file ({e}): create its directory or choose another path",
                path.display()
            ))
        });
    }
    warden::outputs::write_stdout(text).map_err(|e| Error::io("<stdout>", e))
}

/// Prints the config's warnings on stderr. With `-q` the unknown keys are still shown: a
/// misspelt key is a mistake in the user's own file, and a quiet CI log is where it would
/// hide longest (Warden settings warden does not use are not mistakes: quiet).
fn warn(ui: &Ui, settings: &Settings) {
    let mistake = |w: &str| {
        settings.unknown_keys.iter().any(|k| k.warning() == w)
            || (w.starts_with("… and ") && w.contains("more unknown keys"))
    };
    for w in settings.warnings.iter().filter(|w| !ui.quiet || mistake(w)) {
        warden::text::stdio::eprint_line(&format!(
            "{} {}",
            console::style("warning:").yellow().for_stderr(),
            escape::block(&warden::config::shown_warning(
                settings.config_path.as_deref(),
                w
            ))
        ));
    }
}

/// The stderr warning when the change under review touches config or skills (not with
/// `-q`; the reports say it too).
fn warn_trust(ui: &Ui, trust: &TrustReport) {
    if ui.quiet {
        return;
    }
    if let Some(w) = trust.warning() {
        warden::text::stdio::eprint_line(&format!(
            "{} {}",
            console::style("warning:").yellow().for_stderr(),
            escape::block(&w)
        ));
    }
}

/// Where the result cache's one warning goes: stderr, like the config's (not with `-q`).
fn cache_warn(ui: &Ui) -> warden::cache::Warn {
    let quiet = ui.quiet;
    std::sync::Arc::new(move |m: &str| {
        if !quiet {
            warden::text::stdio::eprint_line(&format!(
                "{} {}",
                console::style("warning:").yellow().for_stderr(),
                escape::block(m)
            ));
        }
    })
}

/// `plan --json`: the plan with its `schemaVersion` first, as the report carries one.
#[derive(serde::Serialize)]
struct PlanDoc<'a> {
    #[serde(rename = "schemaVersion")]
    schema_version: u32,
    #[serde(flatten)]
    plan: &'a warden::plan::Plan,
}

fn plan_cmd(args: &PlanArgs) -> Result<i32> {
    setup_color(&args.ui, args.output.is_some());
    let mut prepared = prepare(&args.selection.resolve()?)?;
    warn(&args.ui, &prepared.settings);
    warn_trust(&args.ui, &prepared.trust);
    let local = warden::session::discover_local(&mut prepared.settings);
    let text = if args.json || args.format == PlanFormat::Json {
        let doc = PlanDoc {
            schema_version: warden::plan::SCHEMA_VERSION,
            plan: &prepared.plan,
        };
        let mut s = serde_json::to_string_pretty(&doc).expect("plan serializes");
        s.push('\n');
        escape::json_doc(&s)
    } else {
        let mut text = plan::render_text(&prepared.plan);
        if !local.is_empty() {
            text.push_str("\nLocal model servers\n");
            for line in &local {
                text.push_str(&format!("  {}\n", escape::inline(line)));
            }
        }
        // To a terminal (or COLUMNS), lines fit its width; a file gets them whole.
        let width = args
            .output
            .is_none()
            .then(warden::text::wrap::stdout_columns)
            .flatten();
        warden::text::wrap::block(&text, 4, width)
    };
    emit(args.output.as_deref(), &text)?;
    Ok(0)
}
