//! Servers the user runs (docs/design.md §15, "Models you run yourself"): before a review, each
//! `llamacpp`, `ollama` and `vllm` route asks its server what the config left open, and
//! takes it: llama.cpp's `/props` (`total_slots` → `maxConcurrency`,
//! `default_generation_settings.n_ctx` → `contextWindow`), Ollama's `POST /api/show`
//! (`num_ctx` among its parameters, else `model_info` `*.context_length`), vLLM's
//! `/v1/models` (`max_model_len`). The output cap is then never the whole window: at most
//! a quarter of it when `maxTokens` was not written, half when it was. A server that does
//! not answer leaves the route as configured, with a note: the review itself says whether
//! the server is there.

use super::secret;
use crate::config::{ProviderKind, Route};
use serde_json::Value;
use std::time::Duration;

/// What a local server said about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Discovered {
    /// Requests it serves at once (llama.cpp's slots).
    pub slots: Option<usize>,
    /// Its context window, tokens.
    pub window: Option<u32>,
}

/// How long the server has to answer one question.
const ASK_TIMEOUT: Duration = Duration::from_secs(5);

/// Reads what the server of every local route says, and applies it (see the module's
/// doc). Returns one line per local route for people (`warden plan`, `-v`).
pub(crate) async fn discover_all(routes: &mut [Route]) -> Vec<String> {
    let mut notes = Vec::new();
    for route in routes.iter_mut().filter(|r| r.provider.is_local()) {
        // Nothing left open (both written): the server is not asked.
        let open = route.from_server.slots || route.from_server.window;
        let asked = if open {
            ask(route).await
        } else {
            Ok(Discovered::default())
        };
        let note = match asked {
            Ok(d) => apply(route, d),
            Err(why) => format!(
                "route `{}` ({}): could not read the server's slots and window ({why}); maxConcurrency {}, maxTokens {} as configured",
                route.name,
                route.provider.as_str(),
                route.max_concurrency,
                route.max_tokens
            ),
        };
        notes.push(note);
    }
    notes
}

/// Takes what the server said where the config left it open; says what the route runs
/// with.
pub fn apply(route: &mut Route, d: Discovered) -> String {
    let from = route.from_server;
    if let Some(n) = d.slots.filter(|_| from.slots) {
        route.max_concurrency = n.clamp(1, crate::config::MAX_CONCURRENCY);
    }
    if let Some(w) = d.window.filter(|_| from.window) {
        route.context_window = Some(w);
    }
    if let Some(w) = route.context_window {
        let most = if from.max_tokens { w / 4 } else { w / 2 };
        route.max_tokens = route.max_tokens.min(most.max(1));
        let ceiling = route
            .max_tokens_ceiling()
            .min((w / 2).max(route.max_tokens));
        route.max_tokens_ceiling = Some(ceiling);
    }
    let said = |known: bool| {
        if known {
            "from the server"
        } else {
            "configured"
        }
    };
    let slots = match d.slots {
        Some(n) => format!("{n} slot{}", if n == 1 { "" } else { "s" }),
        None => "slots not said".into(),
    };
    let window = route
        .context_window
        .map_or("window unknown".to_string(), |w| {
            format!(
                "context window {w} tokens ({})",
                said(from.window && d.window.is_some())
            )
        });
    format!(
        "route `{}` ({}): {slots}, maxConcurrency {} ({}), {window}, maxTokens {}",
        route.name,
        route.provider.as_str(),
        route.max_concurrency,
        said(from.slots && d.slots.is_some()),
        route.max_tokens
    )
}

/// The server's root: the base URL without its `/v1`.
fn root(base: &str) -> &str {
    let b = base.trim_end_matches('/');
    b.strip_suffix("/v1").unwrap_or(b)
}

/// Why a local server's self-description was not read (the route keeps its settings).
#[derive(Debug, thiserror::Error)]
enum AskError {
    /// The route's key cannot be loaded.
    #[error("{0}")]
    Key(String),
    /// No client for the route.
    #[error(transparent)]
    Client(#[from] super::tls::ClientError),
    /// The request failed (the key scrubbed from the reason).
    #[error("{0}")]
    Request(String),
    /// An error status.
    #[error("{0} from the server")]
    Status(reqwest::StatusCode),
    /// A body that is not JSON.
    #[error("not JSON: {0}")]
    NotJson(serde_json::Error),
}

/// Asks the route's server (its key, if it has one, as the route would send it).
async fn ask(route: &Route) -> Result<Discovered, AskError> {
    let base = route
        .base_url
        .clone()
        .unwrap_or_else(|| secret::default_base_url(route.provider).to_string());
    let key = secret::load(route).map_err(|e| AskError::Key(e.to_string()))?;
    let client = super::tls::client(route, &base, ASK_TIMEOUT)?;
    let get = |url: String| {
        let mut r = client.get(url).timeout(ASK_TIMEOUT);
        if let Some(k) = &key {
            r = r.bearer_auth(k.expose());
        }
        r
    };
    let clean =
        |e: reqwest::Error| AskError::Request(secret::clean(key.as_ref(), &e.to_string(), 200));
    let request = match route.provider {
        ProviderKind::LlamaCpp => get(format!("{}/props", root(&base))),
        ProviderKind::Vllm => get(format!("{}/models", base.trim_end_matches('/'))),
        ProviderKind::Ollama => {
            let mut r = client
                .post(format!("{}/api/show", root(&base)))
                .timeout(ASK_TIMEOUT)
                .json(&serde_json::json!({"model": route.model}));
            if let Some(k) = &key {
                r = r.bearer_auth(k.expose());
            }
            r
        }
        _ => return Ok(Discovered::default()),
    };
    let resp = request.send().await.map_err(clean)?;
    let status = resp.status();
    if !status.is_success() {
        return Err(AskError::Status(status));
    }
    let body = capped_body(resp).await.map_err(clean)?;
    let v: Value = serde_json::from_slice(&body).map_err(AskError::NotJson)?;
    Ok(read(route.provider, &route.model, &v))
}

/// The answer's body, up to [`MAX_BODY`] bytes (a server's self-description is small;
/// llama.cpp's `/props` carries its chat template).
async fn capped_body(mut resp: reqwest::Response) -> Result<Vec<u8>, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_BODY {
            body.truncate(MAX_BODY);
            break;
        }
    }
    Ok(body)
}

