//! Provider clients. One call of [`Provider::attempt`] is one attempt is exactly one HTTP
//! request: no retries anywhere below the engine. Every attempt is measured and
//! classified into the outcome labels of docs/design.md section 8.

mod answered;
mod anthropic;
pub mod attempt;
mod body;
mod body_spec;
pub mod classify;
pub mod conversation;
#[cfg(test)]
mod conversation_tests;
pub(crate) mod http;
mod litellm;
pub mod local;
mod openai;
mod param_fix;
pub mod ratelimit;
mod request;
pub mod secret;
pub mod sim;
mod sim_load;
mod sim_tools;
pub mod sse;
pub(crate) mod tls;
mod tools_off;
pub(crate) mod wire;

pub use attempt::{AttemptRecord, Correction, Outcome, Stage, Usage};
pub use conversation::{
    Conversation, FinishReason, SUBMIT_FINDINGS, ToolCall, ToolChoice, ToolResult, ToolSpec, Turn,
    unique_ids,
};
pub use ratelimit::{RateLimitInfo, Window};
pub use tls::ClientError;
pub use wire::ResponseCaps;

use crate::config::{ProviderKind, Route, Settings};
use crate::error::Result;
use crate::findings::Extracted;
use crate::prompt::Prompt;
use classify::Failure;
use secret::ApiKey;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// The clocks of one attempt (docs/design.md section 4, rule 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// TCP/TLS connect.
    pub connect: Duration,
    /// Time to the first token (streaming) or the answer (not streaming).
    pub first_token: Duration,
    /// The longest wait between tokens.
    pub idle: Duration,
    /// min(request deadline, hunk remaining, review remaining), from the engine.
    pub total: Duration,
}

/// What the engine asks of one attempt.
#[derive(Debug, Clone)]
pub struct AttemptRequest {
    /// The two messages.
    pub prompt: Prompt,
    /// The chunk's new-file lines: findings outside are dropped and counted.
    pub lines: (u32, u32),
    /// The unit's file, when known: findings naming another file are dropped and
    /// counted, never moved onto this one.
    pub path: Option<String>,
    /// The attempt's clocks.
    pub limits: Limits,
    /// A tool loop's tools and transcript after the prompt (issue 29); `None` is the
    /// single-shot review: the two prompt messages only.
    pub conversation: Option<Conversation>,
    /// This attempt's output cap, instead of the route's `maxTokens` (a cut answer is
    /// retried with a larger one).
    pub output_cap: Option<u32>,
}

impl AttemptRequest {
    /// A single-shot request: the prompt alone, the route's output cap.
    pub fn new(prompt: Prompt, lines: (u32, u32), limits: Limits) -> Self {
        AttemptRequest {
            prompt,
            lines,
            path: None,
            limits,
            conversation: None,
            output_cap: None,
        }
    }
}

/// What one attempt produced.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// Everything measured, and how it ended.
    pub record: AttemptRecord,
    /// The findings, when the outcome is `ok` and the answer held them (its text, or a
    /// `submit_findings` call). `None` with an `ok` outcome: a turn of tool calls.
    pub extracted: Option<Extracted>,
    /// The tool calls the model made this turn, other than `submit_findings` (whose
    /// arguments are the findings, in `extracted`); arguments as sent, maybe invalid.
    pub calls: Vec<ToolCall>,
    /// The answer's text (what a transcript's assistant turn sends back).
    pub text: String,
    /// How the provider said the answer ended, when it said.
    pub finish: Option<FinishReason>,
}

impl Attempt {
    /// An attempt with this record and these findings, and no calls.
    pub fn new(record: AttemptRecord, extracted: Option<Extracted>) -> Self {
        Attempt {
            record,
            extracted,
            calls: Vec::new(),
            text: String::new(),
            finish: None,
        }
    }
}

/// One attempt in flight; dropping it cancels the request.
pub type AttemptFuture<'a> = Pin<Box<dyn Future<Output = Attempt> + Send + 'a>>;

/// A route's client. Dropping the returned future cancels the attempt and closes its
/// connection at once.
pub trait Provider: Send + Sync {
    /// The route's name.
    fn route(&self) -> &str;
    /// The provider's name for records and telemetry (`openai`, `anthropic`, `sim`, ...).
    fn kind(&self) -> &'static str;
    /// The model asked for.
    fn model(&self) -> &str;
    /// Makes one attempt: exactly one request, no retry.
    fn attempt<'a>(&'a self, req: &'a AttemptRequest) -> AttemptFuture<'a>;
}

