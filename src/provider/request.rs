//! What goes into one request body, before either protocol's encoder shapes it: the
//! prompt, the conversation (tools and transcript), streaming, and the output cap.

use super::conversation::Conversation;
use crate::prompt::Prompt;

/// The protocol-neutral parts of one request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodySpec<'a> {
    /// The model asked for.
    pub model: &'a str,
    /// The two messages (the shared system block first).
    pub prompt: &'a Prompt,
    /// Tools and the transcript after the prompt; `None` is a single-shot review.
    pub conversation: Option<&'a Conversation>,
    /// Server-sent events.
    pub stream: bool,
    /// The output cap of this attempt (the route's `maxTokens` unless the engine set one).
    pub max_tokens: u32,
}
