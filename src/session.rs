//! A review session: everything `warden review` composes around a prepared review, so
//! the command layer only parses, calls, renders and maps the exit code. [`Session::open`]
//! checks and opens it all before the first model request (the publish target and its
//! token, the trusted routes, the fleet's Redis, the result cache, every output file, the
//! telemetry), so a bad path or a missing token costs no money; [`Session::review`] runs
//! the review with the caller's display and the telemetry listening to its events;
//! [`Ending::finish`] publishes and writes the reports.

use crate::cache::location::Sources;
use crate::cache::{self, Levels};
use crate::config::{PublishSettings, Settings};
use crate::engine::Sink;
use crate::error::{Error, Result};
use crate::fleet::{self, Fleet};
use crate::known::Known;
use crate::outputs::Outputs;
use crate::prepare::Prepared;
use crate::publish::{self, context::Forge};
use crate::render::Layout;
use crate::report::published::Published;
use crate::report::{self, Format, OutputSpec, Report, WarningSource, Warnings};
use crate::review::{self, ReviewInput};
use crate::shard::Shard;
use crate::telemetry::{self, Telemetry, TraceFormat};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// What a review session is asked for, beside the prepared review: the flags of
/// `warden review` as plain values, and where its messages go.
pub struct Request {
    /// The report format of stdout, or of a bare `-o PATH`.
    pub format: Format,
    /// `-o [FORMAT=]PATH`: the report files.
    pub outputs: Vec<OutputSpec>,
    /// The repository whose links no file warden writes follows (see
    /// `crate::atomic_file::Output`); its warden.toml decides whether the head has a config.
    pub checkout: Option<PathBuf>,
    /// `--shard K/N`: review only this part of the plan.
    pub shard: Option<Shard>,
    /// `--cache-dir`.
    pub cache_dir: Option<PathBuf>,
    /// `--no-cache`.
    pub no_cache: bool,
    /// `--trace FILE`.
    pub trace: Option<PathBuf>,
    /// `--trace-format`.
    pub trace_format: TraceFormat,
    /// `--trace-content`.
    pub trace_content: bool,
    /// `--publish FORGE`: publish the review on the pull request the CI event names.
    pub publish: Option<Forge>,
    /// `-v`: the text report's detail.
    pub verbose: bool,
    /// Where the cache's and the fleet's warnings go as they happen (they are also kept
    /// for the report).
    pub warn: cache::Warn,
    /// Where notes for the curious go (the cache being off for simulated routes).
    pub note: cache::Warn,
}

/// `--publish`: where, checked before the review started.
type PublishTo = (publish::Args, publish::Target, PublishSettings);

/// An opened review: its runtime, the engine's input, every output and the telemetry.
pub struct Session {
    input: ReviewInput,
    /// Filled as the review runs: what a signal's fallback writes.
    known: Known,
    ending: Ending,
}

/// What a session does once its review has ended: finish the telemetry, publish, write
/// the reports (unless a signal's fallback took the outputs).
pub struct Ending {
    runtime: tokio::runtime::Runtime,
    outputs: Arc<Mutex<Option<Outputs>>>,
    telemetry: Telemetry,
    publish: Option<PublishTo>,
}

impl Session {
    /// Opens everything the review needs, in the order its failures are reported: the
    /// publish target (token first: a review that could not be published is not started),
    /// the trusted routes, the fleet and the shared cache's settings, then the fleet's
    /// Redis, the result cache, every output file and the telemetry.
    pub fn open(prepared: Prepared, req: Request) -> Result<Session> {
        let publish = publish_target(req.publish, &prepared.settings)?;
        let head_has_config = req
            .checkout
            .as_deref()
            .is_some_and(|c| c.join(crate::config::FILE_NAME).is_file());
        let routes = review::routes_trusted(&prepared.settings, &prepared.trust, head_has_config)?;
        let target = fleet::target(&prepared.settings.fleet, |k| std::env::var(k).ok())?;
        cache::check_shared(&prepared.settings, target.is_some())?;
        // Warnings of the cache and the fleet go to `warn` as they happen and into the report.
        let warnings = Warnings::default();
        if let Some(w) = fleet::unused_caps_warning(&prepared.settings, target.is_some()) {
            warnings.tee(WarningSource::Fleet, req.warn.clone())(&w);
        }
        let runtime = runtime()?;
        // The fleet's Redis, when configured: unreachable gives one warning and a local run.
        let fleet = match target {
            Some(t) => runtime.block_on(Fleet::connect(
                t,
                warnings.tee(WarningSource::Fleet, req.warn.clone()),
            )),
            None => None,
        };
        let cache = open_cache(&req, &prepared.settings, fleet.as_ref(), &warnings);
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
            shard: req.shard,
            warnings,
            bulkhead: None,
            tool_head: prepared.tool_head,
            known: Some(known.clone()),
        };
        // Every output is opened before the first request: a bad path costs no money.
        let step_summary = std::env::var_os("GITHUB_STEP_SUMMARY")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from);
        let outputs = Outputs::open(
            req.format,
            &req.outputs,
            step_summary,
            req.checkout.as_deref(),
        )?
        .text_layout(Layout::for_stdout(req.verbose))
        .redacting(report::configured_keys(&input.settings.routes));
        let telemetry = Telemetry::init(&telemetry::Options {
            trace_file: req.trace,
            trace_format: req.trace_format,
            trace_content: req.trace_content,
            checkout: req.checkout,
        })?;
        Ok(Session {
            input,
            known,
            ending: Ending {
                runtime,
                outputs: Arc::new(Mutex::new(Some(outputs))),
                telemetry,
                publish,
            },
        })
    }

    /// A signal's fallback: the report of what is known, written once to every output
    /// the session opened (unless the review reached its own reports first).
    pub fn fallback(&self, plan_command: String) -> impl FnOnce() + Send + 'static {
        let outputs = self.ending.outputs.clone();
        let known = self.known.clone();
        move || write_known(&outputs, &known, plan_command)
    }

    /// Runs the review with `sink` (the caller's display) and the telemetry listening to
    /// its events, until it ends or `interrupt` cancels it.
    pub fn review(self, sink: Sink, interrupt: CancellationToken) -> (Report, Ending) {
        let Session { input, ending, .. } = self;
        let sink = sink.tee(ending.telemetry.sink());
        let report = ending.runtime.block_on(review::run(input, sink, interrupt));
        (report, ending)
    }
}