/// Builds a client for every route; reads each route's key (a missing one is an error
/// that names the variable, unless the endpoint is on this machine).
pub fn build_all(settings: &Settings) -> Result<Vec<Arc<dyn Provider>>> {
    settings
        .routes
        .iter()
        .map(|r| build(r, settings.execution.connect_timeout))
        .collect()
}

/// A client for one route (its key read from the variable it names).
pub fn build(route: &Route, connect_timeout: Duration) -> Result<Arc<dyn Provider>> {
    if route.provider == ProviderKind::Sim {
        return Ok(Arc::new(sim::SimProvider::new(route)));
    }
    let key = secret::load(route)?;
    let p = HttpProvider::try_new(route, key, connect_timeout).map_err(|e| {
        crate::error::Error::Route {
            route: route.name.clone(),
            message: e.to_string(),
        }
    })?;
    Ok(Arc::new(p))
}

/// OpenAI-compatible and Anthropic routes over HTTP.
pub struct HttpProvider {
    route: Route,
    url: reqwest::Url,
    key: Option<ApiKey>,
    client: reqwest::Client,
    caps: ResponseCaps,
    /// Set once a dropped rate-limit header was reported: said once per route and run.
    rate_limit_warned: std::sync::atomic::AtomicBool,
    /// Parameters this route dropped or renamed after a 400 named them (this run).
    fixes: std::sync::Mutex<param_fix::Adjustments>,
    /// Set once its model showed it does not call tools (docs/design.md §15).
    tools_off: tools_off::ToolsOff,
}

impl std::fmt::Debug for HttpProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpProvider")
            .field("route", &self.route.name)
            .field("url", &self.url)
            .field("key", &self.key)
            .finish()
    }
}

impl HttpProvider {
    /// A route's client; panics if its TLS roots cannot be set up (a review builds
    /// providers with [`build`], which reports that as an error instead).
    pub fn new(route: &Route, key: Option<ApiKey>, connect_timeout: Duration) -> Self {
        Self::try_new(route, key, connect_timeout)
            .unwrap_or_else(|e| panic!("route `{}`: {e}", route.name))
    }

    /// A route's client, or why its TLS roots cannot be set up.
    pub fn try_new(
        route: &Route,
        key: Option<ApiKey>,
        connect_timeout: Duration,
    ) -> std::result::Result<Self, ClientError> {
        let base = route
            .base_url
            .clone()
            .unwrap_or_else(|| secret::default_base_url(route.provider).to_string());
        let path = if route.provider == ProviderKind::Anthropic {
            "messages"
        } else {
            "chat/completions"
        };
        Ok(HttpProvider {
            url: http::endpoint(&base, path)?,
            client: tls::client(route, &base, connect_timeout)?,
            route: route.clone(),
            key,
            caps: ResponseCaps::default(),
            rate_limit_warned: Default::default(),
            fixes: Default::default(),
            tools_off: Default::default(),
        })
    }

    /// Other caps on what one response may hold (tests raise them to reach the clocks
    /// under a flood; the defaults are what a review uses).
    pub fn with_caps(mut self, caps: ResponseCaps) -> Self {
        self.caps = caps;
        self
    }

    /// The body of one attempt, as it goes on the wire.
    fn body(&self, req: &AttemptRequest, deadline: Duration) -> serde_json::Value {
        let mut body = {
            let fixes = self.fixes.lock().expect("fixes lock");
            request::build(&self.route, req, &fixes)
        };
        if self.route.provider == ProviderKind::LiteLlm {
            litellm::adapt_body(&mut body, deadline);
        }
        body
    }

    fn request(&self, body: &serde_json::Value, deadline: Duration) -> reqwest::Request {
        let r = &self.route;
        let anthropic = r.provider == ProviderKind::Anthropic;
        let litellm = r.provider == ProviderKind::LiteLlm;
        let mut req = self.client.post(self.url.clone()).json(body);
        if litellm {
            for (name, value) in litellm::headers(deadline) {
                req = req.header(name, value);
            }
        }
        if r.stream {
            req = req.header("accept", "text/event-stream");
        }
        if anthropic {
            req = req.header("anthropic-version", anthropic::VERSION);
        }
        let mut key_header = None;
        if let Some(k) = &self.key {
            let (name, value) = if anthropic {
                ("x-api-key", k.expose().to_string())
            } else {
                ("authorization", format!("Bearer {}", k.expose()))
            };
            let mut v = reqwest::header::HeaderValue::from_str(&value)
                .unwrap_or_else(|_| reqwest::header::HeaderValue::from_static("invalid-key"));
            v.set_sensitive(true);
            key_header = Some((name, v));
        }
        let mut built = req.build().expect("request parts are valid");
        // Inserted, not appended: exactly one credential header per request.
        if let Some((name, v)) = key_header {
            built.headers_mut().insert(name, v);
        }
        built
    }

