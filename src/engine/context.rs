//! Prompts too long for a model's context window (docs/design.md §14, "Current models"). A
//! route's window is its `contextWindow`, or the one a context-length 400 of its
//! provider named this run ("maximum context length is 8192 tokens"), whichever is
//! smaller. Before each attempt a unit whose prompt would not fit the first route it may
//! use (the cost budget's token estimate of the prompt, never below 3 characters a
//! token, plus the route's `maxTokens` for the answer) is split in two, and the halves run as units of their own; a unit that
//! cannot be split passes the routes it does not fit over (failover) and ends `failed`,
//! naming every window, when it fits none. A context-length 400 does the same for the
//! route that sent it: the halves (or the next route) follow at once, the attempt counts
//! toward no `maxAttempts` and is no breaker verdict (`resend.rs`).
//!
//! The halves run one after the other in the unit's task (`unit.rs` runs them, this file
//! sums them up with [`combine`]), so the unit keeps one
//! attempt numbering (telemetry keys attempts by unit and number) and takes one permit
//! at a time; each half has its own hunk budget from its first attempt, like any unit.

use super::Shared;
use super::events::Event;
use super::outcome::{UnitPart, UnitResult, UnitStatus};
use super::retry::Stop;
use super::unit_state::UnitRun;
use crate::plan::split::Half;
use std::fmt::Write;
use std::sync::atomic::Ordering;

/// What a unit does about its routes' windows before its next attempt.
pub(super) enum Fit {
    /// Send it (to a route it fits, or whose window is unknown).
    Send,
    /// Split it into these halves, for this reason.
    Split(Box<[Half; 2]>, String),
    /// It fits no route and cannot be split.
    Stop(Stop),
}

/// The route's window in tokens, when known.
fn window(sh: &Shared, route: usize) -> Option<u64> {
    let w = sh.engine.routes[route].window.load(Ordering::SeqCst);
    (w > 0).then_some(w)
}

/// Tokens the unit's next attempt on `route` needs: its prompt (with its tool
/// transcript, when `transcript`) as the cost budget estimates it, and the answer cap.
fn need_with(sh: &Shared, u: &UnitRun, route: usize, transcript: bool) -> (u64, u32) {
    let r = &sh.engine.routes[route];
    let looped = u.looping.as_ref().filter(|_| transcript);
    let chars = u.work.prompt.chars() + looped.map_or(0, |l| l.chars());
    let input = r
        .observed
        .lock()
        .expect("observed usage")
        .window_tokens(chars);
    (input, r.max_tokens)
}

/// The prompt alone (the chunk): what splitting helps with.
fn need(sh: &Shared, u: &UnitRun, route: usize) -> (u64, u32) {
    need_with(sh, u, route, false)
}

fn over(sh: &Shared, u: &UnitRun, route: usize, transcript: bool) -> bool {
    let (input, answer) = need_with(sh, u, route, transcript);
    window(sh, route).is_some_and(|w| input + u64::from(answer) > w)
}

fn too_small(sh: &Shared, u: &UnitRun, route: usize) -> bool {
    over(sh, u, route, false)
}

/// A tool loop whose transcript, not its chunk, outgrew the route's window: splitting
/// the chunk would not help (each half reads the repository again), so the unit goes on
/// as one request with the chunk alone, and says so.
fn without_tools(sh: &Shared, u: &mut UnitRun, route: usize) -> bool {
    let Some(l) = u.looping.take_if(|l| l.chars() > 0) else {
        return false;
    };
    l.close(&mut u.result);
    u.turn_from = u.result.attempts.len();
    u.window_note = Some(format!(
        "its tool loop's transcript outgrew route {}'s context window: reviewed without tools after that",
        sh.engine.routes[route].name
    ));
    true
}

/// Whether a part of the chunk could fit the route at all: the window holds more than
/// the system message and the answer cap (else splitting only makes failures).
fn room_for_a_part(sh: &Shared, u: &UnitRun, route: usize) -> bool {
    let r = &sh.engine.routes[route];
    let system = u.work.prompt.system.chars().count();
    let fixed = r
        .observed
        .lock()
        .expect("observed usage")
        .window_tokens(system);
    window(sh, route).is_none_or(|w| fixed + u64::from(r.max_tokens) < w)
}

/// Before an attempt: split the unit when it does not fit the first route it may use;
/// else pass over the routes it does not fit, and stop when that leaves none.
pub(super) fn check(sh: &Shared, u: &mut UnitRun) -> Fit {
    let allowed = u.allowed(sh);
    let small: Vec<usize> = allowed
        .iter()
        .copied()
        .filter(|r| too_small(sh, u, *r))
        .collect();
    let Some(&first) = small.first() else {
        if let Some(&first) = allowed.first()
            && over(sh, u, first, true)
        {
            without_tools(sh, u, first);
        }
        return Fit::Send;
    };
    if first == allowed[0]
        && room_for_a_part(sh, u, first)
        && let Some(h) = halves(u)
    {
        let (input, answer) = need(sh, u, first);
        let why = format!(
            "its prompt (about {input} tokens, and {answer} for the answer) exceeds route {}'s context window of {} tokens",
            sh.engine.routes[first].name,
            window(sh, first).unwrap_or(0)
        );
        return Fit::Split(h, why);
    }
    u.too_small.extend(small);
    if u.allowed(sh).is_empty() {
        return Fit::Stop(fits_none(sh, u));
    }
    Fit::Send
}

