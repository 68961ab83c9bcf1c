//! A unit's tool loop (docs/design.md §14, "Skills that read the repository"). Each turn is
//! one request: `attempt.rs` makes it as it makes any attempt (route, permit, breaker,
//! limits, pacing, cost, the nested clocks), so breakers, bulkheads, adaptive limits
//! and the fleet see turns as attempts, the one retry owner retries the failed turn (not
//! the unit), and a bounced turn waits with its transcript. This file keeps what the
//! turns share: the transcript (protocol-neutral, so failover carries it to a route of
//! either protocol), the bounds (turns, calls, bytes), the repeat guard, and the depth
//! rule that sheds tool turns before coverage (§4.9). Its figures, as reports show them
//! ([`ToolLoop`]), sit with the other outcome types in `outcome.rs`; `unit.rs` answers a
//! turn's calls through [`LoopState::answer`].

use super::Shared;
use super::events::{Event, UnitInfo};
use super::outcome::{CallLog, ToolLoop, UnitResult, UnitStatus};
use super::retry::Stop;
use crate::config::ToolBounds;
use crate::provider::{
    Conversation, SUBMIT_FINDINGS, ToolCall, ToolChoice, ToolResult, ToolSpec, Turn,
};
use crate::tools::{Halt, LoopPlan, Tool, ToolAnswer, Toolbox};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::time::Instant;

/// Consecutive repeats of one call after which the next turn is the final one: a model
/// calling the same tool for ever is stopped well within the caps.
const MAX_REPEATS: u32 = 3;

/// The loop of one unit in flight.
pub(super) struct LoopState {
    specs: Arc<Vec<ToolSpec>>,
    offered: Vec<Tool>,
    bounds: ToolBounds,
    turns: Vec<Turn>,
    /// Results given so far, by (tool, arguments as canonical JSON).
    memory: HashMap<(String, String), ToolAnswer>,
    /// The same call in a row, for the repeat guard.
    last_call: Option<(String, String)>,
    repeats_in_a_row: u32,
    /// Characters of the transcript (for the cost estimate of the next turn).
    chars: usize,
    /// The next request is the final one (tools off, submit forced).
    final_turn: bool,
    /// A result was cut at `toolBytesPerUnit`: the budget is spent, the model was told so.
    bytes_spent: bool,
    pub(super) figures: ToolLoop,
}

impl LoopState {
    /// A loop for `plan` under `bounds`.
    pub(super) fn new(plan: &LoopPlan, bounds: ToolBounds) -> Self {
        LoopState {
            specs: Arc::new(specs(&plan.tools)),
            offered: plan.tools.clone(),
            bounds,
            turns: Vec::new(),
            memory: HashMap::new(),
            last_call: None,
            repeats_in_a_row: 0,
            chars: 0,
            final_turn: false,
            bytes_spent: false,
            figures: ToolLoop {
                turns_allowed: plan.max_turns.max(1),
                ..ToolLoop::default()
            },
        }
    }

    /// The conversation of the next request. None while the loop is a single shot (one
    /// turn allowed, none made): exactly the request of a review without tools.
    pub(super) fn conversation(&self) -> Option<Conversation> {
        if self.single_shot() {
            return None;
        }
        let choice = if self.final_turn {
            ToolChoice::Force(SUBMIT_FINDINGS.to_string())
        } else {
            ToolChoice::Auto
        };
        Some(Conversation {
            tools: (*self.specs).clone(),
            choice,
            turns: self.turns.clone(),
        })
    }

    /// Characters the transcript adds to the prompt.
    pub(super) fn chars(&self) -> usize {
        self.chars
    }

