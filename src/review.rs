//! `warden review`: plan → engine → report, with signals, progress and exit codes.

use crate::app::{self, emit, setup_color, warn};
use crate::cli::{ReviewArgs, ReviewFormat};
use crate::config::{Route, Settings};
use crate::engine::{Engine, EngineRoute, UnitLabels, UnitWork};
use crate::error::{Error, Result};
use crate::report::progress::{Mode, Progress};
use crate::report::{self, escape, github, sarif, summary_md, text};
use crate::severity::{Confidence, FailOn, Severity};
use crate::telemetry::{Options as TelemetryOptions, Telemetry};
use crate::verify;
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// The `--sim` time scale: one simulated minute per second.
const SIM_SCALE: u32 = 60;

const NO_ROUTES: &str = "no model routes are configured (no [[routes]] in warden.toml and no defaults.model)
  - to review with a real model: add [[routes]] to warden.toml (`warden init` writes a starter, warden.toml.example shows a primary + fallback setup) and export the API key variable each route names in apiKeyEnv
  - to see what warden does with no key and no network: `warden review --sim` runs the built-in simulator
  - to see what would be reviewed, without calling any model: `warden plan`";

fn flag<T: std::str::FromStr<Err = String>>(v: &Option<String>, name: &str) -> Result<Option<T>> {
    v.as_deref()
        .map(|s| {
            s.parse::<T>()
                .map_err(|e| Error::Usage(format!("{name}: {e}")))
        })
        .transpose()
}

/// Routes and budgets of the embedded simulator setup.
fn use_sim(settings: &mut Settings, profile: &str) -> Result<()> {
    if crate::provider::sim::Profile::named(profile).is_none() {
        return Err(Error::Usage(format!(
            "--sim={profile}: unknown profile: expected healthy, slow-tail, outage, flaky or rate-limited"
        )));
    }
    let scale = f64::from(SIM_SCALE);
    settings.routes = vec![
        Route::sim("sim-primary", profile, scale, 1, 4),
        Route::sim("sim-fallback", "healthy", scale, 2, 4),
    ];
    let e = &mut settings.execution;
    for d in [
        &mut e.review_budget,
        &mut e.hunk_budget,
        &mut e.request_timeout,
        &mut e.connect_timeout,
        &mut e.first_token_timeout,
        &mut e.idle_timeout,
        &mut e.breaker.window,
        &mut e.breaker.open_for,
    ] {
        *d /= SIM_SCALE;
    }
    Ok(())
}

