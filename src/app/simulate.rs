//! `warden simulate`: prepare the plan, give each route a latency profile, run both
//! routing policies on a paused clock (or, with `--caps`, one route's ceilings side by
//! side), print the prediction.

use super::cli::SimulateArgs;
use super::{emit, setup_color, warn};
use std::collections::BTreeMap;
use warden::error::Result;
use warden::prepare::prepare;
use warden::simulate::{self, SimulateInput};
use warden::text::escape;

pub(super) fn simulate_cmd(args: &SimulateArgs) -> Result<i32> {
    setup_color(&args.ui, false);
    let prepared = prepare(&args.selection.resolve()?)?;
    warn(&args.ui, &prepared.settings);
    let fitted = match &args.from_trace {
        Some(path) => simulate::fit::from_trace(path)?,
        None => BTreeMap::new(),
    };
    let profiles = simulate::profiles(&prepared.settings, &args.profiles, &fitted)?;
    let units = warden::review::units(&prepared.plan, &prepared.active, &prepared.settings);
    let budget = prepared.settings.execution.review_budget;
    let tools = simulate::tools_for(prepared.tool_head.as_ref(), &prepared.settings);
    let input = SimulateInput {
        units,
        settings: prepared.settings,
        profiles,
        runs: args.runs as usize,
        tools,
    };
    let text = match &args.caps {
        Some(caps) => {
            let c = simulate::caps::compare(&input, caps)?;
            render(args.json, &c, || simulate::caps::render_text(&c, budget))
        }
        None => {
            let p = simulate::run(&input)?;
            render(args.json, &p, || simulate::render_text(&p, budget))
        }
    };
    emit(None, &text)?;
    Ok(0)
}

/// JSON under `--json`, else the table; escaped either way (route names are config text).
fn render(json: bool, value: &impl serde::Serialize, table: impl FnOnce() -> String) -> String {
    if json {
        let mut s = serde_json::to_string_pretty(value).expect("prediction serializes");
        s.push('\n');
        escape::json_doc(&s)
    } else {
        escape::block(&table())
    }
}