    /// Decides, before a request, whether it is the final turn: the last turn allowed,
    /// the calls or bytes spent, a model repeating itself, less than one request deadline
    /// left in the unit's or the review's budget, or the budget's share for this unit
    /// (the depth rule) too small for another tool turn and the final one.
    /// `route`: the route whose permit the request holds (it prices the turns).
    pub(super) fn before_request(
        &mut self,
        sh: &Shared,
        route: usize,
        hunk_end: Instant,
        now: Instant,
    ) {
        if self.final_turn || self.single_shot() {
            return;
        }
        let used = self.figures.turns_used;
        let spent = self.figures.tool_calls >= self.bounds.max_tool_calls
            || self.figures.tool_bytes >= self.bounds.unit_bytes as u64
            || self.bytes_spent
            || self.repeats_in_a_row >= MAX_REPEATS;
        // A tool turn starts only when it and the final turn both fit at the request
        // deadline.
        let left = hunk_end
            .min(sh.review_deadline)
            .saturating_duration_since(now);
        let short = left < sh.exec.request_timeout.saturating_mul(2);
        let last = used + 1 >= self.figures.turns_allowed;
        // Checked only when nothing else ends the tool turns (it reads shared figures).
        let hunk_left = hunk_end.saturating_duration_since(now);
        let shed = !(last || spent || short || sh.depth.affords_tool_turn(route, hunk_left));
        if !(last || spent || short || shed) {
            return;
        }
        // Less time than two turns need, or a share too small: turns shed for budget.
        self.figures.shed_for_budget |= shed || (short && !last && !spent);
        if used == 0 {
            // Nothing gathered yet: the request without tools, a single-shot review.
            self.figures.turns_allowed = 1;
        } else {
            self.final_turn = true;
            self.figures.turns_allowed = used + 1;
        }
    }

    /// One turn allowed and none made: the loop is a plain request.
    fn single_shot(&self) -> bool {
        self.turns.is_empty() && self.figures.turns_allowed <= 1
    }

