//! One answer, split for the engine: findings come from a `submit_findings` call's
//! arguments or else from the text (the text contract of DESIGN.md §9); the other tool
//! calls go back to the unit's loop (issue 29).

use super::classify::Failure;
use super::conversation::{FinishReason, SUBMIT_FINDINGS, ToolCall};
use super::{Attempt, AttemptRequest, Outcome};
use crate::findings::{self, Extracted};

/// One answer, split: findings come from a `submit_findings` call or the text; the other
/// calls go back to the engine's loop.
#[derive(Default)]
pub(crate) struct Answered {
    text: String,
    calls: Vec<ToolCall>,
    submit: Option<ToolCall>,
    finish: Option<FinishReason>,
    /// The request carried a conversation (a loop turn may end in calls alone).
    looping: bool,
}

impl Answered {
    /// An answer's text and calls, as the decoder (or the sim) produced them.
    pub(crate) fn new(
        text: String,
        calls: Vec<ToolCall>,
        finish: Option<FinishReason>,
        req: &AttemptRequest,
    ) -> Answered {
        let (mut submit, calls): (Vec<_>, Vec<_>) =
            calls.into_iter().partition(|c| c.name == SUBMIT_FINDINGS);
        Answered {
            text,
            calls,
            submit: (!submit.is_empty()).then(|| submit.swap_remove(0)),
            finish,
            looping: req.conversation.is_some(),
        }
    }

    /// The finished attempt, with this answer's calls, text and finish reason.
    pub(crate) fn into_attempt(self, mut attempt: Attempt) -> Attempt {
        (attempt.calls, attempt.text, attempt.finish) = (self.calls, self.text, self.finish);
        attempt
    }

    /// The findings of the answer: a `submit_findings` call's arguments, else its text.
    /// A loop turn of calls without a findings object is a turn (`None`), not a failure.
    pub(crate) fn findings(
        &self,
        req: &AttemptRequest,
        cap: usize,
    ) -> std::result::Result<Option<Extracted>, Failure> {
        let source = self.submit.as_ref().map_or(&self.text, |s| &s.arguments);
        let (start, end) = req.lines;
        let cut = self.finish.as_ref().is_some_and(FinishReason::is_cut);
        match findings::extract_capped(source, start, end, cap) {
            Ok(ex) if !cut && ex.incomplete.is_none() => Ok(Some(ex)),
            // DESIGN.md §14: a cut or an object that did not end is never a clean review.
            Ok(ex) => {
                let why = ex
                    .incomplete
                    .unwrap_or_else(|| "its findings object closed".into());
                Err(Failure::new(
                    Outcome::BadResponse,
                    if cut {
                        format!("answer cut off at max_tokens; {why}")
                    } else {
                        why
                    },
                ))
            }
            Err(_) if self.looping && self.submit.is_none() && !self.calls.is_empty() => Ok(None),
            Err(why) => {
                let why = if self.finish.as_ref().is_some_and(FinishReason::is_cut) {
                    format!("answer cut off at max_tokens; {why}")
                } else {
                    why
                };
                Err(Failure::new(Outcome::BadResponse, why))
            }
        }
    }
}
