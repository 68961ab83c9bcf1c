//! Tool loops in the engine (docs/design.md §14), on tokio's paused clock against in-process
//! models that call tools: the turn cap, the hunk budget over every turn, a loop cut
//! mid-turn, a failed turn retried (not the unit), failover carrying the transcript, the
//! repeat guard, the depth rule, and a model that never calls a tool costing one request.

use crate::support::agent::{Agent, Move, read};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use warden::config::Execution;
use warden::engine::{Engine, EngineReport, EngineRoute, Event, Sink, UnitStatus, UnitWork};
use warden::provider::{Outcome, Provider, ToolChoice, Turn};
use warden::tools::{LoopPlan, Tool, Toolbox};

const S: fn(u64) -> Duration = Duration::from_secs;

/// A repository folder with the file the models read.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/f0.rs"),
        "fn caller() {\n    helper(1);\n}\n",
    )
    .unwrap();
    dir
}

fn looping(n: usize, max_turns: u32) -> Vec<UnitWork> {
    let mut units = crate::support::scripted::units(n);
    for u in &mut units {
        u.tools = Some(LoopPlan {
            tools: Tool::ALL.to_vec(),
            max_turns,
        });
    }
    units
}

async fn run(
    routes: Vec<(Arc<Agent>, usize)>,
    exec: Execution,
    work: Vec<UnitWork>,
    root: &std::path::Path,
) -> (EngineReport, Vec<Event>) {
    run_until(routes, exec, work, root, None).await
}

/// As [`run`], interrupted (a signal) after `interrupt_after` if given.
async fn run_until(
    routes: Vec<(Arc<Agent>, usize)>,
    exec: Execution,
    work: Vec<UnitWork>,
    root: &std::path::Path,
    interrupt_after: Option<Duration>,
) -> (EngineReport, Vec<Event>) {
    let (sink, events) = Sink::collect();
    let routes = routes
        .into_iter()
        .map(|(p, cap)| EngineRoute::new(p as Arc<dyn Provider>, cap))
        .collect();
    let tb = Toolbox::work_tree(root, &[], 32 * 1024).unwrap();
    let token = CancellationToken::new();
    if let Some(after) = interrupt_after {
        let t = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            t.cancel();
        });
    }
    let report = Engine::new(routes, exec, sink)
        .with_toolbox(Arc::new(tb))
        .run(work, token)
        .await;
    let events = events.lock().unwrap().clone();
    (report, events)
}

fn exec() -> Execution {
    crate::engine_policy::exec()
}

#[tokio::test(start_paused = true)]
async fn turns_never_exceed_max_turns_and_the_last_one_forces_submit() {
    let dir = tree();
    // A model that reads for ever: turns 1-3 read, the 4th is forced to submit.
    let a = Agent::new("a", |_, _| Move::Call(S(1), vec![read("src/f0.rs")]));
    let (r, _) = run(vec![(a.clone(), 1)], exec(), looping(1, 4), dir.path()).await;
    assert_eq!(a.calls(), 4, "maxTurns 4 is 4 requests");
    let seen = a.seen();
    assert!(
        seen.iter()
            .take(3)
            .all(|c| c.as_ref().unwrap().choice == ToolChoice::Auto)
    );
    let last = seen[3].as_ref().unwrap();
    assert_eq!(last.choice, ToolChoice::Force("submit_findings".into()));
    // It called tools on its final turn instead: cut, never clean.
    let u = &r.units[0];
    assert_eq!(u.status, UnitStatus::Failed, "{}", u.reason);
    assert!(
        u.reason.contains("final turn") && u.reason.contains("turn 4 of 4"),
        "{}",
        u.reason
    );
    let l = u.tool_loop.as_ref().unwrap();
    assert_eq!((l.turns_allowed, l.turns_used), (4, 4));
    // Turns 2 and 3 repeated turn 1's call: answered from memory, counted.
    assert_eq!((l.tool_calls, l.repeated_calls), (3, 2));

    // The same loop, a model that obeys the forced submit: reviewed on turn 4.
    let b = Agent::new("b", |_, turn| {
        if turn < 3 {
            Move::Call(S(1), vec![read(&format!("src/f{turn}.rs"))])
        } else {
            Move::Submit(S(1), 2)
        }
    });
    let (r, _) = run(vec![(b.clone(), 1)], exec(), looping(1, 4), dir.path()).await;
    assert_eq!(b.calls(), 4);
    let u = &r.units[0];
    assert_eq!(u.status, UnitStatus::Reviewed, "{}", u.reason);
    assert_eq!(u.findings.len(), 2);
    assert_eq!(u.tool_loop.as_ref().unwrap().turns_used, 4);
}

