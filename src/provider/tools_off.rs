//! A model that does not call tools (docs/design.md §15): it answers a request that offers
//! tools in text with no findings object (small local models ramble to the cap), or its
//! server says with an error that it takes no tools. Either way the route reviews
//! single-shot for the rest of the run: every later request of a tool loop goes out as
//! the single-shot review (the prompt alone, with structured output where the route has
//! it), said once as a warning. The attempt that showed it is re-sent at once as such,
//! using no attempt and giving no breaker verdict, so no turn is wasted on it again.

use super::AttemptRequest;
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};

/// One route's state: whether it has stopped offering tools this run.
#[derive(Debug, Default)]
pub(crate) struct ToolsOff {
    off: AtomicBool,
}

impl ToolsOff {
    /// The request as this route sends it: a tool loop's turn becomes the single-shot
    /// review once the route stopped offering tools.
    pub(crate) fn request<'a>(&self, req: &'a AttemptRequest) -> Cow<'a, AttemptRequest> {
        if self.off.load(Ordering::SeqCst) && req.conversation.is_some() {
            Cow::Owned(AttemptRequest {
                conversation: None,
                ..req.clone()
            })
        } else {
            Cow::Borrowed(req)
        }
    }

    /// The route stops offering tools; the warning, the first time only (its route is
    /// named by the event that carries it, so the text does not repeat it).
    pub(crate) fn switch(&self, why: &str) -> Option<String> {
        (!self.off.swap(true, Ordering::SeqCst)).then(|| {
            format!(
                "{why}: it reviews single-shot (one request per unit, no tools) for the rest of the run"
            )
        })
    }
}

/// Whether the request offers the model tools it may call (not the final turn, whose
/// tools are off).
pub(crate) fn offered(req: &AttemptRequest) -> bool {
    req.conversation
        .as_ref()
        .is_some_and(|c| !c.tools.is_empty() && c.choice != super::ToolChoice::None)
}

/// Whether an error body says the model or server takes no tools: Ollama's "does not
/// support tools", vLLM's "auto" tool choice that needs `--enable-auto-tool-choice`,
/// llama.cpp's "tools param requires --jinja flag", and the usual words of gateways.
pub(crate) fn refused_in(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(&body[..body.len().min(8192)]).to_ascii_lowercase();
    [
        "does not support tools",
        "tools are not supported",
        "tool use is not supported",
        "tool calling is not supported",
        "does not support function calling",
        "function calling is not supported",
        "enable-auto-tool-choice",
        "tools param requires --jinja",
    ]
    .iter()
    .any(|w| text.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_words_for_no_tools() {
        for body in [
            r#"{"error":{"message":"gemma2:2b does not support tools","type":"api_error"}}"#,
            r#"{"object":"error","message":"\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set","type":"BadRequestError","code":400}"#,
            r#"{"error":{"code":500,"message":"tools param requires --jinja flag","type":"server_error"}}"#,
        ] {
            assert!(refused_in(body.as_bytes()), "{body}");
        }
        for body in [
            r#"{"error":{"message":"Unsupported parameter: 'temperature'"}}"#,
            r#"{"error":{"message":"request (5010 tokens) exceeds the available context size (4096 tokens)"}}"#,
        ] {
            assert!(!refused_in(body.as_bytes()), "{body}");
        }
    }
}