/// The most of a server's self-description that is read.
const MAX_BODY: usize = 1 << 20;

/// What a server's answer says (its shape per server).
pub fn read(kind: ProviderKind, model: &str, v: &Value) -> Discovered {
    let u32_of = |v: &Value| {
        v.as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n > 0)
    };
    match kind {
        ProviderKind::LlamaCpp => Discovered {
            slots: v["total_slots"]
                .as_u64()
                .filter(|n| *n > 0)
                .map(|n| n as usize),
            window: u32_of(&v["default_generation_settings"]["n_ctx"]),
        },
        ProviderKind::Vllm => {
            let models = v["data"].as_array().map(Vec::as_slice).unwrap_or(&[]);
            let m = models
                .iter()
                .find(|m| m["id"] == model)
                .or_else(|| models.first());
            Discovered {
                slots: None,
                window: m.and_then(|m| u32_of(&m["max_model_len"])),
            }
        }
        ProviderKind::Ollama => {
            // The window the server runs with (`num_ctx`), else the model's own.
            let num_ctx = v["parameters"].as_str().and_then(|p| {
                p.lines().find_map(|l| {
                    let mut w = l.split_whitespace();
                    (w.next() == Some("num_ctx")).then(|| w.next()?.parse::<u32>().ok())?
                })
            });
            let trained = v["model_info"].as_object().and_then(|info| {
                info.iter()
                    .find(|(k, _)| k.ends_with(".context_length"))
                    .and_then(|(_, n)| u32_of(n))
            });
            Discovered {
                slots: None,
                window: num_ctx.or(trained),
            }
        }
        _ => Discovered::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_server_says_its_slots_and_window_its_own_way() {
        let llama = json!({"total_slots": 2, "default_generation_settings": {"n_ctx": 4096}});
        assert_eq!(
            read(ProviderKind::LlamaCpp, "m", &llama),
            Discovered {
                slots: Some(2),
                window: Some(4096)
            }
        );
        let vllm = json!({"object": "list", "data": [
            {"id": "other", "max_model_len": 1000},
            {"id": "Qwen/Qwen2.5-Coder-7B-Instruct", "max_model_len": 32768}]});
        assert_eq!(
            read(ProviderKind::Vllm, "Qwen/Qwen2.5-Coder-7B-Instruct", &vllm).window,
            Some(32768)
        );
        let ollama = json!({"parameters": "stop \"<|im_end|>\"\nnum_ctx 8192",
            "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768}});
        assert_eq!(read(ProviderKind::Ollama, "m", &ollama).window, Some(8192));
        let ollama = json!({"model_info": {"llama.context_length": 131072}});
        assert_eq!(
            read(ProviderKind::Ollama, "m", &ollama).window,
            Some(131072)
        );
        // Nonsense is nothing said.
        let junk = json!({"total_slots": -1, "default_generation_settings": {"n_ctx": "big"}});
        assert_eq!(
            read(ProviderKind::LlamaCpp, "m", &junk),
            Discovered::default()
        );
    }

    #[test]
    fn the_output_cap_is_never_the_whole_window() {
        let mut r = Route::new("l", ProviderKind::LlamaCpp, "m", 4);
        r.from_server = crate::config::FromServer {
            slots: true,
            window: true,
            max_tokens: false,
        };
        r.max_tokens = 4096;
        let note = apply(
            &mut r,
            Discovered {
                slots: Some(1),
                window: Some(4096),
            },
        );
        assert_eq!((r.max_concurrency, r.context_window), (1, Some(4096)));
        assert_eq!(r.max_tokens, 2048, "written: half the window at most");
        assert!(r.max_tokens_ceiling() <= 2048);
        assert!(
            note.contains("1 slot, maxConcurrency 1 (from the server)"),
            "{note}"
        );
        // Not written: a quarter; a written maxConcurrency stays.
        let mut r = Route::new("l", ProviderKind::LlamaCpp, "m", 3);
        r.from_server.window = true;
        r.from_server.max_tokens = true;
        apply(
            &mut r,
            Discovered {
                slots: Some(8),
                window: Some(2048),
            },
        );
        assert_eq!((r.max_concurrency, r.max_tokens), (3, 512));
    }
}
