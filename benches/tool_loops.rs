//! Tool loops (docs/design.md §14, issue 29): an agentic review against a single-shot one. The
//! engine with real HTTP clients against the fake provider on 127.0.0.1, 300 ms per
//! answer (each turn one request), 40 units, fixed caps (4 and 8): the fake plays an agent
//! that reads the file under review, greps, lists `src/`, then submits (4 turns a unit),
//! with the tools answered by warden over a real tree; the single-shot review sends the
//! same units without tools. Prints units reviewed, wall time, requests, turns per unit,
//! tool calls and the tool bytes the model read.
//!   cargo bench --bench tool_loops [-- CAP...]   (e.g. `-- 8`: only that cap)

#[path = "../tests/it/support/fake_provider.rs"]
mod fake_provider;
#[path = "support/timed.rs"]
mod timed;

use fake_provider::{Behavior, FakeProvider, fake_agent};
use std::sync::Arc;
use std::time::Duration;
use warden::config::{Execution, ProviderKind, Route};
use warden::engine::{Engine, EngineRoute, Sink, UnitLabels, UnitWork};
use warden::prompt::Prompt;
use warden::provider::{HttpProvider, Provider};
use warden::tools::{LoopPlan, Tool, Toolbox};

const UNITS: usize = 40;
const TURN: Duration = Duration::from_millis(300);

/// A tree of `UNITS` files for the tools to read.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    for f in 0..UNITS {
        let text: String = (1..=60)
            .map(|i| format!("    let f{f}_{i} = compute({i});\n"))
            .collect();
        std::fs::write(dir.path().join(format!("src/f{f}.rs")), text).unwrap();
    }
    dir
}

fn units(looping: bool) -> Vec<UnitWork> {
    (0..UNITS)
        .map(|i| UnitWork {
            index: i,
            prompt: Prompt {
                system: "review skill `code-review`".into(),
                user: format!("file: src/f{i}.rs\nLines under review: 59-60\n"),
            },
            lines: (59, 60),
            optional: false,
            labels: UnitLabels::default(),
            routes: vec![],
            split: None,
            tools: looping.then(|| LoopPlan {
                tools: Tool::ALL.to_vec(),
                max_turns: 4,
            }),
        })
        .collect()
}

fn run(looping: bool, cap: usize, root: &std::path::Path) {
    let fake = FakeProvider::start();
    // Each answer after 300 ms: a turn of the agent when tools are offered, else the
    // findings in text (the agent answers a request without tools in text).
    fake.respond_with(Arc::new(|body| {
        Some(Behavior::DelayHeaders(
            TURN,
            Box::new(fake_agent::respond_deep(body, 3)),
        ))
    }));
    let r = Route {
        base_url: Some(fake.base_url()),
        api_key_env: None,
        ..Route::new("primary", ProviderKind::OpenAi, "agent", cap)
    };
    let provider: Arc<dyn Provider> = Arc::new(HttpProvider::new(&r, None, Duration::from_secs(2)));
    // A budget whose share per unit covers every turn from the start (the depth rule
    // gives the first units single-shot reviews when it cannot: see docs/tool-loops.md).
    let exec = Execution {
        review_budget: Duration::from_secs(30 * 60),
        ..Default::default()
    };
    let toolbox = Toolbox::work_tree(root, &[], 32 * 1024).unwrap();
    let engine = Engine::new(
        vec![EngineRoute::configured(provider, &r)],
        exec,
        Sink::none(),
    )
    .with_toolbox(Arc::new(toolbox));
    let (report, wall, reviewed) = timed::review(&engine, units(looping));
    let loops: Vec<_> = report
        .units
        .iter()
        .filter_map(|u| u.tool_loop.as_ref())
        .collect();
    let turns: u32 = loops.iter().map(|l| l.turns_used).sum();
    let calls: u32 = loops.iter().map(|l| l.tool_calls).sum();
    let bytes: u64 = loops.iter().map(|l| l.tool_bytes).sum();
    let requests = fake.requests().len();
    println!(
        "{:<12} {cap:>4} {reviewed:>4}/{UNITS:<3} {:>8.2}s {requests:>9} {:>11.2} {calls:>6} {:>9}",
        if looping {
            "4-turn loop"
        } else {
            "single-shot"
        },
        wall.as_secs_f64(),
        if looping {
            f64::from(turns) / UNITS as f64
        } else {
            requests as f64 / UNITS as f64
        },
        format!("{} KiB", bytes.div_ceil(1024)),
    );
}

fn main() {
    let only: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let dir = tree();
    println!(
        "{UNITS} units, {} ms per answer, fixed caps; the fake as a 4-turn agent (read, grep, list, submit)",
        TURN.as_millis()
    );
    println!(
        "{:<12} {:>4} {:>8} {:>9} {:>9} {:>11} {:>6} {:>9}",
        "review", "cap", "reviewed", "wall", "requests", "turns/unit", "calls", "read"
    );
    for cap in [4, 8]
        .into_iter()
        .filter(|c| only.is_empty() || only.contains(c))
    {
        run(false, cap, dir.path());
        run(true, cap, dir.path());
    }
}
