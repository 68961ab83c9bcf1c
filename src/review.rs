//! The review pipeline in one place: the plan's units go through the engine (the review
//! pass, then the optional verification pass in the budget the review left), and the
//! report is built from what came back. Consumers (progress, telemetry) see it all as
//! events; the caller gets a [`Report`].

use crate::cache::{Levels, ReviewCache};
use crate::config::Settings;
use crate::engine::{
    Bulkhead, Engine, EngineReport, EngineRoute, Event, Pass, ReviewInfo, Sink, UnitLabels,
    UnitWork,
};
use crate::error::{Error, Result};
use crate::fleet::breakers::FleetBreakers;
use crate::fleet::bulkhead::{FleetBulkhead, FleetCap};
use crate::fleet::pace::{PacedBulkhead, publisher};
use crate::fleet::windows::FleetWindows;
use crate::fleet::{Fleet, Upstream};
use crate::plan::Plan;
use crate::report::{self, Report};
use crate::shard::Shard;
use crate::skills::{ActiveSkill, Skill};
use crate::trust::{SkillUse, TrustReport};
use crate::verify;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Everything a review needs: what to review, with which skills, under which settings,
/// over which routes. No command-line types.
pub struct ReviewInput {
    /// The plan: units in dispatch order.
    pub plan: Plan,
    /// The skills the plan's units use, with their settings.
    pub skills: Vec<ActiveSkill>,
    /// Resolved settings: thresholds, budgets, verification.
    pub settings: Settings,
    /// Clients for the settings' routes, in failover order.
    pub routes: Vec<EngineRoute>,
    /// Repository, revision and branch under review (SARIF provenance, links), if known.
    pub vcs: Option<report::Vcs>,
    /// Where config and skills came from (see `crate::trust`), for the report.
    pub trust: Option<TrustReport>,
    /// The skills of the run and their origins, for the report.
    pub skill_uses: Vec<SkillUse>,
    /// The result cache's levels (none: off, or unusable after its one warning).
    pub cache: Levels,
    /// `--shard K/N`: review only this part of the plan (see `crate::shard`).
    pub shard: Option<Shard>,
    /// `[fleet]`: the Redis shared with the team's other warden processes (None: not
    /// configured, or unreachable after its one warning).
    pub fleet: Option<Fleet>,
    /// Warnings given outside the engine (the cache's, the fleet's), for the report.
    pub warnings: report::Warnings,
    /// Permits shared with other reviews of this process (`warden eval` runs many at
    /// once under one cap per route); None: the engine's own. A fleet's permits win.
    pub bulkhead: Option<Arc<dyn Bulkhead>>,
    /// Where a skill's tools read (see `crate::tools`); None: no unit loops.
    pub tool_head: Option<crate::tools::Head>,
    /// Filled as the review runs, for a signal that cannot wait for its end
    /// ([`crate::known`]).
    pub known: Option<crate::known::Known>,
}

const NO_ROUTES: &str = "no model routes are configured (no [[routes]] in warden.toml and no defaults.model)
  - to review with a real model: add [[routes]] to warden.toml (`warden init` writes a starter with a primary + fallback setup to uncomment, `warden init --example` every key) and export the API key variable each route names in apiKeyEnv
  - to see what warden does with no key and no network: `warden review --sim` runs the built-in simulator
  - to see what would be reviewed, without calling any model: `warden plan`";

/// The tools of the review's loops over `head` (docs/design.md §14), each result redacted of
/// every configured key; None when loops are off, there is no repository, or its tree
/// cannot be read (said once as a warning: every unit is then one request).
fn toolbox(
    head: Option<&crate::tools::Head>,
    settings: &Settings,
    warnings: &report::Warnings,
) -> Option<Arc<crate::tools::Toolbox>> {
    let head = head.filter(|_| settings.execution.tools != crate::config::ToolsMode::Off)?;
    let keys = report::configured_keys(&settings.routes);
    let redact: crate::tools::Redactor = Arc::new(move |t| report::redact_text(&keys, t));
    let bytes = settings.execution.tool_bounds.result_bytes;
    match crate::tools::Toolbox::open(head, &settings.tool_deny, bytes, redact) {
        Ok(tb) => Some(Arc::new(tb)),
        Err(why) => {
            let message = format!("{why}; skills review without tools (one request per unit)");
            warnings.push(report::WarningSource::Config, None, &message);
            None
        }
    }
}

/// Builds a client for each configured route; no routes is a usage error that says how
/// to configure one (or try the simulator).
pub fn routes(settings: &Settings) -> Result<Vec<EngineRoute>> {
    routes_read(settings, None)
}

/// [`routes`], where no routes because the config was read from a base that has none
/// (a range, CI) says so: which side was read, why, and the ways out
/// ([`crate::trust::TrustReport::base_without_config`]). `head_has_config`: the working
/// tree holds a config the run did not read.
pub fn routes_trusted(
    settings: &Settings,
    trust: &crate::trust::TrustReport,
    head_has_config: bool,
) -> Result<Vec<EngineRoute>> {
    routes_read(settings, trust.base_without_config(head_has_config))
}

