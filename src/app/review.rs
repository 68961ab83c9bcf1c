//! `warden review`: prepare, open every output, run the review with progress and
//! telemetry listening to its events, write the reports, map the exit code.

use super::cli::{PublishTo, ReviewArgs, Ui};
use super::signals::Signals;
use super::{cache_warn, setup_color, warn, warn_trust};
use std::sync::Arc;
use warden::error::{Error, Result};
use warden::prepare::prepare;
use warden::progress::{Mode, Progress};
use warden::publish::context::Forge;
use warden::session::{Request, Session};

pub(super) fn review_cmd(args: &ReviewArgs) -> Result<i32> {
    setup_color(&args.ui, args.outputs.iter().any(|o| o.format.is_none()));
    // A bare `-o PATH` whose extension names no format is refused before anything runs.
    let format = args.format()?;
    let selection = args.resolve()?;
    // Files warden writes never go through links the change planted (docs/design.md §14).
    let checkout = warden::prepare::repo_root(&selection.dir);
    if let Some(trace) = &args.trace {
        warden::outputs::refuse_linked_folders(trace, checkout.as_deref(), "--trace")?;
    }
    let signals = listening();
    let mut prepared = prepare(&selection)?;
    warn(&args.ui, &prepared.settings);
    for line in warden::session::discover_local(&mut prepared.settings) {
        if args.ui.verbose {
            warden::text::stdio::eprint_line(&format!(
                "note: {}",
                warden::text::escape::inline(&line)
            ));
        }
    }
    warn_trust(&args.ui, &prepared.trust);
    if let Some(line) = nothing_to_review(args, format, &prepared.plan) {
        warden::outputs::write_stdout(&line).map_err(|e| Error::io("<stdout>", e))?;
        return Ok(0);
    }
    let request = Request {
        format,
        outputs: args.outputs.clone(),
        checkout,
        shard: args.shard,
        cache_dir: args.cache.cache_dir.clone(),
        no_cache: args.cache.no_cache,
        trace: args.trace.clone(),
        trace_format: args.trace_format,
        trace_content: args.trace_content,
        publish: args.publish.map(|to| match to {
            PublishTo::Github => Forge::Github,
            PublishTo::Gitlab => Forge::Gitlab,
        }),
        verbose: args.ui.verbose,
        warn: cache_warn(&args.ui),
        note: note(&args.ui),
    };
    run_and_write(args, Session::open(prepared, request)?, signals)
}

/// Runs the review with progress listening, writes the reports (or leaves them to a
/// signal's fallback), and maps the exit code.
fn run_and_write(args: &ReviewArgs, session: Session, signals: Signals) -> Result<i32> {
    // Whoever takes the outputs writes them: the review, or a signal's fallback.
    let plan_command = args.selection.plan_command();
    signals.set_fallback(Box::new(session.fallback(plan_command.clone())));
    let progress = Arc::new(Progress::new(Mode::detect(args.ui.quiet), args.ui.verbose));
    let (mut report, ending) = session.review(progress.sink(), signals.token.clone());
    report.plan_command = Some(plan_command);
    signals.writing();
    progress.finish();
    let Some(report) = ending.finish(report)? else {
        // A signal's fallback is writing what was known; its deadline ends the process.
        std::thread::sleep(std::time::Duration::from_secs(2));
        return Ok(signals.code().unwrap_or(3));
    };
    if let Some(setup) = report.setup_failure() {
        warden::text::stdio::eprint_line(&format!(
            "{} {}",
            console::style("error:").red().bold().for_stderr(),
            warden::text::escape::block(&setup)
        ));
    }
    let code = signals.code().unwrap_or_else(|| report.exit_code());
    // A failed write on the pull request makes a clean review's run "not done" (3).
    let publish_failed = report.publish.as_ref().is_some_and(|p| p.failed > 0);
    Ok(if code == 0 && publish_failed { 3 } else { code })
}

/// Where the session's notes go: stderr, with `-v` only (every --sim run would open
/// with the cache's).
fn note(ui: &Ui) -> warden::cache::Warn {
    let verbose = ui.verbose;
    Arc::new(move |m: &str| {
        if verbose {
            warden::text::stdio::eprint_line(&format!(
                "{} {}",
                console::style("note:").cyan().for_stderr(),
                m
            ));
        }
    })
}

/// Signals act from the start: preparing a large change is CPU-bound work too (docs/design.md
/// §14); until the review has a plan, the fallback can only say so.
fn listening() -> Signals {
    let signals = Signals::default();
    signals.listen();
    signals.set_fallback(Box::new(|| {
        warden::text::stdio::eprint_line(
            "warden: interrupted while preparing the review: nothing was reviewed",
        );
    }));
    signals
}

/// A text review to stdout with nothing to send: one line naming the selection and what
/// to try, instead of a whole empty report (other formats and `-o` files still get
/// theirs, for the scripts that read them).
fn nothing_to_review(
    args: &ReviewArgs,
    format: warden::report::Format,
    plan: &warden::plan::Plan,
) -> Option<String> {
    let text_only = format == warden::report::Format::Text && args.outputs.is_empty();
    if !plan.units.is_empty() || !text_only || args.shard.is_some() {
        return None;
    }
    Some(format!(
        "{}\n",
        warden::render::text::nothing_to_review(
            &plan.target,
            plan.skipped_files.len(),
            &args.selection.plan_command()
        )
    ))
}