    async fn run(&self, req: &AttemptRequest) -> Attempt {
        let sent = self.tools_off.request(req);
        let req = sent.as_ref();
        let offered = tools_off::offered(req);
        let mut decoder: Box<dyn wire::Decoder> = if self.route.provider == ProviderKind::Anthropic
        {
            Box::<anthropic::AnthropicDecoder>::default()
        } else {
            Box::<openai::OpenAiDecoder>::default()
        };
        let body = self.body(req, req.limits.total);
        let ex = http::exchange(
            &self.client,
            self.request(&body, req.limits.total),
            &req.limits,
            &self.caps,
            self.route.stream,
            decoder.as_mut(),
        )
        .await;
        let mut record = AttemptRecord {
            headers: ex.headers,
            ttft: ex.ttft,
            duration: ex.duration,
            bytes: ex.bytes,
            http_status: ex.status,
            request_id: ex.request_id,
            gateway: ex.gateway,
            rate_limit: ex.rate_limit.map(Box::new),
            ..AttemptRecord::new(
                &self.route.name,
                self.route.provider.as_str(),
                &self.route.model,
                req.limits.total,
            )
        };
        if let Some(w) = ex.rate_limit_warning
            && !self
                .rate_limit_warned
                .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            record.warning = Some(secret::clean(self.key.as_ref(), &w, secret::REASON_CHARS));
        }
        record.first_content = ex.first_content;
        let mut result = ex.result;
        if offered
            && let Err(f) = &mut result
            && matches!(ex.status, Some(400 | 422 | 500 | 501))
            && tools_off::refused_in(&ex.error_body)
        {
            let w = self.tools_off.switch("the server takes no tools");
            self.single_shot_now(&mut record, f, w);
        } else if ex.status == Some(400)
            && let Err(f) = &mut result
        {
            let (correction, warning) = self.correct(&body, &ex.error_body, f);
            record.correction = correction;
            if let Some(w) = warning {
                record.warning = Some(match record.warning.take() {
                    Some(prev) => format!("{prev}; {w}"),
                    None => w,
                });
            }
        }
        let mut turn = answered::Answered::default();
        let mut text_only = false;
        let result = match result {
            Ok(answer) => {
                text_only = answer.calls.is_empty();
                record.model_answered = answer.model.clone();
                record.usage = answer.usage;
                if answer.request_id.is_some() {
                    record.request_id = answer.request_id.clone();
                }
                let finish = answer.finish_reason.as_deref().map(FinishReason::from_wire);
                turn = answered::Answered::new(answer.text, answer.calls, finish, req)
                    .with_refusal(answer.refusal);
                let cap = self.route.max_findings_per_answer;
                turn.findings_off_workers(req, cap).await
            }
            Err(f) => Err(f),
        };
        let mut result = result;
        // A text answer with no findings object to a request that offered tools: the
        // model does not call tools (it would ramble on every turn).
        if offered
            && text_only
            && let Err(f) = &mut result
            && f.outcome == Outcome::BadResponse
        {
            let w = self
                .tools_off
                .switch("the model answered a request with tools in text, without calling one");
            self.single_shot_now(&mut record, f, w);
            turn = answered::Answered::default();
        }
        turn.into_attempt(finish(record, result, self.key.as_ref()))
    }

    /// The attempt is re-sent at once as the single-shot review (docs/design.md §15): no
    /// attempt used, no breaker verdict, the warning once.
    fn single_shot_now(
        &self,
        record: &mut AttemptRecord,
        f: &mut Failure,
        warning: Option<String>,
    ) {
        record.correction = Some(Correction::Adjusted);
        f.reason = format!(
            "{}; re-sent single-shot: the route does not offer tools",
            f.reason
        );
        if let Some(w) = warning {
            record.warning = Some(match record.warning.take() {
                Some(prev) => format!("{prev}; {w}"),
                None => w,
            });
        }
    }
}