    /// After an answered turn of calls: answers each call (from memory when it repeats
    /// one), adds the turn and its results to the transcript. A model that calls tools on
    /// its final turn has not answered: the loop ends, cut, never clean. Every call runs
    /// under the unit's deadline (`until`) and the review's cancel, checked before each
    /// call and while it runs (docs/design.md §15).
    pub(super) async fn answer(
        &mut self,
        sh: &Shared<'_>,
        unit: usize,
        toolbox: &Arc<Toolbox>,
        (text, mut calls): (String, Vec<ToolCall>),
        until: Instant,
    ) -> Result<(), Stop> {
        crate::provider::unique_ids(&self.turns, &mut calls);
        if calls.is_empty() {
            return Err(self.cut("the answer held neither findings nor tool calls"));
        }
        if self.final_turn {
            return Err(
                self.cut("the model called tools on its final turn instead of submitting findings")
            );
        }
        sh.sink.emit(Event::ToolsRunning {
            unit,
            turn: self.figures.turns_used,
            calls: calls.len(),
        });
        let mut results = Vec::with_capacity(calls.len());
        for call in &calls {
            if let Some(halted) = Halted::now(sh, until) {
                return Err(halted.stop(&call.name));
            }
            let answer = self
                .one_call(sh, unit, toolbox, call, until)
                .await
                .map_err(|h| h.stop(&call.name))?;
            self.chars += answer.content.chars().count() + call.arguments.chars().count();
            results.push(ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content: answer.content,
                is_error: answer.is_error,
            });
        }
        self.chars += text.chars().count();
        self.turns.push(Turn::Assistant { text, calls });
        self.turns.push(Turn::Results(results));
        Ok(())
    }

    /// Answers one call within the caps, and says so on the event stream; Err when the
    /// unit's deadline or the review's cancel came first.
    async fn one_call(
        &mut self,
        sh: &Shared<'_>,
        unit: usize,
        toolbox: &Arc<Toolbox>,
        call: &ToolCall,
        until: Instant,
    ) -> Result<ToolAnswer, Halted> {
        let started = Instant::now();
        let key = (call.name.clone(), canonical(&call.arguments));
        let over_calls = self.figures.tool_calls >= self.bounds.max_tool_calls;
        self.figures.tool_calls += 1;
        *self
            .figures
            .calls_by_tool
            .entry(call.name.clone())
            .or_default() += 1;
        let repeat = self.memory.get(&key).cloned();
        if self.last_call.as_ref() == Some(&key) {
            self.repeats_in_a_row += 1;
        } else {
            self.repeats_in_a_row = 0;
        }
        self.last_call = Some(key.clone());
        let mut repeated = false;
        let answer = if over_calls {
            refusal(format!(
                "the unit's tool call cap ({}) is reached: call submit_findings with your findings now",
                self.bounds.max_tool_calls
            ))
        } else if let Some(mut again) = repeat {
            self.figures.repeated_calls += 1;
            repeated = true;
            again.content = format!(
                "(the same call as before; the same result, answered from memory: do not repeat calls)\n{}",
                again.content
            );
            again
        } else if !self.offers(&call.name) {
            refusal(format!(
                "`{}` is not one of the tools offered to this skill",
                crate::text::escape::inline(&call.name.chars().take(64).collect::<String>())
            ))
        } else if self.figures.tool_bytes >= self.bounds.unit_bytes as u64 {
            refusal(format!(
                "the unit's tool result budget ({} bytes) is spent: call submit_findings with your findings now",
                self.bounds.unit_bytes
            ))
        } else {
            let answer = run_tool(sh, toolbox, call, until).await?;
            self.figures.calls.push(CallLog {
                tool: call.name.clone(),
                arguments: call.arguments.clone(),
                hash: answer.hash.clone(),
            });
            self.memory.insert(key, answer.clone());
            answer
        };
        let answer = self.within_unit_bytes(answer);
        self.figures.tool_bytes += answer.bytes() as u64;
        sh.sink.emit(Event::ToolCalled {
            unit,
            turn: self.figures.turns_used,
            tool: call.name.clone(),
            bytes: answer.bytes() as u64,
            error: answer.is_error,
            repeat: repeated,
            duration: started.elapsed(),
        });
        Ok(answer)
    }

    /// The answer, cut so the unit's results stay within `toolBytesPerUnit`; a cut spends
    /// the budget (the next turn is the final one, as the cut note tells the model).
    fn within_unit_bytes(&mut self, mut answer: ToolAnswer) -> ToolAnswer {
        let room = (self.bounds.unit_bytes as u64).saturating_sub(self.figures.tool_bytes) as usize;
        if answer.content.len() > room {
            let mut end = room.saturating_sub(120);
            while !answer.content.is_char_boundary(end) {
                end -= 1;
            }
            answer.content.truncate(end);
            self.bytes_spent = true;
            answer
                .content
                .push_str("\n[cut: the unit's tool result budget is spent; submit your findings]");
        }
        answer
    }

    /// Turns were answered and the next is a new turn (not a retry of a failed one).
    pub(super) fn between_turns(&self) -> bool {
        self.figures.turns_used > 0
    }

    /// A turn was answered (tool calls or findings).
    pub(super) fn answered(&mut self) {
        self.figures.turns_used += 1;
    }

    /// The unit moved to another route: the transcript goes with it.
    pub(super) fn moved(&mut self) {
        if self.figures.turns_used > 0 && self.figures.moved_after_turn.is_none() {
            self.figures.moved_after_turn = Some(self.figures.turns_used);
        }
    }

    /// The loop's figures into the unit's result; a unit that ended without an answer
    /// says which turn its loop reached.
    pub(super) fn close(self, result: &mut UnitResult) {
        let f = &self.figures;
        if result.status != UnitStatus::Reviewed
            && f.turns_used > 0
            && !result.reason.contains("tool loop")
        {
            result.reason = format!(
                "{} (tool loop cut during turn {} of {}, after {} tool call{})",
                result.reason,
                f.turns_used + 1,
                f.turns_allowed,
                f.tool_calls,
                if f.tool_calls == 1 { "" } else { "s" }
            );
        }
        result.tool_loop = Some(self.figures);
    }

    fn offers(&self, name: &str) -> bool {
        Tool::from_name(name).is_some_and(|t| self.offered.contains(&t))
    }

    /// The loop ended without its own answer: never a clean review.
    pub(super) fn cut(&self, why: &str) -> Stop {
        Stop::new(
            UnitStatus::Failed,
            format!(
                "{why} (tool loop cut at turn {} of {}, after {} tool call{})",
                self.figures.turns_used,
                self.figures.turns_allowed,
                self.figures.tool_calls,
                if self.figures.tool_calls == 1 {
                    ""
                } else {
                    "s"
                }
            ),
        )
    }
}

