//! `warden review`: prepare, open every output, run the review with progress and
//! telemetry listening to its events, write the reports, map the exit code.

use super::signals::Signals;
use super::{cache_warn, setup_color, warn, warn_trust};
use std::path::PathBuf;
use std::sync::Arc;
use warden::cache::location::Sources;
use warden::cache::{self, Levels};
use warden::cli::ReviewArgs;
use warden::error::{Error, Result};
use warden::fleet::{self, Fleet};
use warden::outputs::Outputs;
use warden::prepare::prepare;
use warden::report::progress::{Mode, Progress};
use warden::report::text::Layout;
use warden::report::{WarningSource, Warnings};
use warden::review::{self, ReviewInput};
use warden::telemetry::{self, Telemetry};

pub(super) fn review_cmd(args: &ReviewArgs) -> Result<i32> {
    setup_color(&args.ui, args.outputs.iter().any(|o| o.format.is_none()));
    let selection = args.resolve()?;
    // Files warden writes never go through links the change planted (DESIGN.md §14).
    let checkout = warden::prepare::repo_root(&selection.dir);
    if let Some(trace) = &args.trace {
        warden::outputs::refuse_linked_folders(trace, checkout.as_deref(), "--trace")?;
    }
    let prepared = prepare(&selection)?;
    warn(&args.ui, &prepared.settings);
    warn_trust(&args.ui, &prepared.trust);
    if let Some(line) = nothing_to_review(args, &prepared.plan) {
        warden::outputs::write_stdout(&line).map_err(|e| Error::io("<stdout>", e))?;
        return Ok(0);
    }
    let routes = review::routes(&prepared.settings)?;
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
    let cache = if cache::simulated_only(&prepared.settings.routes) {
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
                settings: &prepared.settings.cache,
                disabled: args.cache.no_cache,
                sources: Sources::from_env(
                    args.cache.cache_dir.clone(),
                    prepared.settings.cache.dir.clone(),
                ),
            },
            fleet.as_ref(),
            warnings.tee(WarningSource::Cache, cache_warn(&args.ui)),
        )
    };
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
    };
    // Every output is opened before the first request: a bad path costs no money.
    let step_summary = std::env::var_os("GITHUB_STEP_SUMMARY")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from);
    let outputs = Outputs::open(
        args.format(),
        &args.outputs,
        step_summary,
        checkout.as_deref(),
    )?
    .text_layout(Layout::for_stdout(args.ui.verbose))
    .redacting(warden::report::configured_keys(&input.settings.routes));
    let telemetry = Telemetry::init(&telemetry::Options {
        trace_file: args.trace.clone(),
        trace_format: args.trace_format,
        trace_content: args.trace_content,
        checkout: checkout.clone(),
    })?;
    let progress = Arc::new(Progress::new(Mode::detect(args.ui.quiet), args.ui.verbose));
    let sink = progress.sink().tee(telemetry.sink());
    let signals = Signals::default();
    let mut report = runtime.block_on(async {
        signals.listen();
        review::run(input, sink, signals.token.clone()).await
    });
    report.plan_command = Some(args.selection.plan_command());
    signals.writing();
    progress.finish();
    telemetry.finish();
    outputs.write(&report)?;
    if let Some(setup) = report.setup_failure() {
        warden::text::stdio::eprint_line(&format!(
            "{} {}",
            console::style("error:").red().bold().for_stderr(),
            warden::text::escape::block(&setup)
        ));
    }
    // Dropping the runtime would wait for the signal listener; it is not needed now.
    runtime.shutdown_background();
    Ok(signals.code().unwrap_or_else(|| report.exit_code()))
}

/// A text review to stdout with nothing to send: one line naming the selection and what
/// to try, instead of a whole empty report (other formats and `-o` files still get
/// theirs, for the scripts that read them).
fn nothing_to_review(args: &ReviewArgs, plan: &warden::plan::Plan) -> Option<String> {
    let text_only = args.format() == warden::cli::ReviewFormat::Text && args.outputs.is_empty();
    if !plan.units.is_empty() || !text_only || args.shard.is_some() {
        return None;
    }
    let target = warden::text::escape::inline(&plan.target);
    Some(match plan.skipped_files.len() {
        0 => format!(
            "nothing to review: no changes in {target}; try another selection: a range (`warden review main...my-branch`), `--staged`, or `--diff FILE`\n"
        ),
        n => format!(
            "nothing to review in {target}: {n} changed file{} skipped, none left for a model (`{}` says why)\n",
            if n == 1 { "" } else { "s" },
            args.selection.plan_command()
        ),
    })
}
