//! One answer, split for the engine: findings come from a `submit_findings` call's
//! arguments or else from the text (the text contract of docs/design.md §9); the other tool
//! calls go back to the unit's loop (issue 29).

use super::classify::Failure;
use super::conversation::{FinishReason, SUBMIT_FINDINGS, ToolCall};
use super::{Attempt, AttemptRequest, Outcome};
use crate::findings::{self, Extracted, NoFindings};

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
    /// The findings complete before a cut (or before the object stopped): kept on a
    /// `bad_response`.
    kept: Option<Extracted>,
    /// The model's words when it refused (OpenAI `refusal`).
    refusal: Option<String>,
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
            kept: None,
            refusal: None,
        }
    }

    /// The answer carried a refusal in the model's words (OpenAI `refusal`).
    pub(crate) fn with_refusal(mut self, refusal: Option<String>) -> Answered {
        self.refusal = refusal.filter(|r| !r.trim().is_empty());
        self
    }

    /// The finished attempt, with this answer's calls, text and finish reason; a
    /// `bad_response` that was cut (or whose object did not end) carries the findings
    /// complete before that point, so that the engine keeps them.
    pub(crate) fn into_attempt(self, mut attempt: Attempt) -> Attempt {
        (attempt.calls, attempt.text, attempt.finish) = (self.calls, self.text, self.finish);
        if attempt.record.outcome == Outcome::BadResponse && attempt.extracted.is_none() {
            attempt.extracted = self.kept;
        }
        attempt
    }

    /// Where the findings object is: a `submit_findings` call's arguments, else the text.
    fn source(&self) -> &str {
        self.submit.as_ref().map_or(&self.text, |s| &s.arguments)
    }

    /// The findings of the answer, read here (the sim's small answers).
    pub(crate) fn findings(
        &mut self,
        req: &AttemptRequest,
        cap: usize,
    ) -> std::result::Result<Option<Extracted>, Failure> {
        let got = extract(self.source(), req.path.as_deref(), req.lines, cap);
        self.judge(got)
    }

    /// The findings of the answer, read on tokio's blocking pool when it is large
    /// (docs/design.md §14): an answer of up to the 8 MiB body cap is read off the async
    /// workers, so it cannot hold up other attempts' clocks or the signal handler. One
    /// under [`INLINE_BYTES`] is read in place: the pass takes well under a millisecond
    /// there, less than handing it to a pool thread (which may first have to be spawned,
    /// on the worker, while other attempts' clocks wait).
    pub(crate) async fn findings_off_workers(
        &mut self,
        req: &AttemptRequest,
        cap: usize,
    ) -> std::result::Result<Option<Extracted>, Failure> {
        if self.source().len() < INLINE_BYTES {
            return self.findings(req, cap);
        }
        let source = self.source().to_string();
        let (path, lines) = (req.path.clone(), req.lines);
        let got =
            tokio::task::spawn_blocking(move || extract(&source, path.as_deref(), lines, cap))
                .await
                .unwrap_or_else(|e| Err(NoFindings::Unfinished(e.to_string())));
        self.judge(got)
    }

    /// What the extraction means for the attempt. A loop turn of calls without a
    /// findings object is a turn (`None`), not a failure. An answer the output cap cut,
    /// or whose object did not end, is never a clean review (docs/design.md §14): a
    /// `bad_response` that keeps its complete findings (see [`Self::into_attempt`]).
    fn judge(
        &mut self,
        got: std::result::Result<Extracted, NoFindings>,
    ) -> std::result::Result<Option<Extracted>, Failure> {
        if let Some(refused) = self.refused() {
            return Err(refused);
        }
        let cut = self.finish.as_ref().is_some_and(FinishReason::is_cut);
        match got {
            Ok(ex) if !cut && ex.incomplete.is_none() => Ok(Some(ex)),
            Ok(ex) => {
                let n = ex.findings.len();
                let why = match (cut, &ex.incomplete) {
                    (false, Some(why)) => why.clone(),
                    _ => CUT.to_string(),
                };
                let s = if n == 1 { "" } else { "s" };
                self.kept = Some(ex);
                let reason = format!("{why}; {n} complete finding{s} kept");
                Err(Failure::new(Outcome::BadResponse, reason))
            }
            Err(_) if self.looping && self.submit.is_none() && !self.calls.is_empty() => Ok(None),
            Err(why) if cut => Err(Failure::new(Outcome::BadResponse, format!("{CUT}; {why}"))),
            Err(why) => Err(Failure::new(Outcome::BadResponse, why.to_string())),
        }
    }
}

impl Answered {
    /// A refusal (docs/design.md §15), whatever else the answer holds: the provider's finish
    /// reason says so, or the model's own refusal text came. Its words are shown (cut
    /// to [`REFUSAL_CHARS`]; outputs escape them), never acted on.
    fn refused(&self) -> Option<Failure> {
        let finish = self.finish.as_ref().filter(|f| f.is_refusal());
        if finish.is_none() && self.refusal.is_none() {
            return None;
        }
        let why = match finish {
            Some(FinishReason::Other(r)) => format!("the model refused (finish reason {r:?})"),
            _ => "the model refused".to_string(),
        };
        let reason = match &self.refusal {
            Some(words) => {
                let words: String = words.chars().take(REFUSAL_CHARS).collect();
                format!("{why}: {words}")
            }
            None => why,
        };
        Some(Failure::new(Outcome::Refused, reason))
    }
}

/// The answer's findings for a unit of `path` (when known: entries naming another file
/// are dropped and counted) in `lines`.
fn extract(
    source: &str,
    path: Option<&str>,
    lines: (u32, u32),
    cap: usize,
) -> std::result::Result<Extracted, NoFindings> {
    match path {
        Some(p) => findings::extract_for(source, p, lines, cap),
        None => findings::extract_capped(source, lines.0, lines.1, cap),
    }
}

/// The most of a model's refusal text a reason quotes.
const REFUSAL_CHARS: usize = 200;

/// Answers shorter than this are read in place (see `findings_off_workers`).
const INLINE_BYTES: usize = 64 * 1024;

/// An attempt's reason when the provider said the output cap cut the answer.
pub(crate) const CUT: &str = "answer cut at the output cap (the provider's finish reason says so)";
