//! The protocol-neutral parts of one request: what `request.rs` hands each protocol's
//! encoder (`anthropic.rs`, `openai.rs`), in a file of its own so the encoders do not
//! import the builder that calls them.

use super::conversation::Conversation;
use crate::prompt::Prompt;

/// The protocol-neutral parts of one request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodySpec<'a> {
    /// The model asked for.
    pub(crate) model: &'a str,
    /// The two messages (the shared system block first).
    pub(crate) prompt: &'a Prompt,
    /// Tools and the transcript after the prompt; `None` is a single-shot review.
    pub(crate) conversation: Option<&'a Conversation>,
    /// Server-sent events.
    pub(crate) stream: bool,
    /// The output cap of this attempt (the route's `maxTokens` unless the engine set one).
    pub(crate) max_tokens: u32,
}