#[tokio::test(start_paused = true)]
async fn a_model_that_never_calls_a_tool_costs_one_request_per_unit() {
    let dir = tree();
    let a = Agent::new("a", |_, _| Move::Text(S(2), 1));
    let (r, _) = run(vec![(a.clone(), 4)], exec(), looping(10, 8), dir.path()).await;
    assert_eq!(a.calls(), 10);
    assert!(r.units.iter().all(|u| u.status == UnitStatus::Reviewed));
    assert!(
        r.units
            .iter()
            .all(|u| u.tool_loop.as_ref().unwrap().turns_used == 1)
    );
    // Its first request offered the tools: a model that takes none answers as before.
    assert!(
        a.seen()
            .iter()
            .all(|c| c.as_ref().unwrap().turns.is_empty())
    );
}

#[tokio::test(start_paused = true)]
async fn the_hunk_budget_covers_every_turn_and_leaves_time_for_the_final_one() {
    let dir = tree();
    // Each turn answers just inside the 2 min request deadline; the hunk budget is 5 min.
    let a = Agent::new("a", |_, turn| {
        if turn == 0 {
            Move::Call(S(119), vec![read("src/f0.rs")])
        } else {
            Move::Submit(S(119), 1)
        }
    });
    let t0 = tokio::time::Instant::now();
    let (r, _) = run(vec![(a.clone(), 1)], exec(), looping(1, 8), dir.path()).await;
    // After turn 1, 3 min are left: less than a tool turn and the final one at the
    // request deadline, so turn 2 is the final one, and it fits.
    assert_eq!(a.calls(), 2);
    let seen = a.seen();
    assert_eq!(
        seen[1].as_ref().unwrap().choice,
        ToolChoice::Force("submit_findings".into())
    );
    let u = &r.units[0];
    assert_eq!(u.status, UnitStatus::Reviewed, "{}", u.reason);
    assert_eq!(u.tool_loop.as_ref().unwrap().turns_allowed, 2);
    assert!(
        t0.elapsed() <= S(300),
        "within the hunk budget: {:?}",
        t0.elapsed()
    );
}

