//! `warden simulate`: the current plan through the real engine on tokio's paused clock,
//! each route replaced by a latency profile, for both routing policies and several seeds.
//! A user sizes caps, budgets and the cost budget before paying for a run.
//!
//! A route's profile is, in order of precedence: `--profile ROUTE=NAME`, the profile
//! fitted for that route from an earlier review's `--trace` (`--from-trace`), the route's
//! own `profile` when it is a `sim` route. A `sim` route keeps its `timeScale`; any other
//! route plays its profile in real minutes (the budgets are the config's). Only the review
//! pass runs (no verification pass).

pub mod caps;
pub mod fit;

use crate::config::{ProviderKind, Route, Routing, Settings};
use crate::engine::{Engine, EngineRoute, Sink, UnitStatus, UnitWork};
use crate::error::{Error, Result};
use crate::provider::Provider;
use crate::provider::sim::{Profile, SimProvider};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What to simulate: the plan's units as engine work, the settings, and a profile per
/// route (by name).
pub struct SimulateInput {
    /// The units, prompts included, in dispatch order.
    pub units: Vec<UnitWork>,
    /// Budgets, routes, prices.
    pub settings: Settings,
    /// Each route's latency profile.
    pub profiles: BTreeMap<String, Profile>,
    /// Seeds per policy.
    pub runs: usize,
    /// The tools of skills that read the repository (their loops are played too: each
    /// turn under its route's profile); None: every unit is one request.
    pub tools: Option<Arc<crate::tools::Toolbox>>,
}

/// The prediction: for each routing policy, figures over the runs.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Prediction {
    /// Units in the plan.
    pub units: usize,
    /// One entry per routing policy (`ordered`, `spillover`).
    pub variants: Vec<Variant>,
}

/// One policy's figures over its runs.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Variant {
    /// `ordered` or `spillover`.
    pub routing: String,
    /// Runs (seeds).
    pub runs: usize,
    /// Units reviewed within the budget, median over the runs.
    pub reviewed_median: f64,
    /// The fewest units reviewed in a run.
    pub reviewed_min: usize,
    /// The most units reviewed in a run.
    pub reviewed_max: usize,
    /// The review's wall time, median, in milliseconds.
    pub wall_ms_median: f64,
    /// Attempts sent, median.
    pub attempts_median: f64,
    /// Attempts answered with back-pressure (429, 529, 503 with Retry-After), median.
    pub backpressure_median: f64,
    /// Cost in USD (from the routes' prices), median.
    pub cost_usd_median: f64,
    /// Tool calls the loops made (docs/design.md §14), median.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls_median: Option<f64>,
    /// Units whose tool turns the depth rule shed for lack of budget, median.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shed_for_budget_median: Option<f64>,
}

/// The profile of each route: flags first, then the trace, then a sim route's own.
/// A route with none is a usage error that names it and the ways to give one.
pub fn profiles(
    settings: &Settings,
    flags: &[(String, String)],
    fitted: &BTreeMap<String, Profile>,
) -> Result<BTreeMap<String, Profile>> {
    // First: with no routes, a --profile's "no route is named" would list none.
    if settings.routes.is_empty() {
        return Err(Error::Usage(
            "no model routes are configured: there is nothing to simulate (add [[routes]] to warden.toml)".into(),
        ));
    }
    for (route, _) in flags {
        if !settings.routes.iter().any(|r| &r.name == route) {
            return Err(Error::Usage(format!(
                "--profile {route}=…: no route is named `{route}` (routes: {})",
                names(settings)
            )));
        }
    }
    let mut out = BTreeMap::new();
    for r in &settings.routes {
        let named = flags.iter().rev().find(|(n, _)| n == &r.name);
        let profile = if let Some((_, p)) = named {
            Profile::named(p).ok_or_else(|| {
                Error::Usage(format!(
                    "--profile {}={p}: unknown profile: expected one of {}",
                    r.name,
                    crate::provider::sim::PROFILES.join(", ")
                ))
            })?
        } else if let Some(p) = fitted.get(&r.name) {
            *p
        } else if r.provider == ProviderKind::Sim {
            Profile::named(&r.sim.profile).expect("validated at config load")
        } else {
            return Err(Error::Usage(format!(
                "route `{}` has no latency profile to simulate: give --profile {}=NAME ({}) or --from-trace FILE with a trace of a review that used it",
                r.name,
                r.name,
                crate::provider::sim::PROFILES.join(", ")
            )));
        };
        out.insert(r.name.clone(), profile);
    }
    Ok(out)
}

