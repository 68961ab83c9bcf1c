//! `warden review`: prepare, run the review with progress and telemetry listening to its
//! events, render the report, map the exit code.

use super::signals::Signals;
use super::{emit, setup_color, warn};
use std::sync::Arc;
use warden::cli::{ReviewArgs, ReviewFormat};
use warden::error::{Error, Result};
use warden::prepare::prepare;
use warden::report::progress::{Mode, Progress};
use warden::report::{Report, escape, github, sarif, summary_md, text};
use warden::review::{self, ReviewInput};
use warden::telemetry::{self, Telemetry};

pub(super) fn review_cmd(args: &ReviewArgs) -> Result<i32> {
    setup_color(&args.ui, args.output.is_some());
    let mut prepared = prepare(&args.selection.resolve()?)?;
    prepared.settings.apply(&args.overrides())?;
    warn(&args.ui, &prepared.settings);
    let fail_on = prepared.settings.fail_on;
    let input = ReviewInput {
        routes: review::routes(&prepared.settings)?,
        plan: prepared.plan,
        skills: prepared.active,
        settings: prepared.settings,
    };
    let telemetry = Telemetry::init(&telemetry::Options {
        trace_file: args.trace.clone(),
        trace_content: args.trace_content,
    })?;
    let progress = Arc::new(Progress::new(Mode::detect(args.ui.quiet), args.ui.verbose));
    let sink = progress.sink().tee(telemetry.sink());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::io("<tokio runtime>", e))?;
    let signals = Signals::default();
    let report = runtime.block_on(async {
        signals.listen();
        review::run(input, sink, signals.token.clone()).await
    });
    progress.finish();
    telemetry.finish();
    let format = args.format();
    emit(args.output.as_deref(), &render(format, &report))?;
    if format == ReviewFormat::Github {
        append_step_summary(&report)?;
    }
    // Dropping the runtime would wait for the signal listener; it is not needed now.
    runtime.shutdown_background();
    Ok(signals.code().unwrap_or_else(|| report.exit_code(fail_on)))
}

fn render(format: ReviewFormat, report: &Report) -> String {
    match format {
        ReviewFormat::Text => text::render(report),
        ReviewFormat::Json => {
            let mut s = serde_json::to_string_pretty(report).expect("report serializes");
            s.push('\n');
            escape::json_doc(&s)
        }
        ReviewFormat::Sarif => escape::json_doc(&sarif::render(report)),
        ReviewFormat::Github => github::render(report),
    }
}

/// In GitHub Actions, the Markdown summary goes to `$GITHUB_STEP_SUMMARY` too.
fn append_step_summary(report: &Report) -> Result<()> {
    use std::io::Write;
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) else {
        return Ok(());
    };
    let path = std::path::PathBuf::from(path);
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(summary_md::render(report).as_bytes()))
        .map_err(|e| Error::io(&path, e))
}
