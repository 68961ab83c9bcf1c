//! `warden review`: prepare, open every output, run the review with progress and
//! telemetry listening to its events, write the reports, map the exit code.

use super::cli::{PublishTo, ReviewArgs};
use super::signals::Signals;
use super::{cache_warn, setup_color, warn, warn_trust};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use warden::cache::location::Sources;
use warden::cache::{self, Levels};
use warden::config::PublishSettings;
use warden::error::{Error, Result};
use warden::fleet::{self, Fleet};
use warden::known::Known;
use warden::outputs::Outputs;
use warden::prepare::prepare;
use warden::progress::{Mode, Progress};
use warden::publish;
use warden::render::Layout;
use warden::report::published::Published;
use warden::report::{WarningSource, Warnings};
use warden::review::{self, ReviewInput};
use warden::telemetry::{self, Telemetry};

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
    for line in super::discover_local(&mut prepared.settings) {
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
    let publish = publish_target(args, &prepared.settings)?;
    let head_has_config = checkout
        .as_deref()
        .is_some_and(|c| c.join(warden::config::FILE_NAME).is_file());
    let routes = review::routes_trusted(&prepared.settings, &prepared.trust, head_has_config)?;
    let target = fleet::target(&prepared.settings.fleet, |k| std::env::var(k).ok())?;
    cache::check_shared(&prepared.settings, target.is_some())?;
    // Warnings of the cache and the fleet go to stderr as they happen and into the report.
    let warnings = Warnings::default();
    if let Some(w) = fleet::unused_caps_warning(&prepared.settings, target.is_some()) {
        warnings.tee(WarningSource::Fleet, cache_warn(&args.ui))(&w);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::io("<tokio runtime>", e))?;
    // The fleet's Redis, when configured: unreachable gives one warning and a local run.
    let fleet = match target {
        Some(t) => runtime.block_on(Fleet::connect(
            t,
            warnings.tee(WarningSource::Fleet, cache_warn(&args.ui)),
        )),
        None => None,
    };
    let cache = open_cache(args, &prepared.settings, fleet.as_ref(), &warnings);
    let known = Known::default();
    let input = ReviewInput {
        fleet,
        routes,
        plan: prepared.plan,
        skills: prepared.active,
        settings: prepared.settings,
        vcs: prepared.vcs,
        trust: Some(prepared.trust),
        skill_uses: prepared.skill_uses,
        cache,
        shard: args.shard,
        warnings,
        bulkhead: None,
        tool_head: prepared.tool_head,
        known: Some(known.clone()),
    };
    // Every output is opened before the first request: a bad path costs no money.
    let step_summary = std::env::var_os("GITHUB_STEP_SUMMARY")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from);
    let outputs = Outputs::open(format, &args.outputs, step_summary, checkout.as_deref())?
        .text_layout(Layout::for_stdout(args.ui.verbose))
        .redacting(warden::report::configured_keys(&input.settings.routes));
    let telemetry = Telemetry::init(&telemetry::Options {
        trace_file: args.trace.clone(),
        trace_format: args.trace_format,
        trace_content: args.trace_content,
        checkout: checkout.clone(),
    })?;
    let run = Run {
        runtime,
        outputs,
        telemetry,
        signals,
        known,
        publish,
    };
    run_and_write(args, input, run)
}

/// What the review runs with once everything is open.
struct Run {
    runtime: tokio::runtime::Runtime,
    outputs: Outputs,
    telemetry: Telemetry,
    signals: Signals,
    known: Known,
    /// `--publish`: where, checked before the review started.
    publish: Option<(publish::Args, publish::Target, PublishSettings)>,
}

