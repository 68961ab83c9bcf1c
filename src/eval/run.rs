//! Running an evaluation: every case (× `--runs`) is a real review through the normal
//! pipeline (`prepare::prepare`, `review::run`: plan, engine, budgets, routes), several
//! at once. The reviews share one client and one cap per route, so a route's
//! `maxConcurrency` holds across all of them; a total budget cancels what is running when
//! it ends and starts nothing after; an interrupt does the same, and every case review
//! done by then is kept and scored.

use super::aggregate::{self, Inputs, Verdicts};
use super::case::Corpus;
use super::outcome::{CaseRun, State};
use super::report::{EvalReport, EvalSettings, Finished};
use crate::cache::{self, Levels};
use crate::config::{Overrides, Route, Settings};
use crate::engine::{Bulkhead, EngineRoute, LocalBulkhead, Permit, Sink};
use crate::error::{Error, Result};
use crate::prepare::{self, Selection};
use crate::provider::Provider;
use crate::review::{self, ReviewInput};
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How to evaluate (no command-line types).
#[derive(Clone)]
pub struct Options {
    /// Where the evaluation runs (its repository's config and skills are the setup
    /// evaluated).
    pub dir: PathBuf,
    /// The config every case is reviewed with (`-c`, else `warden.toml` of `dir`'s
    /// repository, when there is one).
    pub config: Option<PathBuf>,
    /// `--skill`.
    pub skills: Vec<String>,
    /// Thresholds, `--sim`, and each case review's budget.
    pub overrides: Overrides,
    /// The whole evaluation's budget.
    pub budget: Option<Duration>,
    /// Reviews of each case.
    pub runs: u32,
    /// Lines a finding may lie from a reference and still match.
    pub line_window: u32,
    /// The judge's route.
    pub judge: Option<String>,
    /// The result cache: None off (the default), Some(dir) on (None: its usual place).
    pub cache: Option<Option<PathBuf>>,
    /// Where the cache's warnings go.
    pub warn: cache::Warn,
    /// `--strict-config`: an unknown key refuses the evaluation (exit 2) before any case.
    pub strict_config: bool,
}

/// What every case review shares: the settings the evaluation was set up with, one
/// client and one cap per route.
pub struct Setup {
    /// The evaluation's settings (overrides applied).
    pub settings: Settings,
    providers: Vec<Arc<dyn Provider>>,
    bulkhead: Arc<dyn Bulkhead>,
    judge: Option<(Arc<dyn Provider>, Route)>,
    /// Case reviews at once: the routes' caps together.
    pub concurrency: usize,
}

/// Loads the settings, builds the routes' clients (a missing key fails here, before any
/// case) and checks the judge's route.
pub fn setup(opts: &mut Options) -> Result<Setup> {
    let root = prepare::repo_root(&opts.dir);
    if opts.config.is_none() {
        opts.config = root
            .as_ref()
            .map(|r| r.join(crate::config::FILE_NAME))
            .filter(|p| p.is_file());
    }
    if let Some(c) = &opts.config {
        let abs = if c.is_absolute() {
            c.clone()
        } else {
            opts.dir.join(c)
        };
        opts.config = Some(abs);
    }
    let (mut settings, _, _) =
        prepare::load(opts.config.as_deref(), root.as_deref(), &opts.skills)?;
    // Once, up front (exit 2), not once per case review (each a failed case).
    settings.refuse_unknown_keys(opts.strict_config)?;
    settings.apply(&opts.overrides)?;
    let routes = review::routes(&settings)?;
    let providers: Vec<Arc<dyn Provider>> = routes.iter().map(|r| r.provider.clone()).collect();
    let caps: Vec<usize> = settings.routes.iter().map(|r| r.max_concurrency).collect();
    let judge = match &opts.judge {
        None => None,
        Some(name) => {
            let Some(i) = settings.routes.iter().position(|r| r.name == *name) else {
                let names: Vec<&str> = settings.routes.iter().map(|r| r.name.as_str()).collect();
                return Err(Error::Usage(format!(
                    "--judge {name}: no route of that name (routes: {})",
                    names.join(", ")
                )));
            };
            Some((providers[i].clone(), settings.routes[i].clone()))
        }
    };
    Ok(Setup {
        concurrency: caps.iter().sum::<usize>().max(1),
        bulkhead: Arc::new(SharedCaps(LocalBulkhead::new(caps))),
        providers,
        judge,
        settings,
    })
}