impl HttpProvider {
    /// A 400 read for what it asks (docs/design.md §14): a refused parameter is dropped or
    /// renamed for the run (said once) and the attempt re-sent; a prompt too long for the
    /// window is split by the engine. A request with structured output that gets a 400
    /// naming nothing else is taken as a refusal of it: the text contract follows.
    fn correct(
        &self,
        sent: &serde_json::Value,
        error_body: &[u8],
        f: &mut Failure,
    ) -> (Option<Correction>, Option<String>) {
        let anthropic = self.route.provider == ProviderKind::Anthropic;
        let fixes = match param_fix::diagnose(sent, anthropic, error_body) {
            Some(param_fix::Diagnosis::ContextLength { window }) => {
                return (Some(Correction::ContextLength { window }), None);
            }
            Some(param_fix::Diagnosis::Params(p)) => p,
            None => match structured_key(sent, anthropic) {
                Some(k) => vec![(k.to_string(), param_fix::Fix::Drop)],
                None => return (None, None),
            },
        };
        let learned = self.fixes.lock().expect("fixes lock").learn(&fixes);
        let Some(new) = learned else {
            return (None, None);
        };
        let done: Vec<(String, param_fix::Fix)> = fixes.into_iter().collect();
        f.reason = format!(
            "{}; re-sent: the route {}",
            f.reason,
            param_fix::describe(&done)
        );
        let warning = (!new.is_empty()).then(|| {
            format!(
                "the provider refused a request parameter (400): route `{}` {} for the rest of the run; set `params` or `structuredOutput` on the route to choose yourself",
                self.route.name,
                param_fix::describe(&new)
            )
        });
        (Some(Correction::Adjusted), warning)
    }
}

/// The structured-output key a body carries, if any (`response_format`; Anthropic's
/// forced `submit_findings` tool).
fn structured_key(sent: &serde_json::Value, anthropic: bool) -> Option<&'static str> {
    if anthropic {
        let forced = sent["tool_choice"]["name"] == SUBMIT_FINDINGS;
        let single_shot = sent["messages"].as_array().is_some_and(|m| m.len() == 1);
        (forced && single_shot).then_some("tools")
    } else {
        sent.get("response_format").map(|_| "response_format")
    }
}

/// Stamps the result into the record. Everything the provider wrote (reason, request id,
/// model name) has the key redacted and only then is cut to length.
pub(crate) fn finish(
    mut record: AttemptRecord,
    result: std::result::Result<Option<Extracted>, Failure>,
    key: Option<&ApiKey>,
) -> Attempt {
    record.request_id = record
        .request_id
        .map(|id| secret::clean(key, &id, ID_CHARS));
    record.model_answered = record
        .model_answered
        .map(|m| secret::clean(key, &m, ID_CHARS));
    match result {
        Ok(None) => {
            record.outcome = Outcome::Ok;
            record.reason = "a turn of tool calls".into();
            Attempt::new(record, None)
        }
        Ok(Some(extracted)) => {
            record.outcome = Outcome::Ok;
            let dropped = extracted.dropped_count();
            record.reason = match (extracted.findings.len(), dropped) {
                (n, 0) => format!("{n} finding{}", if n == 1 { "" } else { "s" }),
                (n, d) => {
                    format!("{n} findings, {d} dropped (out of range, invalid or of another file)")
                }
            };
            Attempt::new(record, Some(extracted))
        }
        Err(f) => {
            record.outcome = f.outcome;
            record.stage = f.stage;
            record.reason = secret::clean(key, &f.reason, secret::REASON_CHARS);
            record.retry_after = f.retry_after;
            record.backpressure = f.backpressure;
            record.unreachable = f.unreachable;
            Attempt::new(record, None)
        }
    }
}

/// Request ids and model names are cut to this many characters, after redaction.
const ID_CHARS: usize = 128;

impl Provider for HttpProvider {
    fn route(&self) -> &str {
        &self.route.name
    }

    fn kind(&self) -> &'static str {
        self.route.provider.as_str()
    }

    fn model(&self) -> &str {
        &self.route.model
    }

    fn attempt<'a>(&'a self, req: &'a AttemptRequest) -> AttemptFuture<'a> {
        Box::pin(self.run(req))
    }
}