/// Runs the review with progress and telemetry listening, writes the reports (or leaves
/// them to a signal's fallback), and maps the exit code.
fn run_and_write(args: &ReviewArgs, input: ReviewInput, run: Run) -> Result<i32> {
    let Run {
        runtime,
        outputs,
        telemetry,
        signals,
        known,
        publish,
    } = run;
    // Whoever takes the outputs writes them: the review, or a signal's fallback.
    let outputs = Arc::new(Mutex::new(Some(outputs)));
    let plan_command = args.selection.plan_command();
    signals.set_fallback(Box::new({
        let (outputs, plan_command) = (outputs.clone(), plan_command.clone());
        move || write_known(&outputs, &known, plan_command)
    }));
    let progress = Arc::new(Progress::new(Mode::detect(args.ui.quiet), args.ui.verbose));
    let sink = progress.sink().tee(telemetry.sink());
    let mut report = runtime.block_on(review::run(input, sink, signals.token.clone()));
    report.plan_command = Some(plan_command);
    signals.writing();
    progress.finish();
    telemetry.finish();
    let Some(outputs) = take(&outputs) else {
        // A signal's fallback is writing what was known; its deadline ends the process.
        std::thread::sleep(std::time::Duration::from_secs(2));
        return Ok(signals.code().unwrap_or(3));
    };
    if let Some((pargs, target, settings)) = publish {
        report.publish = Some(
            match publish::request(target, report.clone(), &pargs, &settings) {
                Ok(req) => runtime.block_on(publish::publish(req)).published,
                Err(e) => Published {
                    to: "github".into(),
                    failed: 1,
                    notes: vec![e.to_string()],
                    ..Default::default()
                },
            },
        );
    }
    outputs.write(&report)?;
    if let Some(setup) = report.setup_failure() {
        warden::text::stdio::eprint_line(&format!(
            "{} {}",
            console::style("error:").red().bold().for_stderr(),
            warden::text::escape::block(&setup)
        ));
    }
    // Dropping the runtime would wait for tasks still parked; they are not needed now.
    runtime.shutdown_background();
    let code = signals.code().unwrap_or_else(|| report.exit_code());
    // A failed write on the pull request makes a clean review's run "not done" (3).
    let publish_failed = report.publish.as_ref().is_some_and(|p| p.failed > 0);
    Ok(if code == 0 && publish_failed { 3 } else { code })
}

/// `--publish FORGE`: the pull request and the token, before any model call.
fn publish_target(
    args: &ReviewArgs,
    settings: &warden::config::Settings,
) -> Result<Option<(publish::Args, publish::Target, PublishSettings)>> {
    let Some(to) = args.publish else {
        return Ok(None);
    };
    let pargs = publish::Args {
        report: None,
        forge: match to {
            PublishTo::Github => publish::context::Forge::Github,
            PublishTo::Gitlab => publish::context::Forge::Gitlab,
        },
        flags: Default::default(),
        dry_run: false,
        budget: publish::DEFAULT_BUDGET,
    };
    let env = |k: &str| std::env::var(k).ok();
    let target = publish::target(&pargs, &settings.publish, &env)?;
    Ok(Some((pargs, target, settings.publish.clone())))
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

/// The result cache's levels: off for a review over simulated routes only.
fn open_cache(
    args: &ReviewArgs,
    settings: &warden::config::Settings,
    fleet: Option<&Fleet>,
    warnings: &Warnings,
) -> Levels {
    if cache::simulated_only(&settings.routes) {
        // Every --sim run would open with it; it is for those who ask (-v).
        if args.ui.verbose {
            warden::text::stdio::eprint_line(&format!(
                "{} {}",
                console::style("note:").cyan().for_stderr(),
                cache::OFF_FOR_SIMULATED
            ));
        }
        Levels::off()
    } else {
        Levels::open(
            cache::Request {
                settings: &settings.cache,
                disabled: args.cache.no_cache,
                sources: Sources::from_env(
                    args.cache.cache_dir.clone(),
                    settings.cache.dir.clone(),
                ),
            },
            fleet,
            warnings.tee(WarningSource::Cache, cache_warn(&args.ui)),
        )
    }
}

/// The outputs, once: None when the other writer has them.
fn take(outputs: &Mutex<Option<Outputs>>) -> Option<Outputs> {
    outputs.lock().unwrap_or_else(|p| p.into_inner()).take()
}

/// A signal's fallback: the report of what is known, to every output the review opened.
fn write_known(outputs: &Mutex<Option<Outputs>>, known: &Known, plan_command: String) {
    let Some(outputs) = take(outputs) else { return };
    let Some(mut report) = known.report() else {
        warden::text::stdio::eprint_line(
            "warden: interrupted before the review had a plan: nothing was reviewed",
        );
        return;
    };
    report.plan_command = Some(plan_command);
    if let Err(e) = outputs.write(&report) {
        warden::text::stdio::eprint_line(&format!("warden: {e}"));
    }
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