#[tokio::test(start_paused = true)]
async fn a_loop_cut_mid_turn_is_not_clean_and_says_which_turn_it_reached() {
    let dir = tree();
    let a = Agent::new("a", |_, turn| {
        if turn == 0 {
            Move::Call(S(10), vec![read("src/f0.rs")])
        } else {
            Move::Submit(S(100), 1)
        }
    });
    // The run is interrupted during turn 2.
    let (r, _) = run_until(
        vec![(a.clone(), 1)],
        exec(),
        looping(1, 8),
        dir.path(),
        Some(S(30)),
    )
    .await;
    let u = &r.units[0];
    assert_eq!(u.status, UnitStatus::Cancelled, "{}", u.reason);
    assert!(
        u.reason.contains("tool loop cut during turn 2") && u.reason.contains("1 tool call"),
        "{}",
        u.reason
    );
    assert_eq!(a.calls(), 2);

    // The review budget cuts a loop the same way: with 4 min left a unit starts with
    // tools, reads for 10 s, then its final turn runs into the review deadline.
    let b = Agent::new("b", |_, turn| {
        if turn == 0 {
            Move::Call(S(10), vec![read("src/f0.rs")])
        } else {
            Move::Submit(S(300), 1)
        }
    });
    let mut e = exec();
    e.review_budget = S(240);
    let (r, _) = run(vec![(b.clone(), 1)], e, looping(1, 8), dir.path()).await;
    let u = &r.units[0];
    assert_eq!(u.status, UnitStatus::Cancelled, "{}", u.reason);
    assert!(
        u.reason.contains("review budget") && u.reason.contains("turn 2"),
        "{}",
        u.reason
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_turn_is_retried_with_its_transcript_not_the_unit() {
    let dir = tree();
    // Turn 1 reads; turn 2 fails once (unavailable), then reads again; turn 3 submits.
    let a = Agent::new("a", |n, turn| match (n, turn) {
        (0, _) => Move::Call(S(1), vec![read("src/f0.rs")]),
        (1, _) => Move::Fail(S(1), Outcome::Unavailable),
        (_, 1) => Move::Call(S(1), vec![("grep", r#"{"pattern": "helper\\("}"#.into())]),
        _ => Move::Submit(S(1), 1),
    });
    let (r, _) = run(vec![(a.clone(), 1)], exec(), looping(1, 8), dir.path()).await;
    let u = &r.units[0];
    assert_eq!(u.status, UnitStatus::Reviewed, "{}", u.reason);
    // maxAttempts 2 counts each turn's attempts: a successful turn uses none of them.
    assert_eq!(a.calls(), 4, "turn 1, turn 2 failed, turn 2 again, turn 3");
    let seen = a.seen();
    assert_eq!(
        seen[1], seen[2],
        "the retry sends the failed turn's transcript again"
    );
    let l = u.tool_loop.as_ref().unwrap();
    assert_eq!((l.turns_used, l.tool_calls), (3, 2));
    assert_eq!(l.calls_by_tool.get("grep"), Some(&1));
}

#[tokio::test(start_paused = true)]
async fn failover_mid_loop_sends_the_earlier_tool_results_to_the_next_route() {
    let dir = tree();
    let a = Agent::new("a", |n, _| match n {
        0 => Move::Call(S(1), vec![read("src/f0.rs")]),
        _ => Move::Fail(S(1), Outcome::Unavailable),
    });
    let b = Agent::new("b", |_, _| Move::Submit(S(1), 1));
    let (r, _) = run(
        vec![(a.clone(), 1), (b.clone(), 1)],
        exec(),
        looping(1, 8),
        dir.path(),
    )
    .await;
    let u = &r.units[0];
    assert_eq!(u.status, UnitStatus::Reviewed, "{}", u.reason);
    assert_eq!(u.route.as_deref(), Some("b"));
    let seen = b.seen();
    let c = seen[0].as_ref().expect("the transcript went with the unit");
    let Turn::Results(results) = &c.turns[1] else {
        panic!("{:?}", c.turns)
    };
    assert!(
        results[0].content.contains("helper(1);"),
        "{}",
        results[0].content
    );
    assert_eq!(u.tool_loop.as_ref().unwrap().moved_after_turn, Some(1));
}

#[tokio::test(start_paused = true)]
async fn the_repeat_guard_stops_a_model_calling_one_tool_for_ever() {
    let dir = tree();
    let a = Agent::new("a", |_, _| {
        Move::Call(S(1), vec![("grep", r#"{"pattern": "x"}"#.into())])
    });
    let (r, events) = run(vec![(a.clone(), 1)], exec(), looping(1, 50), dir.path()).await;
    let l = r.units[0].tool_loop.as_ref().unwrap();
    assert!(
        a.calls() <= 6,
        "stopped well within 50 turns: {}",
        a.calls()
    );
    assert!(l.repeated_calls >= 3, "{l:?}");
    assert_eq!(
        l.calls.len(),
        1,
        "the tool ran once; the rest came from memory"
    );
    let repeats = events
        .iter()
        .filter(|e| matches!(e, Event::ToolCalled { repeat: true, .. }))
        .count();
    assert_eq!(repeats as u32, l.repeated_calls);
    assert_ne!(r.units[0].status, UnitStatus::Reviewed);
}

#[tokio::test(start_paused = true)]
async fn hostile_calls_are_tool_errors_the_model_reads_and_the_unit_goes_on() {
    let dir = tree();
    let a = Agent::new("a", |_, turn| match turn {
        0 => Move::Call(
            S(1),
            vec![
                read("../../etc/passwd"),
                read("/etc/passwd"),
                read(".git/config"),
                ("read_file", "{\"path\": ".into()),
                ("run_shell", "{}".into()),
            ],
        ),
        _ => Move::Submit(S(1), 0),
    });
    let (r, _) = run(vec![(a.clone(), 1)], exec(), looping(1, 8), dir.path()).await;
    assert_eq!(
        r.units[0].status,
        UnitStatus::Reviewed,
        "{}",
        r.units[0].reason
    );
    let seen = a.seen();
    let Turn::Results(results) = &seen[1].as_ref().unwrap().turns[1] else {
        panic!()
    };
    assert_eq!(results.len(), 5);
    assert!(results.iter().all(|r| r.is_error), "{results:#?}");
    assert!(results.iter().all(|r| !r.content.contains("root:")));
}

#[tokio::test(start_paused = true)]
async fn depth_is_shed_before_coverage_when_the_budget_cannot_cover_every_unit() {
    let dir = tree();
    // 40 units, one slot, 30 s turns, a 25 min budget: 50 turns fit, so each unit's share
    // (under two turns) cannot take a tool turn once a turn was observed.
    let a = Agent::new("a", |_, turn| {
        if turn == 0 {
            Move::Call(S(30), vec![read("src/f0.rs")])
        } else {
            Move::Submit(S(30), 0)
        }
    });
    let mut e = exec();
    e.review_budget = S(25 * 60);
    let (r, _) = run(vec![(a.clone(), 1)], e, looping(40, 4), dir.path()).await;
    let reviewed = r
        .units
        .iter()
        .filter(|u| u.status == UnitStatus::Reviewed)
        .count();
    let shed = r
        .units
        .iter()
        .filter(|u| u.tool_loop.as_ref().unwrap().shed_for_budget)
        .count();
    // Single-shot would review 50 of them (all 40); every unit after the first is shed.
    assert_eq!(reviewed, 40, "coverage first");
    assert!(shed >= 38, "{shed} shed");

    // A healthy budget: every unit gets its turns. (Eight slots: with one, a unit's next
    // turn can wait behind new units for the permit while its hunk budget runs.)
    let b = Agent::new("b", |_, turn| {
        if turn == 0 {
            Move::Call(S(30), vec![read("src/f0.rs")])
        } else {
            Move::Submit(S(30), 0)
        }
    });
    let mut e = exec();
    e.review_budget = S(4 * 3600);
    let (r, _) = run(vec![(b.clone(), 8)], e, looping(40, 4), dir.path()).await;
    assert!(r.units.iter().all(|u| u.status == UnitStatus::Reviewed));
    assert!(
        r.units
            .iter()
            .all(|u| !u.tool_loop.as_ref().unwrap().shed_for_budget),
        "{:#?}",
        r.units
            .iter()
            .map(|u| u.tool_loop.clone())
            .collect::<Vec<_>>()
    );
    assert_eq!(b.calls(), 80);
}

/// docs/design.md §15, the default must cover: a tool turn never costs the final turn its
/// retry once failures are seen. The headline's lost units were a tool turn, then a final
/// turn that timed out with less than half the hunk budget left (rule 5: no retry), where
/// a single-shot review would have tried again. Default budgets (5 min hunk, 2 min
/// deadline; three attempts a turn here): with 250 s left two request deadlines fit, but
/// a tool turn and a final turn failing at their deadlines would leave 10 s, under half
/// the budget. The first failure is forgiven; the second is not.
#[tokio::test(start_paused = true)]
async fn a_tool_turn_never_costs_the_final_turn_its_retry_once_failures_are_seen() {
    let dir = tree();
    let mut e = exec();
    e.max_attempts = 3;
    let a = Agent::new("a", |n, _| match n {
        // Nothing failed yet: the unit takes a tool turn.
        0 => Move::Call(S(40), vec![read("src/f0.rs")]),
        // Its next turn fails twice, leaving 250 s: the third attempt is the final turn.
        1 | 2 => Move::Fail(S(5), Outcome::Unavailable),
        _ => Move::Submit(S(60), 1),
    });
    let (r, _) = run(vec![(a.clone(), 1)], e, looping(1, 4), dir.path()).await;
    let seen = a.seen();
    assert_eq!(a.calls(), 4, "{:#?}", r.units);
    let choice = |i: usize| seen[i].as_ref().map(|c| c.choice.clone());
    assert_eq!(choice(0), Some(ToolChoice::Auto));
    assert_eq!(choice(2), Some(ToolChoice::Auto), "one failure is forgiven");
    assert_eq!(choice(3), Some(ToolChoice::Force("submit_findings".into())));
    let u = &r.units[0];
    assert_eq!(u.status, UnitStatus::Reviewed, "{}", u.reason);
    let l = u.tool_loop.as_ref().unwrap();
    assert!(l.shed_for_budget);
    assert_eq!((l.turns_allowed, l.turns_used, l.tool_calls), (2, 2, 1));

    // A first turn that fails twice (at 25 s and 50 s): its third attempt (250 s left,
    // no answer seen) is a single-shot request.
    let b = Agent::new("b", |n, _| match n {
        0 | 1 => Move::Fail(S(25), Outcome::Unavailable),
        _ => Move::Submit(S(60), 1),
    });
    let (r, _) = run(vec![(b.clone(), 1)], e, looping(1, 4), dir.path()).await;
    let seen = b.seen();
    assert_eq!(b.calls(), 3, "{:#?}", r.units);
    assert_eq!(
        seen[1].as_ref().map(|c| c.choice.clone()),
        Some(ToolChoice::Auto)
    );
    assert_eq!(seen[2], None, "the third attempt is a single-shot request");
    let u = &r.units[0];
    assert_eq!(u.status, UnitStatus::Reviewed, "{}", u.reason);
    assert_eq!(u.tool_loop.as_ref().unwrap().turns_allowed, 1);
}

/// docs/design.md §13: back-pressure is a reason to wait, not a failure. Two 429s before
/// the first answer leave tool turns open (two timeouts would not: the test above).
#[tokio::test(start_paused = true)]
async fn back_pressure_before_a_loop_leaves_its_tool_turns_open() {
    let dir = tree();
    let a = Agent::new("a", |n, _| match n {
        0 | 1 => Move::Fail(S(1), Outcome::RateLimited),
        2 => Move::Call(S(1), vec![read("src/f0.rs")]),
        _ => Move::Submit(S(1), 1),
    });
    let (r, _) = run(vec![(a.clone(), 1)], exec(), looping(1, 4), dir.path()).await;
    let u = &r.units[0];
    assert_eq!(u.status, UnitStatus::Reviewed, "{}", u.reason);
    let seen = a.seen();
    assert_eq!(a.calls(), 4, "{:#?}", r.units);
    assert_eq!(
        seen[2].as_ref().map(|c| c.choice.clone()),
        Some(ToolChoice::Auto)
    );
    let l = u.tool_loop.as_ref().unwrap();
    assert!(!l.shed_for_budget);
    assert_eq!(l.tool_calls, 1);
}

/// A tree of `files` files of `kib` KiB each, lines a grep must read to the end.
fn big_tree(files: usize, kib: usize) -> tempfile::TempDir {
    let dir = tree();
    let line = "let value = compute(alpha, beta, gamma); // padding padding padding\n";
    let body = line.repeat(kib * 1024 / line.len());
    for i in 0..files {
        std::fs::write(dir.path().join(format!("src/big{i}.rs")), &body).unwrap();
    }
    dir
}

/// docs/design.md §15: tool calls are work of their unit. A model asking for grep after grep
/// over a 16 MB tree (each call a different pattern, none answered from memory) with a
/// 2 s hunk budget: the unit ends at its deadline, cut while running tools (said so,
/// never "during an attempt"), with far fewer calls made than asked for; the call in
/// flight at the deadline is not waited for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn greps_over_a_large_tree_stop_at_the_unit_s_deadline_and_say_they_were_running_tools() {
    let dir = big_tree(64, 256);
    let a = Agent::new("a", |n, _| {
        let greps = (0..8)
            .map(|i| {
                let pattern = format!("never_{n}_{i}|gamma\\) // nothing{n}{i}");
                (
                    "grep",
                    serde_json::json!({ "pattern": pattern }).to_string(),
                )
            })
            .collect();
        Move::Call(Duration::from_millis(1), greps)
    });
    let mut e = exec();
    e.review_budget = S(30);
    e.hunk_budget = S(2);
    e.request_timeout = Duration::from_millis(200);
    e.tool_bounds.max_tool_calls = 10_000;
    e.tool_bounds.unit_bytes = 64 << 20;
    let started = std::time::Instant::now();
    let (r, events) = run(vec![(a.clone(), 1)], e, looping(1, 100), dir.path()).await;
    let took = started.elapsed();
    let u = &r.units[0];
    assert_eq!(u.status, UnitStatus::TimedOut, "{}", u.reason);
    assert!(
        u.reason
            .contains("the hunk budget ran out running tools (`grep`)"),
        "{}",
        u.reason
    );
    assert!(!u.reason.contains("during an attempt"), "{}", u.reason);
    // Asked for 8 per turn for ever; the deadline cut it within a few calls.
    let asked = 8 * a.calls();
    let answered = events
        .iter()
        .filter(|e| matches!(e, Event::ToolCalled { .. }))
        .count();
    assert!(answered < asked, "{answered} of {asked}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ToolsRunning { unit: 0, .. })),
        "progress hears that tools run"
    );
    // docs/design.md §13: within the budget + 1 s (here the unit's own 2 s budget).
    assert!(took < S(3), "{took:?}");
}

/// docs/design.md §15: a review cancelled (its budget, or a signal) while a unit runs tools
/// ends that unit at once, `cancelled`, saying it was running tools.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_while_tools_run_ends_the_unit_saying_so() {
    let dir = big_tree(64, 256);
    let a = Agent::new("a", |n, _| {
        let pattern = format!("never_{n}|gamma\\) // nothing{n}");
        Move::Call(
            Duration::from_millis(1),
            vec![
                (
                    "grep",
                    serde_json::json!({ "pattern": pattern }).to_string()
                );
                1
            ],
        )
    });
    let mut e = exec();
    e.request_timeout = Duration::from_millis(200);
    e.tool_bounds.max_tool_calls = 10_000;
    e.tool_bounds.unit_bytes = 64 << 20;
    let (r, _) = run_until(
        vec![(a.clone(), 1)],
        e,
        looping(1, 100),
        dir.path(),
        Some(Duration::from_millis(700)),
    )
    .await;
    let u = &r.units[0];
    assert_eq!(u.status, UnitStatus::Cancelled, "{}", u.reason);
    assert!(u.reason.contains("running tools (`grep`)"), "{}", u.reason);
}