fn routes_read(settings: &Settings, why: Option<Vec<String>>) -> Result<Vec<EngineRoute>> {
    if settings.routes.is_empty() {
        return Err(Error::Usage(match why {
            Some(lines) => {
                let mut out = format!("no model routes are configured: {}", lines[0]);
                for way in &lines[1..] {
                    out.push_str("\n  - ");
                    out.push_str(way);
                }
                out
            }
            None => NO_ROUTES.into(),
        }));
    }
    let providers = crate::provider::build_all(settings)?;
    Ok(providers
        .into_iter()
        .zip(&settings.routes)
        .map(|(provider, r)| EngineRoute::configured(provider, r))
        .collect())
}

/// Runs the review: every unit of the plan within the review budget, then (when enabled)
/// the verification pass. Cancelling `interrupt` cancels in-flight attempts at once; the
/// report is still built from everything received.
pub async fn run(input: ReviewInput, sink: Sink, interrupt: CancellationToken) -> Report {
    let ReviewInput {
        mut plan,
        skills,
        settings,
        routes,
        vcs,
        trust,
        skill_uses,
        cache,
        shard,
        fleet,
        warnings,
        bulkhead,
        tool_head,
        known,
    } = input;
    // The fingerprint is the whole plan's, so every shard of one review carries the same.
    let plan_fingerprint = crate::shard::fingerprint(&plan);
    let shard = shard.map(|s| s.deal(&mut plan));
    let exec = settings.execution;
    let work = units(&plan, &skills, &settings);
    // From here a signal's deadline can report what is known (§14).
    let sink = match &known {
        Some(k) => {
            k.begin(&plan, &settings, &skills);
            sink.tee(k.sink())
        }
        None => sink,
    };
    let routes_of: Vec<Vec<usize>> = work.iter().map(|w| w.routes.clone()).collect();
    let toolbox = toolbox(tool_head.as_ref(), &settings, &warnings);
    // A unit loops only when there are tools; the loop it runs as is part of its key.
    let loops: Vec<Option<String>> = work
        .iter()
        .map(|w| w.tools.as_ref().filter(|_| toolbox.is_some()))
        .map(|p| p.map(|p| crate::cache::key::loop_material(p, &exec.tool_bounds)))
        .collect();
    // Units answered from the cache make no request and take no permit.
    let mut cached = ReviewCache::lookup(
        cache,
        &plan,
        &skills,
        (&settings.routes, &routes_of),
        &loops,
        settings.verification,
    )
    .await;
    cached.replay(toolbox.as_deref());
    sink.emit(Event::ReviewStarted(Arc::new(ReviewInfo {
        target: plan.target.clone(),
        units: plan.units.len(),
        review_budget: exec.review_budget,
        hunk_budget: exec.hunk_budget,
        request_timeout: exec.request_timeout,
    })));
    // The engine's warnings (a route's) go into the report too.
    let sink = sink.tee(route_warnings(&warnings));
    // Each route's limit and back-pressure over the run (section 13), for the report.
    let load = report::RouteLoad::default();
    let sink = sink.tee(load.sink());
    // Back-pressure this process sees slows the fleet's other processes too (section 13).
    let sink = match &fleet {
        Some(f) => {
            let upstreams: Vec<Upstream> = settings.routes.iter().map(Upstream::of).collect();
            sink.tee(publisher(f.clone(), &upstreams, exec.review_budget))
        }
        None => sink,
    };
    let ticker = tokio::spawn(tick(sink.clone()));
    let engine = Engine::new(routes, exec, sink.clone()).with_answerer(cached.answerer());
    let engine = match bulkhead {
        Some(shared) => engine.with_bulkhead(shared),
        None => engine,
    };
    let engine = match toolbox {
        Some(tb) => engine.with_toolbox(tb),
        None => engine,
    };
    let engine = match &fleet {
        Some(f) => with_fleet(engine, f, &settings),
        None => engine,
    };
    let mut review = engine.run(work, interrupt.clone()).await;
    cached.note_answers(&plan, &review);
    let mut verification = if settings.verification && !interrupt.is_cancelled() {
        let again = |unit: usize| !cached.verified(unit);
        let pass = verify_pass(
            &engine,
            &plan,
            &skills,
            &routes_of,
            &mut review,
            interrupt,
            again,
        );
        Some(pass.await)
    } else {
        None
    };
    ticker.abort();
    cached.finish(verification.as_mut()).await;
    let run = report::RunFacts {
        vcs,
        trust,
        skill_uses,
        plan_fingerprint,
        shard,
        warnings: warnings.take(),
        load: load.figures(),
    };
    let report = report::build(report::Inputs {
        plan: &plan,
        engine: &review,
        settings: &settings,
        skills: &skills,
        verification: verification.as_ref(),
        run,
    });
    sink.emit(Event::ReviewFinished {
        outcome: report.outcome,
        reviewed: report.summary.reviewed,
    });
    report
}