impl Ending {
    /// Flushes the telemetry, publishes the report when `--publish` asked, and writes
    /// every output. None: a signal's fallback took the outputs and is writing what was
    /// known (the caller waits for the signal's deadline).
    pub fn finish(self, mut report: Report) -> Result<Option<Report>> {
        self.telemetry.finish();
        let Some(outputs) = take(&self.outputs) else {
            self.runtime.shutdown_background();
            return Ok(None);
        };
        if let Some((pargs, target, settings)) = self.publish {
            report.publish = Some(
                match publish::request(target, report.clone(), &pargs, &settings) {
                    Ok(req) => self.runtime.block_on(publish::publish(req)).published,
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
        // Dropping the runtime would wait for tasks still parked; they are not needed now.
        self.runtime.shutdown_background();
        Ok(Some(report))
    }
}

/// The runtime a review (or an evaluation's case reviews) runs on: two workers, which is
/// all the engine's waiting needs, with timers and sockets.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::io("<tokio runtime>", e))
}

/// docs/design.md §15: each `llamacpp` / `ollama` / `vllm` route asks its server for what the
/// config left open (slots, window) before anything is planned against it; one line per
/// such route says what it runs with.
pub fn discover_local(settings: &mut Settings) -> Vec<String> {
    if !settings.routes.iter().any(|r| r.provider.is_local()) {
        return Vec::new();
    }
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(crate::provider::local::discover_all(&mut settings.routes)),
        Err(e) => vec![format!("local servers not asked: {e}")],
    }
}

/// `--publish FORGE`: the pull request and the token, before any model call.
fn publish_target(forge: Option<Forge>, settings: &Settings) -> Result<Option<PublishTo>> {
    let Some(forge) = forge else {
        return Ok(None);
    };
    let pargs = publish::Args {
        report: None,
        forge,
        flags: Default::default(),
        dry_run: false,
        budget: publish::DEFAULT_BUDGET,
    };
    let env = |k: &str| std::env::var(k).ok();
    let target = publish::target(&pargs, &settings.publish, &env)?;
    Ok(Some((pargs, target, settings.publish.clone())))
}

/// The result cache's levels: off for a review over simulated routes only.
fn open_cache(
    req: &Request,
    settings: &Settings,
    fleet: Option<&Fleet>,
    warnings: &Warnings,
) -> Levels {
    if cache::simulated_only(&settings.routes) {
        (req.note)(cache::OFF_FOR_SIMULATED);
        return Levels::off();
    }
    Levels::open(
        cache::Request {
            settings: &settings.cache,
            disabled: req.no_cache,
            sources: Sources::from_env(req.cache_dir.clone(), settings.cache.dir.clone()),
        },
        fleet,
        warnings.tee(WarningSource::Cache, req.warn.clone()),
    )
}

/// The outputs, once: None when the other writer has them.
fn take(outputs: &Mutex<Option<Outputs>>) -> Option<Outputs> {
    outputs.lock().unwrap_or_else(|p| p.into_inner()).take()
}

/// A signal's fallback: the report of what is known, to every output the review opened.
fn write_known(outputs: &Mutex<Option<Outputs>>, known: &Known, plan_command: String) {
    let Some(outputs) = take(outputs) else { return };
    let Some(mut report) = known.report() else {
        crate::text::stdio::eprint_line(
            "warden: interrupted before the review had a plan: nothing was reviewed",
        );
        return;
    };
    report.plan_command = Some(plan_command);
    if let Err(e) = outputs.write(&report) {
        crate::text::stdio::eprint_line(&format!("warden: {e}"));
    }
}