/// The loop of a unit whose skill reads the repository, when the engine has tools.
pub(super) fn start(sh: &Shared, work: &UnitInfo) -> Option<LoopState> {
    sh.engine.toolbox.as_ref()?;
    work.tools
        .as_ref()
        .map(|p| LoopState::new(p, sh.exec.tool_bounds))
}

/// The tool definitions of a loop: the tools offered, then `submit_findings`.
fn specs(tools: &[Tool]) -> Vec<ToolSpec> {
    tools
        .iter()
        .map(|t| t.definition())
        .chain([crate::tools::submit_findings()])
        .map(|d| ToolSpec {
            name: d.name.to_string(),
            description: d.description.to_string(),
            parameters: d.parameters,
        })
        .collect()
}

/// Runs the tool off the async workers (a grep reads files) under the unit's deadline and
/// the review's cancel: whichever comes first raises the call's [`Halt`], so the thread
/// stops at its next file, and the unit goes on without waiting for it. A tool that
/// panicked is an error answer, not a crash.
async fn run_tool(
    sh: &Shared<'_>,
    toolbox: &Arc<Toolbox>,
    call: &ToolCall,
    until: Instant,
) -> Result<ToolAnswer, Halted> {
    let tb = toolbox.clone();
    let (name, args) = (call.name.clone(), call.arguments.clone());
    let halt = Halt::new();
    let h = halt.clone();
    let task = tokio::task::spawn_blocking(move || tb.call_within(&name, &args, &h));
    let done = tokio::select! {
        biased;
        _ = sh.cancel.cancelled() => None,
        _ = tokio::time::sleep_until(until) => None,
        done = task => Some(done),
    };
    match done {
        Some(Ok(answer)) => Ok(answer),
        Some(Err(_)) => Ok(refusal(
            "the tool failed inside warden; try another call".into(),
        )),
        None => {
            halt.raise();
            Err(Halted::now(sh, until).unwrap_or(Halted::Deadline))
        }
    }
}

/// What stopped a unit's tool work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Halted {
    /// The unit's hunk deadline passed.
    Deadline,
    /// The review budget ran out.
    Budget,
    /// A signal interrupted the run.
    Interrupted,
}

impl Halted {
    /// What stops the unit's tools now, if anything.
    fn now(sh: &Shared, until: Instant) -> Option<Halted> {
        if sh.interrupted.is_cancelled() {
            Some(Halted::Interrupted)
        } else if sh.budget_spent(Instant::now()) {
            Some(Halted::Budget)
        } else if Instant::now() >= until {
            Some(Halted::Deadline)
        } else {
            None
        }
    }

    /// The unit's end: tool time is said as tool time (docs/design.md §15), never as time
    /// "during an attempt".
    fn stop(self, tool: &str) -> Stop {
        let tool = crate::text::escape::inline(&tool.chars().take(64).collect::<String>());
        match self {
            Halted::Deadline => Stop::new(
                UnitStatus::TimedOut,
                format!("the hunk budget ran out running tools (`{tool}`)"),
            ),
            Halted::Budget => Stop::new(
                UnitStatus::Cancelled,
                format!("the review budget ran out running tools (`{tool}`)"),
            ),
            Halted::Interrupted => Stop::new(
                UnitStatus::Cancelled,
                format!("interrupted running tools (`{tool}`)"),
            ),
        }
    }
}

fn refusal(content: String) -> ToolAnswer {
    ToolAnswer::error(content)
}

/// Arguments as canonical JSON (keys sorted, no spaces), so `{"a":1, "b":2}` and
/// `{"b": 2, "a": 1}` are one call; text that is not JSON stays as it is.
fn canonical(arguments: &str) -> String {
    serde_json::from_str::<serde_json::Value>(arguments)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| arguments.to_string())
}