fn names(settings: &Settings) -> String {
    settings
        .routes
        .iter()
        .map(|r| r.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// One run's figures.
struct RunFigures {
    reviewed: usize,
    wall: Duration,
    attempts: usize,
    backpressure: usize,
    cost: f64,
    /// Tool calls and units shed, when some unit looped.
    loops: Option<(usize, usize)>,
}

/// A runtime on a paused clock: simulated time passes only while every task waits.
fn paused_runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .map_err(|e| Error::io("<tokio runtime>", e))
}

/// `input.runs` runs (seeds) of `routes` under `routing`.
fn runs_of(
    rt: &tokio::runtime::Runtime,
    input: &SimulateInput,
    routes: &[Route],
    routing: Routing,
) -> Vec<RunFigures> {
    (0..input.runs.max(1))
        .map(|k| rt.block_on(one_run(input, routes, routing, k as u64)))
        .collect()
}

/// The tools a simulation answers loops with: the review's own, over `head` (nothing
/// leaves the machine, so nothing is redacted); None when loops are off or the tree
/// cannot be read.
pub fn tools_for(
    head: Option<&crate::tools::Head>,
    settings: &Settings,
) -> Option<Arc<crate::tools::Toolbox>> {
    let head = head.filter(|_| settings.execution.tools != crate::config::ToolsMode::Off)?;
    let bytes = settings.execution.tool_bounds.result_bytes;
    crate::tools::Toolbox::open(head, &settings.tool_deny, bytes, Arc::new(str::to_string))
        .ok()
        .map(Arc::new)
}

/// Runs every policy `runs` times on a paused clock and summarises.
pub fn run(input: &SimulateInput) -> Result<Prediction> {
    let rt = paused_runtime()?;
    let variants = Routing::ALL
        .iter()
        .map(|routing| {
            let figures = runs_of(&rt, input, &input.settings.routes, *routing);
            summarise(*routing, &figures)
        })
        .collect();
    Ok(Prediction {
        units: input.units.len(),
        variants,
    })
}

/// The route as the simulator plays it: a sim route with the given seed offset.
fn sim_route(r: &Route, seed_offset: u64) -> Route {
    let mut s = r.clone();
    if r.provider != ProviderKind::Sim {
        s.sim.time_scale = 1.0;
    }
    s.provider = ProviderKind::Sim;
    s.sim.seed = r.sim.seed.wrapping_add(seed_offset);
    s
}

async fn one_run(
    input: &SimulateInput,
    routes: &[Route],
    routing: Routing,
    seed_offset: u64,
) -> RunFigures {
    let routes = routes
        .iter()
        .map(|r| {
            let route = sim_route(r, seed_offset);
            let provider = SimProvider::with_profile(&route, input.profiles[&r.name]);
            EngineRoute::configured(Arc::new(provider) as Arc<dyn Provider>, r)
        })
        .collect();
    let exec = crate::config::Execution {
        routing,
        ..input.settings.execution
    };
    let engine = Engine::new(routes, exec, Sink::none());
    let engine = match &input.tools {
        Some(tb) => engine.with_toolbox(tb.clone()),
        None => engine,
    };
    let r = engine
        .run(input.units.clone(), CancellationToken::new())
        .await;
    RunFigures {
        reviewed: r
            .units
            .iter()
            .filter(|u| u.status == UnitStatus::Reviewed)
            .count(),
        wall: r.elapsed,
        attempts: r.units.iter().map(|u| u.attempts.len()).sum(),
        backpressure: r
            .units
            .iter()
            .flat_map(|u| &u.attempts)
            .filter(|a| a.record.backpressure)
            .count(),
        cost: r.cost_usd,
        loops: r.units.iter().any(|u| u.tool_loop.is_some()).then(|| {
            let loops = r.units.iter().filter_map(|u| u.tool_loop.as_ref());
            let (calls, shed) = loops.fold((0, 0), |(c, s), l| {
                (
                    c + l.tool_calls as usize,
                    s + usize::from(l.shed_for_budget),
                )
            });
            (calls, shed)
        }),
    }
}

fn summarise(routing: Routing, f: &[RunFigures]) -> Variant {
    let col = |g: &dyn Fn(&RunFigures) -> f64| median(f.iter().map(g).collect());
    Variant {
        routing: routing.as_str().to_string(),
        runs: f.len(),
        reviewed_median: col(&|x| x.reviewed as f64),
        reviewed_min: f.iter().map(|x| x.reviewed).min().unwrap_or(0),
        reviewed_max: f.iter().map(|x| x.reviewed).max().unwrap_or(0),
        wall_ms_median: col(&|x| x.wall.as_secs_f64() * 1000.0).round(),
        attempts_median: col(&|x| x.attempts as f64),
        backpressure_median: col(&|x| x.backpressure as f64),
        cost_usd_median: col(&|x| x.cost),
        tool_calls_median: f
            .iter()
            .any(|x| x.loops.is_some())
            .then(|| col(&|x| x.loops.map_or(0.0, |l| l.0 as f64))),
        shed_for_budget_median: f
            .iter()
            .any(|x| x.loops.is_some())
            .then(|| col(&|x| x.loops.map_or(0.0, |l| l.1 as f64))),
    }
}

/// The median (the mean of the middle two for an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// The prediction as a table for people.
pub fn render_text(p: &Prediction, budget: Duration) -> String {
    let mut out = format!(
        "{} units, {} run{} per policy on a paused clock (review budget {})\n",
        p.units,
        p.variants.first().map_or(0, |v| v.runs),
        if p.variants.first().is_some_and(|v| v.runs == 1) {
            ""
        } else {
            "s"
        },
        crate::config::format_duration(budget)
    );
    out.push_str(&format!(
        "{:<10} {:>9} {:>11} {:>10} {:>9} {:>10}\n",
        "routing", "reviewed", "(min-max)", "wall", "attempts", "cost"
    ));
    for v in &p.variants {
        out.push_str(&format!(
            "{:<10} {:>9} {:>11} {:>10} {:>9} {:>10}\n",
            v.routing,
            trim(v.reviewed_median),
            format!("({}-{})", v.reviewed_min, v.reviewed_max),
            crate::config::format_duration(Duration::from_millis(v.wall_ms_median as u64)),
            trim(v.attempts_median),
            format!("${:.4}", v.cost_usd_median)
        ));
    }
    for v in p.variants.iter() {
        if let (Some(calls), Some(shed)) = (v.tool_calls_median, v.shed_for_budget_median) {
            out.push_str(&format!(
                "{}: tool loops made {} tool calls; {} units had tool turns shed for lack of budget\n",
                v.routing,
                trim(calls),
                trim(shed)
            ));
        }
    }
    out
}

fn trim(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(vec![]), 0.0);
    }

    #[test]
    fn no_routes_is_said_before_a_profile_flag_is_checked() {
        let s = Settings::default();
        assert!(s.routes.is_empty());
        for flags in [vec![], vec![("primary".to_string(), "outage".to_string())]] {
            let e = profiles(&s, &flags, &BTreeMap::new())
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("no model routes are configured"), "{e}");
        }
    }

    #[test]
    fn routes_without_a_profile_are_named() {
        let mut s = Settings::default();
        s.use_sim("slow-tail").unwrap();
        let p = profiles(&s, &[], &BTreeMap::new()).unwrap();
        assert_eq!(p["sim-primary"], Profile::named("slow-tail").unwrap());
        let p = profiles(
            &s,
            &[("sim-primary".into(), "outage".into())],
            &BTreeMap::new(),
        )
        .unwrap();
        assert_eq!(p["sim-primary"], Profile::named("outage").unwrap());
        let e = profiles(&s, &[("nope".into(), "healthy".into())], &BTreeMap::new())
            .unwrap_err()
            .to_string();
        assert!(e.contains("no route is named `nope`"), "{e}");
        s.routes[0].provider = ProviderKind::OpenAi;
        let e = profiles(&s, &[], &BTreeMap::new()).unwrap_err().to_string();
        assert!(
            e.contains("route `sim-primary` has no latency profile"),
            "{e}"
        );
    }
}