/// After a context-length 400 from `route` (naming its window, or not): the route learns
/// the window for the run, and the unit is split, or fails over, or stops.
pub(super) fn refused(sh: &Shared, u: &mut UnitRun, route: usize, named: Option<u64>) -> Fit {
    let r = &sh.engine.routes[route];
    if let Some(w) = named.filter(|w| *w > 0) {
        let learned = r
            .window
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |old| {
                (old == 0 || w < old).then_some(w)
            });
        // Once per route and run: where to say it before sending next time.
        if learned == Ok(0) {
            sh.sink.emit(Event::Warning {
                route: r.name.clone(),
                message: format!(
                    "the provider answered that a prompt exceeds the model's context window ({w} tokens): route `{}` splits longer chunks before sending for the rest of the run; set contextWindow = {w} on the route to do so from the start",
                    r.name
                ),
            });
        }
    }
    let size = named.map_or("a size it did not name".to_string(), |w| {
        format!("{w} tokens")
    });
    let why = format!(
        "route {} answered that its prompt exceeds the model's context window ({size})",
        r.name
    );
    // Mid-loop, the transcript may be what does not fit: the chunk alone is tried first.
    if !too_small(sh, u, route) && without_tools(sh, u, route) {
        return Fit::Send;
    }
    if room_for_a_part(sh, u, route)
        && let Some(h) = halves(u)
    {
        return Fit::Split(h, why);
    }
    u.too_small.push(route);
    if u.allowed(sh).is_empty() {
        return Fit::Stop(fits_none(sh, u));
    }
    Fit::Send
}

fn halves(u: &UnitRun) -> Option<Box<[Half; 2]>> {
    u.work.split.as_ref()?.halves().map(Box::new)
}

/// Why a unit that fits no route ends: every route's window, and that it cannot be cut.
fn fits_none(sh: &Shared, u: &UnitRun) -> Stop {
    let mut windows = String::new();
    for (i, r) in u.base_routes(sh).iter().enumerate() {
        let sep = if i == 0 { "" } else { ", " };
        let w = window(sh, *r).map_or("not named".to_string(), |w| format!("{w} tokens"));
        let _ = write!(windows, "{sep}{}: {w}", sh.engine.routes[*r].name);
    }
    let first = u.base_routes(sh)[0];
    let (input, answer) = need(sh, u, first);
    let cut = match &u.work.split {
        Some(s) if s.halves().is_some() => {
            "no part of it would fit either (the window holds little more than the instructions and the answer cap)".to_string()
        }
        Some(s) if s.depth() >= crate::plan::split::MAX_DEPTH => {
            format!("it was split {} times already", s.depth())
        }
        Some(_) => "one changed line cannot be split".to_string(),
        None => "this unit cannot be split".to_string(),
    };
    Stop::new(
        UnitStatus::Failed,
        format!(
            "its prompt (about {input} tokens, and {answer} for the answer) fits no route's context window ({windows}), and {cut}: review the file with a model of a larger window, or set a smaller [chunking] maxChunkSize"
        ),
    )
}

/// The whole unit's result from its parts: the attempts made on the whole chunk go
/// with the first part, and the unit's fields sum the parts up (each attempt and
/// finding once).
pub(super) fn combine(mut whole: UnitResult, mut parts: Vec<UnitPart>, why: String) -> UnitResult {
    let first = &mut parts[0].result;
    first.attempts.splice(0..0, whole.attempts.drain(..));
    first
        .routes_tried
        .splice(0..0, whole.routes_tried.drain(..));
    first.moves.splice(0..0, whole.moves.drain(..));
    let results = || parts.iter().map(|p| &p.result);
    whole.status = results()
        .map(|r| r.status)
        .find(|s| *s != UnitStatus::Reviewed)
        .unwrap_or(UnitStatus::Reviewed);
    whole.route = results().find_map(|r| r.route.clone());
    whole.attempts = results().flat_map(|r| r.attempts.clone()).collect();
    whole.routes_tried = results().flat_map(|r| r.routes_tried.clone()).collect();
    whole.moves = results().flat_map(|r| r.moves.clone()).collect();
    whole.findings = results().flat_map(|r| r.findings.clone()).collect();
    whole.dropped_findings = results().map(|r| r.dropped_findings).sum();
    whole.dropped = results().flat_map(|r| r.dropped.clone()).collect();
    whole.answer_cut = results().any(|r| r.answer_cut);
    whole.findings_cut = results().map(|r| r.findings_cut).sum();
    whole.tool_loop = None;
    whole.reason = format!("split into {} parts: {why}", parts.len());
    whole.parts = parts;
    whole
}

/// A top-level split unit's parts say so in their reasons: which part of which lines,
/// and why the unit was split.
pub(super) fn name_parts(result: &mut UnitResult, lines: (u32, u32)) {
    let n = result.parts.len();
    let why = result.reason.clone();
    for (i, p) in result.parts.iter_mut().enumerate() {
        p.result.reason = format!(
            "{}; part {} of {n} of lines {}-{} ({why})",
            p.result.reason,
            i + 1,
            lines.0,
            lines.1
        );
    }
}