pub(crate) fn review_cmd(args: &ReviewArgs) -> Result<i32> {
    setup_color(&args.ui, args.output.is_some());
    let format = match (args.json, args.format) {
        (true, _) => ReviewFormat::Json,
        (false, Some(f)) => f,
        (false, None) => ReviewFormat::Text,
    };
    let fail_on: Option<FailOn> = flag(&args.fail_on, "--fail-on")?;
    let report_on: Option<Severity> = flag(&args.report_on, "--report-on")?;
    let min_confidence: Option<Confidence> = flag(&args.min_confidence, "--min-confidence")?;
    let budget = args
        .budget
        .as_deref()
        .map(|b| {
            humantime::parse_duration(b)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    Error::Usage(format!(
                        "--budget {b}: expected a duration such as 15m, 90s or 500ms"
                    ))
                })
        })
        .transpose()?;

    let mut prepared = app::prepare(&args.selection)?;
    let settings = &mut prepared.settings;
    if let Some(p) = &args.sim {
        use_sim(settings, p)?;
    }
    if let Some(f) = fail_on {
        settings.fail_on = f;
    }
    if let Some(r) = report_on {
        settings.report_on = r;
    }
    if let Some(c) = min_confidence {
        settings.min_confidence = c;
    }
    if let Some(b) = budget {
        settings.execution.review_budget = b;
    }
    warn(&args.ui, settings);
    if settings.routes.is_empty() {
        return Err(Error::Usage(NO_ROUTES.into()));
    }
    let providers = crate::provider::build_all(settings)?;
    let settings = &prepared.settings;
    let plan = &prepared.plan;

    let cap = settings.chunking.max_context_files;
    let units: Vec<UnitWork> = plan
        .units
        .iter()
        .map(|u| {
            let skills: Vec<&crate::skills::Skill> = u
                .skills
                .iter()
                .map(|name| {
                    &prepared
                        .active
                        .iter()
                        .find(|a| a.skill.name == *name)
                        .expect("planned units use active skills")
                        .skill
                })
                .collect();
            UnitWork {
                index: u.index,
                prompt: plan.prompt(u, &skills, cap),
                lines: (u.start_line, u.end_line),
                optional: u.optional,
                labels: UnitLabels {
                    skill: u.skill.clone(),
                    path: u.path.to_string(),
                    priority: u.priority,
                },
            }
        })
        .collect();

    let mode = if args.ui.quiet {
        Mode::Quiet
    } else if std::io::stderr().is_terminal() {
        Mode::Bars
    } else {
        Mode::Plain
    };
    let routes: Vec<(String, usize)> = settings
        .routes
        .iter()
        .map(|r| (r.name.clone(), r.max_concurrency))
        .collect();
    let progress = Arc::new(Progress::new(
        mode,
        args.ui.verbose,
        units.len(),
        routes,
        settings.execution.review_budget,
    ));
    let engine = Engine::new(
        providers
            .into_iter()
            .zip(&settings.routes)
            .map(|(provider, r)| EngineRoute {
                provider,
                max_concurrency: r.max_concurrency,
            })
            .collect(),
        settings.execution,
        progress.sink(),
    );

    let telemetry = Telemetry::init(&TelemetryOptions {
        trace_file: args.trace.clone(),
    })?;
    let engine = engine.with_trace_content(args.trace_content);
    let review_span = tracing::info_span!(
        "warden.review",
        warden.target = %plan.target,
        warden.units = plan.units.len(),
        warden.review_budget_ms = settings.execution.review_budget.as_millis() as u64,
        warden.hunk_budget_ms = settings.execution.hunk_budget.as_millis() as u64,
        warden.request_timeout_ms = settings.execution.request_timeout.as_millis() as u64,
        warden.outcome = tracing::field::Empty,
        warden.reviewed = tracing::field::Empty,
    );
    let signal_code = Arc::new(AtomicI32::new(0));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::io("<tokio runtime>", e))?;
    let (engine_report, verification) = runtime.block_on(async {
        let token = CancellationToken::new();
        spawn_signal_handler(token.clone(), signal_code.clone());
        let ticker = {
            let p = progress.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    p.refresh(false);
                }
            })
        };
        let mut r = engine
            .run(units, token.clone())
            .instrument(review_span.clone())
            .await;
        // Optional work last: verify findings in whatever budget the review left.
        let mut verification = None;
        if settings.verification && !token.is_cancelled() {
            let skills: Vec<&crate::skills::Skill> =
                prepared.active.iter().map(|a| &a.skill).collect();
            let (work, checked): (Vec<UnitWork>, Vec<usize>) =
                verify::units(plan, &r, &skills, plan.units.len())
                    .into_iter()
                    .unzip();
            let left = settings.execution.review_budget.saturating_sub(r.elapsed);
            progress.add_units(work.len());
            let pass = engine
                .run_within(work, token.clone(), left)
                .instrument(review_span.clone())
                .await;
            r.elapsed += pass.elapsed;
            verification = Some(verify::apply(&mut r, &checked, pass));
        }
        ticker.abort();
        (r, verification)
    });
    progress.finish();

    let report = report::build(
        plan,
        &engine_report,
        settings,
        &prepared.active,
        verification.as_ref(),
    );
    review_span.record(
        "warden.outcome",
        format!("{:?}", report.outcome).to_lowercase().as_str(),
    );
    review_span.record("warden.reviewed", report.summary.reviewed);
    drop(review_span);
    telemetry.finish(Some(&report));
    let text = match format {
        ReviewFormat::Text => text::render(&report),
        ReviewFormat::Json => {
            let mut s = serde_json::to_string_pretty(&report).expect("report serializes");
            s.push('\n');
            escape::json_doc(&s)
        }
        ReviewFormat::Sarif => escape::json_doc(&sarif::render(&report)),
        ReviewFormat::Github => github::render(&report),
    };
    emit(args.output.as_deref(), &text)?;
    if format == ReviewFormat::Github
        && let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty())
    {
        use std::io::Write;
        let path = std::path::PathBuf::from(path);
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(summary_md::render(&report).as_bytes()))
            .map_err(|e| Error::io(&path, e))?;
    }
    // Dropping the runtime would wait for the signal listener; it is not needed now.
    runtime.shutdown_background();
    let code = signal_code.load(Ordering::SeqCst);
    Ok(if code != 0 {
        code
    } else {
        report.exit_code(settings.fail_on)
    })
}

/// First SIGINT/SIGTERM: cancel in-flight attempts so the report is written with what was
/// received (exit 130/143). A second signal exits at once.
fn spawn_signal_handler(token: CancellationToken, code: Arc<AtomicI32>) {
    #[cfg(unix)]
    tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut int), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            return;
        };
        loop {
            let c = tokio::select! {
                _ = int.recv() => 130,
                _ = term.recv() => 143,
            };
            if code.load(Ordering::SeqCst) != 0 {
                std::process::exit(c);
            }
            code.store(c, Ordering::SeqCst);
            eprintln!(
                "warden: {} received; cancelling and writing the report (again to quit at once)",
                if c == 130 { "SIGINT" } else { "SIGTERM" }
            );
            token.cancel();
        }
    });
    #[cfg(not(unix))]
    {
        let _ = (token, code);
    }
}