/// Each route's permits across every case review: its configured cap, held as is. An
/// engine per case would restart the adaptive limit's slow start for every case, so
/// this source leaves the effective limit at the cap (back-pressure still bounces and
/// pauses attempts as in any review).
struct SharedCaps(LocalBulkhead);

impl Bulkhead for SharedCaps {
    fn acquire(&self, route: usize) -> BoxFuture<'_, Permit> {
        self.0.acquire(route)
    }
    fn try_acquire(&self, route: usize) -> Option<Permit> {
        self.0.try_acquire(route)
    }
    fn acquire_new(&self, route: usize) -> BoxFuture<'_, Permit> {
        self.0.acquire_new(route)
    }
    fn cap(&self, route: usize) -> usize {
        self.0.cap(route)
    }
    fn peak(&self, route: usize) -> usize {
        self.0.peak(route)
    }
}

/// Runs every case `opts.runs` times and builds the report. `on_done` hears of each case
/// review as it ends (progress).
pub async fn run(
    corpus: &Corpus,
    opts: &Options,
    setup: &Setup,
    on_done: &(dyn Fn(&CaseRun) + Sync),
    interrupt: CancellationToken,
) -> EvalReport {
    let start = Instant::now();
    let deadline = opts.budget.map(|b| start + b);
    let stop = interrupt.child_token();
    let timer = deadline.map(|d| {
        let stop = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(d).await;
            stop.cancel();
        })
    });
    let jobs = (1..=opts.runs.max(1)).flat_map(|r| (0..corpus.cases.len()).map(move |c| (c, r)));
    let mut runs: Vec<CaseRun> = futures_util::stream::iter(jobs)
        .map(|(c, r)| one_case(corpus, opts, setup, (c, r), deadline, &stop, &interrupt))
        .buffer_unordered(setup.concurrency)
        .inspect(|run| on_done(run))
        .collect()
        .await;
    runs.sort_by_key(|r| (r.case, r.run));
    let (verdicts, judge) = match &setup.judge {
        Some((provider, route)) => {
            let left = deadline
                .map(|d| d.saturating_duration_since(Instant::now()))
                .unwrap_or(setup.settings.execution.review_budget);
            let exec = setup.settings.execution;
            let route = (provider.clone(), route);
            let token = stop.child_token();
            let (v, s) =
                super::judge::judge(corpus, &runs, opts.line_window, route, exec, left, token)
                    .await;
            (v, Some(s))
        }
        None => (Verdicts::new(), None),
    };
    if let Some(t) = timer {
        t.abort();
    }
    let count = |f: fn(&State) -> bool| runs.iter().filter(|r| f(&r.state)).count();
    let finished = Finished {
        wall_ms: start.elapsed().as_millis() as u64,
        budget_expired: stop.is_cancelled() && !interrupt.is_cancelled(),
        interrupted: interrupt.is_cancelled(),
        case_runs: runs.len(),
        reviewed: count(|s| matches!(s, State::Reviewed { .. })),
        not_run: count(|s| matches!(s, State::NotRun(_))),
        failed: count(|s| matches!(s, State::Failed(_))),
    };
    aggregate::build(Inputs {
        corpus,
        runs: &runs,
        verdicts: &verdicts,
        judge,
        settings: eval_settings(opts, setup),
        finished,
    })
}