/// The engine with its breakers, and the permits of routes with `fleetMaxConcurrency`,
/// kept in the fleet's Redis (local ones as the fallback).
fn with_fleet(engine: Engine, fleet: &Fleet, settings: &Settings) -> Engine {
    let upstreams: Vec<Upstream> = settings.routes.iter().map(Upstream::of).collect();
    let exec = &settings.execution;
    let breakers = FleetBreakers::new(fleet.clone(), &upstreams, exec, Instant::now());
    let engine = engine.with_breakers(breakers);
    // Rate-limit windows are the account's: one shared account of them (section 13).
    let windows = FleetWindows::new(
        fleet.clone(),
        &upstreams,
        exec.request_timeout,
        exec.review_budget,
    );
    let engine = engine.with_shared_windows(windows);
    let local = settings.routes.iter().map(|r| r.max_concurrency);
    let budget = exec.review_budget;
    // Each permit first reads the fleet's shared back-pressure (section 13).
    if settings
        .routes
        .iter()
        .all(|r| r.fleet_max_concurrency.is_none())
    {
        let local = crate::engine::LocalBulkhead::new(local);
        return engine.with_bulkhead(PacedBulkhead::new(fleet.clone(), local, &upstreams, budget));
    }
    let caps: Vec<FleetCap> = settings
        .routes
        .iter()
        .zip(upstreams.iter().cloned())
        .map(|(r, upstream)| FleetCap {
            upstream,
            cap: r.fleet_max_concurrency,
        })
        .collect();
    // A lease of one request deadline: a crashed process's permits come back within it.
    let bulkhead = FleetBulkhead::new(fleet.clone(), local, &caps, exec.request_timeout);
    engine.with_bulkhead(PacedBulkhead::new(
        fleet.clone(),
        bulkhead,
        &upstreams,
        budget,
    ))
}

/// Keeps the engine's `Warning` events for the report.
fn route_warnings(warnings: &report::Warnings) -> Sink {
    let warnings = warnings.clone();
    Sink::new(move |s| {
        if let Event::Warning { route, message } = &s.event {
            warnings.push(report::WarningSource::Route, Some(route.clone()), message);
        }
    })
}

/// Ticks are events: displays redraw their clocks from them.
async fn tick(sink: Sink) {
    let start = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        sink.emit(Event::Tick {
            elapsed: start.elapsed(),
        });
    }
}

/// The plan's units as engine work: prompts included, and each unit restricted to its
/// skill's routes (consolidated skills name the same routes; config checks that).
pub fn units(plan: &Plan, skills: &[ActiveSkill], settings: &Settings) -> Vec<UnitWork> {
    let route_index = |name: &String| settings.routes.iter().position(|r| r.name == *name);
    // One copy of each skill group, shared by its units' splitters (docs/design.md §14).
    let mut groups: std::collections::HashMap<String, Arc<Vec<Skill>>> = Default::default();
    plan.units
        .iter()
        .map(|u| {
            let unit_skills: Vec<&ActiveSkill> = u
                .skills
                .iter()
                .filter_map(|name| skills.iter().find(|a| a.skill.name == *name))
                .collect();
            let group = groups
                .entry(u.skill.clone())
                .or_insert_with(|| Arc::new(unit_skills.iter().map(|a| a.skill.clone()).collect()))
                .clone();
            let max_context = settings.chunking.max_context_files;
            let routes = unit_skills
                .iter()
                .find_map(|a| a.config.routes.as_ref())
                .map(|names| names.iter().filter_map(route_index).collect())
                .unwrap_or_default();
            UnitWork {
                index: u.index,
                prompt: (*u.prompt).clone(),
                lines: (u.start_line, u.end_line),
                optional: u.optional,
                labels: UnitLabels {
                    skill: u.skill.clone(),
                    path: u.path.to_string(),
                    priority: u.priority,
                },
                routes,
                tools: crate::tools::loop_for(&unit_skills, &settings.execution),
                split: Some(plan.splittable(u, group, max_context)),
            }
        })
        .collect()
}

/// Optional work last: verifies findings in whatever budget the review left, on the same
/// routes (breakers, permits) as the review. Only units `wanted` are checked (findings
/// verified when they were cached are not checked again).
async fn verify_pass(
    engine: &Engine,
    plan: &Plan,
    skills: &[ActiveSkill],
    routes: &[Vec<usize>],
    review: &mut EngineReport,
    interrupt: CancellationToken,
    wanted: impl Fn(usize) -> bool,
) -> verify::Pass {
    let skills: Vec<&Skill> = skills.iter().map(|a| &a.skill).collect();
    let (work, checked): (Vec<UnitWork>, Vec<usize>) =
        verify::units(plan, review, &skills, plan.units.len(), routes)
            .into_iter()
            .filter(|(_, unit)| wanted(*unit))
            .unzip();
    let left = review.budget.saturating_sub(review.elapsed);
    let pass = engine
        .run_pass(Pass::Verification, work, interrupt, left)
        .await;
    review.elapsed += pass.elapsed;
    verify::apply(review, &checked, pass)
}