fn eval_settings(opts: &Options, setup: &Setup) -> EvalSettings {
    EvalSettings {
        line_window: opts.line_window,
        runs: opts.runs.max(1),
        judge: opts.judge.clone(),
        budget_ms: opts.budget.map(|b| b.as_millis() as u64),
        case_budget_ms: setup.settings.execution.review_budget.as_millis() as u64,
        routes: setup
            .settings
            .routes
            .iter()
            .map(|r| r.name.clone())
            .collect(),
        concurrency: setup.concurrency,
    }
}

/// One review of one case; whatever goes wrong is this case's state, never the run's.
async fn one_case(
    corpus: &Corpus,
    opts: &Options,
    setup: &Setup,
    (c, r): (usize, u32),
    deadline: Option<Instant>,
    stop: &CancellationToken,
    interrupt: &CancellationToken,
) -> CaseRun {
    let not_run = |why: &str| CaseRun::without_review(c, r, State::NotRun(why.into()));
    let stopped = || {
        if interrupt.is_cancelled() {
            not_run("interrupted before it started")
        } else {
            not_run("the evaluation's --budget was spent before it started")
        }
    };
    if stop.is_cancelled() {
        return stopped();
    }
    let case = &corpus.cases[c];
    let sel = Selection {
        target: case.target.clone(),
        dir: case.dir.clone(),
        config: opts.config.clone(),
        skills: opts.skills.clone(),
        ci: false,
        trust_head_config: false,
        event: None,
        overrides: opts.overrides.clone(),
        strip: None,
        strict_config: false,
    };
    let prepared = tokio::task::spawn_blocking(move || prepare::prepare(&sel)).await;
    let prepared = match prepared {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => return CaseRun::without_review(c, r, State::Failed(e.to_string())),
        Err(e) => return CaseRun::without_review(c, r, State::Failed(e.to_string())),
    };
    if stop.is_cancelled() {
        return stopped();
    }
    let names = |s: &Settings| s.routes.iter().map(|r| r.name.clone()).collect::<Vec<_>>();
    if names(&prepared.settings) != names(&setup.settings) {
        let why = format!(
            "its config names the routes {:?}, the evaluation's are {:?}: pass the config to evaluate with -c FILE",
            names(&prepared.settings),
            names(&setup.settings)
        );
        return CaseRun::without_review(c, r, State::Failed(why));
    }
    let mut prepared = prepared;
    if let Some(d) = deadline {
        let left = d.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return stopped();
        }
        let budget = &mut prepared.settings.execution.review_budget;
        *budget = (*budget).min(left);
    }
    let input = review_input(prepared, setup, opts);
    let report = review::run(input, Sink::new(|_| {}), stop.child_token()).await;
    CaseRun::from_report(c, r, &report)
}

/// The case's review as `review::run` takes it: the shared clients and permits, the
/// cache only when asked (and never for simulated routes), no fleet.
fn review_input(prepared: prepare::Prepared, setup: &Setup, opts: &Options) -> ReviewInput {
    let settings = prepared.settings;
    let routes = setup
        .providers
        .iter()
        .zip(&settings.routes)
        .map(|(p, route)| EngineRoute::configured(p.clone(), route))
        .collect();
    let cache = match &opts.cache {
        Some(dir) if !cache::simulated_only(&settings.routes) => Levels::open(
            cache::Request {
                settings: &settings.cache,
                disabled: false,
                sources: cache::location::Sources::from_env(
                    dir.clone(),
                    settings.cache.dir.clone(),
                ),
            },
            None,
            opts.warn.clone(),
        ),
        _ => Levels::off(),
    };
    ReviewInput {
        plan: prepared.plan,
        skills: prepared.active,
        settings,
        routes,
        vcs: prepared.vcs,
        trust: Some(prepared.trust),
        skill_uses: prepared.skill_uses,
        cache,
        shard: None,
        fleet: None,
        warnings: crate::report::Warnings::default(),
        bulkhead: Some(setup.bulkhead.clone()),
        // Case reviews are single requests: a tool loop in `warden eval` is not measured
        // yet (its figures would move with the depth rule).
        tool_head: None,
        known: None,
    }
}
