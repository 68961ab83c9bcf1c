//! A fault-injecting fake model provider: real HTTP/1.1 on 127.0.0.1 (port 0), both
//! protocols (OpenAI chat completions, Anthropic messages), streaming and not. Tests
//! script behaviours per model name as a sequence (the last one repeats) and read back
//! every request: when it came, its model and headers, and whether and when the client
//! hung up. Hand-written on tokio so that every byte, pause and close is under control.

#![allow(dead_code)]

// Child modules by path, so that the benches that include this file get them too.
#[path = "fake_agent.rs"]
pub mod fake_agent;
#[path = "fake_models.rs"]
pub mod fake_models;
#[path = "fake_refusal.rs"]
pub mod fake_refusal;
#[path = "fake_tools.rs"]
pub mod fake_tools;
#[path = "fake_wire.rs"]
pub mod fake_wire;

use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

/// The write side of a connection, plain or TLS.
type Writer = dyn AsyncWrite + Unpin + Send;

/// What the fake does with one request.
#[derive(Debug, Clone)]
pub enum Behavior {
    /// A normal 200 answer whose text is given (see [`findings_answer`]).
    Answer(String),
    /// Wait before sending any header, then behave as the inner behaviour.
    DelayHeaders(Duration, Box<Behavior>),
    /// Accept and never answer.
    Hang,
    /// Send 200 headers, then nothing.
    HeadersThenHang,
    /// Send the first (role-only / message_start) chunk, then nothing.
    FirstChunkThenHang,
    /// Send keep-alives (`: OPENROUTER PROCESSING` or `ping` events; spaces when not
    /// streaming) at this interval, forever, and never a token.
    KeepAlivesForever(Duration),
    /// Send one content token, then keep-alives at this interval forever.
    TokenThenKeepAlives(Duration),
    /// Send `count` content tokens, one every `every`, then finish normally.
    DripTokens { every: Duration, count: usize },
    /// Any status, with extra headers (e.g. retry-after) and a body.
    Status {
        code: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// 200 with a body that is not the protocol's JSON.
    Garbage,
    /// Some tokens, then the connection closes without the terminator.
    Truncated,
    /// Some tokens, then an error inside the 200 stream.
    MidStreamError,
    /// Some tokens, then an error with this message inside the 200 stream.
    MidStreamErrorWith(String),
    /// 200 (an event stream when streaming), then 64 KiB writes without a newline, as
    /// fast as the client reads, forever.
    Flood,
    /// 200 event stream of well-formed content deltas, as fast as the client reads,
    /// forever: every event is progress, so only the total deadline or a cap ends it.
    FloodEvents,
    /// 200 event stream, then these bytes over and over, as fast as the client reads.
    FloodWith(&'static str),
    /// A whole JSON completion (`application/json`), even to a streaming request: a
    /// gateway that ignores `stream: true`.
    WholeAnswer(String),
    /// 200 `text/html` with an error page, streaming or not.
    Html,
    /// The normal streamed answer with every `\n` written as this line end.
    LineEnds(String, &'static str),
    /// 200 (an event stream when streaming), then exactly these bytes, then close: an
    /// error as the answer's first event, or as its whole body.
    OkThen(String),
    /// A status with these headers and no length, then a body that never ends: one
    /// byte of an error document every `every` (a slow gateway, or a slowloris).
    StatusTrickle {
        code: u16,
        headers: Vec<(String, String)>,
        every: Duration,
    },
    /// A status with these headers, then a body of `bytes` bytes (an error document
    /// padded with spaces), as fast as the client reads.
    StatusHuge {
        code: u16,
        headers: Vec<(String, String)>,
        bytes: usize,
    },
    /// A 200 answer made of these tool calls (name, raw arguments JSON), in the request's
    /// protocol, streamed or not; several are parallel calls (see `fake_tools.rs`).
    ToolCalls(Vec<fake_tools::Call>),
    /// A 200 answer with this text that the provider says was cut by the token cap
    /// (OpenAI `finish_reason: "length"`, Anthropic `stop_reason: "max_tokens"`).
    Cut(String),
    /// A tool-call answer the provider says was cut by the token cap: a forced tool's
    /// call whose arguments end where the cap cut them (what `Cut` becomes under a forced
    /// `submit_findings`, as the real APIs answer a forced tool).
    CutCalls(Vec<fake_tools::Call>),
    /// Answer as a small agent in a tool loop, from what the request holds (see
    /// `fake_agent.rs`): read the file under review, then submit.
    Agent,
    /// Streamed: `count` reasoning deltas one every `every` (no content), then this
    /// answer; not streamed: the answer after `count × every` (hidden reasoning).
    Reasoning {
        dialect: fake_models::Dialect,
        every: Duration,
        count: usize,
        answer: String,
    },
    /// A safety refusal in the request's protocol, streamed or not (see
    /// `fake_refusal.rs`).
    Refusal(fake_refusal::Refusal),
}

impl Behavior {
    pub fn status(code: u16) -> Behavior {
        Behavior::Status {
            code,
            headers: vec![],
            body: json!({"error": {"message": format!("fake status {code}"), "type": "fake"}})
                .to_string(),
        }
    }

    pub fn status_with(code: u16, headers: &[(&str, &str)], body: &str) -> Behavior {
        Behavior::Status {
            code,
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: body.to_string(),
        }
    }
}

/// A model answer with these findings, in the JSON contract.
pub fn findings_answer(findings: Value) -> String {
    format!(
        "Here is my review.\n```json\n{}\n```",
        json!({ "findings": findings })
    )
}

/// One finding at `line`.
pub fn finding(line: u32, severity: &str, title: &str) -> Value {
    json!({"severity": severity, "confidence": "high", "title": title, "description": "fake finding", "line": line})
}

/// For verification tests: a review answer with a real bug (line 11) and a false alarm
/// (line 12), and the verification answer that keeps only the real bug.
pub fn real_bug_and_false_alarm() -> (String, String) {
    let two = findings_answer(json!([
        finding(11, "high", "Real bug"),
        finding(12, "high", "False alarm")
    ]));
    let confirmed = findings_answer(json!([finding(11, "high", "Real bug")]));
    (two, confirmed)
}

/// What reached the wire for one request.
#[derive(Debug, Clone)]
pub struct Record {
    pub at: Instant,
    pub path: String,
    pub model: String,
    pub stream: bool,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    /// When the client closed the connection before the fake finished its answer.
    pub hung_up_at: Option<Instant>,
    /// When the fake finished writing its answer (and closed the connection).
    pub finished_at: Option<Instant>,
    /// Answered 429 by the fake's [`Capacity`] (not by a script).
    pub refused: bool,
}

impl Record {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether the connection is closed (by either side).
    pub fn closed(&self) -> bool {
        self.hung_up_at.is_some() || self.finished_at.is_some()
    }
}

#[derive(Default)]
struct State {
    scripts: HashMap<String, VecDeque<Behavior>>,
    default: Option<Behavior>,
    log: Vec<Record>,
    /// Requests being answered now (read, and the connection not yet closed).
    in_flight: usize,
    /// The most requests in flight at once so far.
    max_in_flight: usize,
    /// Headers every 200 answer carries (rate-limit headers, for instance).
    answer_headers: Vec<(String, String)>,
    /// A server-wide capacity (see [`Capacity`]).
    capacity: Capacity,
    /// Paced: when the current one-second window started, and requests served in it.
    window: Option<(Instant, u64)>,
    /// Decides a request's behaviour from its body, before any script (see
    /// [`FakeProvider::respond_with`]); None from it falls through to the scripts.
    responder: Option<Responder>,
    /// Top-level request fields answered with a 400 naming them (see `fake_models.rs`).
    refused_params: Vec<String>,
    /// Prompt tokens an answer's usage reports as cached reads, when its prefix was
    /// cached (see [`FakeProvider::report_cached`]).
    cached_tokens: Option<u64>,
    /// The prompt prefixes seen so far (the provider's prompt cache).
    prefixes: std::collections::HashSet<String>,
    /// The cost a gateway's usage reports (OpenAI itself reports none).
    cost: Option<f64>,
    /// Plays a server that ignores `tool_choice` (a hostile or loose compatible one).
    ignores_tool_choice: bool,
    /// How the tool calls the fake sends are named.
    call_ids: fake_wire::CallIds,
}

/// A behaviour chosen from the request's JSON body.
pub type Responder = Arc<dyn Fn(&Value) -> Option<Behavior> + Send + Sync>;

/// How much the fake serves before it says "not now" (429, whatever the script says).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum Capacity {
    /// Everything.
    #[default]
    Unlimited,
    /// At most n requests in flight; one beyond gets 429 with `Retry-After: 1`.
    Limited(usize),
    /// n requests per one-second window, announced OpenAI-style on every answer
    /// (`x-ratelimit-limit-requests`, `-remaining-requests`, `-reset-requests` like
    /// `200ms`); one beyond gets 429 with the same headers.
    Paced(u64),
}

/// Whether a request is served, and the headers it carries (rate-limit ones).
fn admit(st: &mut State, now: Instant) -> (bool, Vec<(String, String)>) {
    match st.capacity {
        Capacity::Unlimited => (true, vec![]),
        Capacity::Limited(n) if st.in_flight < n => (true, vec![]),
        Capacity::Limited(_) => (false, vec![("retry-after".into(), "1".into())]),
        Capacity::Paced(rps) => {
            let (start, used) = match st.window {
                Some((start, used)) if now.duration_since(start) < Duration::from_secs(1) => {
                    (start, used)
                }
                _ => (now, 0),
            };
            let served = used < rps;
            let used = used + u64::from(served);
            st.window = Some((start, used));
            let reset = Duration::from_secs(1).saturating_sub(now.duration_since(start));
            let headers = vec![
                ("x-ratelimit-limit-requests".into(), rps.to_string()),
                (
                    "x-ratelimit-remaining-requests".into(),
                    (rps - used).to_string(),
                ),
                (
                    "x-ratelimit-reset-requests".into(),
                    format!("{}ms", reset.as_millis().max(1)),
                ),
            ];
            (served, headers)
        }
    }
}

/// Counts a request in flight until it is dropped (answered, or the client hung up).
struct InFlight(Arc<Mutex<State>>);

impl InFlight {
    /// Takes over a request already counted (at its admission).
    fn counted(state: &Arc<Mutex<State>>) -> InFlight {
        InFlight(state.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.lock().unwrap().in_flight -= 1;
    }
}

pub struct FakeProvider {
    addr: std::net::SocketAddr,
    state: Arc<Mutex<State>>,
    tls: bool,
    _runtime: tokio::runtime::Runtime,
}

impl FakeProvider {
    /// Starts the fake on its own runtime; by default every model answers with no findings.
    pub fn start() -> FakeProvider {
        Self::start_with(None)
    }

    /// Starts the fake behind TLS with this server configuration (`https://` base URL).
    pub fn start_tls(config: Arc<tokio_rustls::rustls::ServerConfig>) -> FakeProvider {
        Self::start_with(Some(tokio_rustls::TlsAcceptor::from(config)))
    }

    fn start_with(tls: Option<tokio_rustls::TlsAcceptor>) -> FakeProvider {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let listener = runtime
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State::default()));
        let st = state.clone();
        let is_tls = tls.is_some();
        runtime.spawn(async move {
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    continue;
                };
                let _ = sock.set_nodelay(true);
                let st = st.clone();
                match tls.clone() {
                    None => {
                        tokio::spawn(handle(sock, st));
                    }
                    Some(acceptor) => {
                        // A client that refuses the certificate ends here: no request.
                        tokio::spawn(async move {
                            if let Ok(tls) = acceptor.accept(sock).await {
                                handle(tls, st).await;
                            }
                        });
                    }
                }
            }
        });
        FakeProvider {
            addr,
            state,
            tls: is_tls,
            _runtime: runtime,
        }
    }

    /// `http://127.0.0.1:PORT/v1` (`https://` when started with TLS), for a route's
    /// `baseUrl`.
    pub fn base_url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}/v1", self.addr)
    }

    pub fn addr(&self) -> std::net::SocketAddr {
        self.addr
    }

    /// Requests for `model` get these behaviours in turn; the last one repeats.
    pub fn script(&self, model: &str, seq: Vec<Behavior>) -> &Self {
        self.state
            .lock()
            .unwrap()
            .scripts
            .insert(model.to_string(), seq.into());
        self
    }

    /// Headers every 200 answer carries from now on (error statuses carry their own).
    pub fn answer_headers(&self, headers: &[(&str, &str)]) -> &Self {
        self.state.lock().unwrap().answer_headers = headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self
    }

    /// Serves at most `n` requests at once; beyond, 429 with `Retry-After: 1`.
    pub fn limited(&self, n: usize) -> &Self {
        self.state.lock().unwrap().capacity = Capacity::Limited(n);
        self
    }

    /// Serves `rps` requests per second and says so in OpenAI's headers; beyond, 429.
    pub fn paced(&self, rps: u64) -> &Self {
        self.state.lock().unwrap().capacity = Capacity::Paced(rps);
        self
    }

    /// Every served request's behaviour is first asked of `f` (by its body): an oracle
    /// that answers by what the prompt holds (`support::oracle`).
    pub fn respond_with(&self, f: Responder) -> &Self {
        self.state.lock().unwrap().responder = Some(f);
        self
    }

    /// Requests carrying any of these top-level fields get the protocol's 400 naming it.
    pub fn refuse_params(&self, params: &[&str]) -> &Self {
        self.state.lock().unwrap().refused_params = params.iter().map(|p| p.to_string()).collect();
        self
    }

    /// The provider caches prompt prefixes, as the real ones do: a request whose prefix
    /// (system block and tools) an earlier request sent reports `n` prompt tokens read
    /// from the cache; OpenAI caches every prefix, Anthropic only at a `cache_control`
    /// breakpoint (and reports the first request's write). Without this, nothing is cached.
    pub fn report_cached(&self, n: u64) -> &Self {
        self.state.lock().unwrap().cached_tokens = Some(n);
        self
    }

    /// Usage reports this cost, as a gateway does (OpenRouter, LiteLLM); OpenAI reports
    /// none, and neither does the fake unless asked.
    pub fn report_cost(&self, usd: f64) -> &Self {
        self.state.lock().unwrap().cost = Some(usd);
        self
    }

    /// Plays a server that ignores `tool_choice` (the real APIs honour it): scripted
    /// calls are sent as they are, whatever the request forces.
    pub fn ignore_tool_choice(&self) -> &Self {
        self.state.lock().unwrap().ignores_tool_choice = true;
        self
    }

    /// Names the tool calls the fake sends this way from now on.
    pub fn call_ids(&self, ids: fake_wire::CallIds) -> &Self {
        self.state.lock().unwrap().call_ids = ids;
        self
    }

    /// Requests the fake's capacity answered 429.
    pub fn refused(&self) -> usize {
        self.requests().iter().filter(|r| r.refused).count()
    }

    /// Behaviour for models without a script.
    pub fn default_behavior(&self, b: Behavior) -> &Self {
        self.state.lock().unwrap().default = Some(b);
        self
    }

    pub fn requests(&self) -> Vec<Record> {
        self.state.lock().unwrap().log.clone()
    }

    /// The most requests (any model) the fake was answering at once so far.
    pub fn max_in_flight(&self) -> usize {
        self.state.lock().unwrap().max_in_flight
    }

    /// Requests (any model) being answered now.
    pub fn in_flight(&self) -> usize {
        self.state.lock().unwrap().in_flight
    }

    pub fn requests_for(&self, model: &str) -> Vec<Record> {
        self.requests()
            .into_iter()
            .filter(|r| r.model == model)
            .collect()
    }

    /// Waits (bounded) until every connection is closed; returns the records.
    pub fn wait_all_closed(&self, within: Duration) -> Vec<Record> {
        let until = Instant::now() + within;
        loop {
            let reqs = self.requests();
            if reqs.iter().all(Record::closed) || Instant::now() >= until {
                return reqs;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

fn next_behavior(state: &Mutex<State>, model: &str) -> Behavior {
    let mut st = state.lock().unwrap();
    let default = st.default.clone();
    match st.scripts.get_mut(model) {
        Some(q) if q.len() > 1 => q.pop_front().unwrap(),
        Some(q) if q.len() == 1 => q[0].clone(),
        _ => default.unwrap_or_else(|| Behavior::Answer(findings_answer(json!([])))),
    }
}

struct Request {
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

async fn read_request(sock: &mut (impl AsyncRead + Unpin)) -> Option<Request> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let head_end = loop {
        let n = sock.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let path = lines.next()?.split(' ').nth(1)?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < len {
        let n = sock.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&tmp[..n]);
    }
    Some(Request {
        path,
        headers,
        body,
    })
}

async fn handle(
    sock: impl AsyncRead + AsyncWrite + Unpin + Send + 'static,
    state: Arc<Mutex<State>>,
) {
    let (mut rd, mut wr) = tokio::io::split(sock);
    let Some(req) = read_request(&mut rd).await else {
        return;
    };
    let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let model = body["model"].as_str().unwrap_or("").to_string();
    let stream = body["stream"].as_bool().unwrap_or(false);
    let anthropic = req.path.ends_with("/messages");
    let (index, served, mut capacity_headers) = {
        let mut st = state.lock().unwrap();
        let (served, headers) = admit(&mut st, Instant::now());
        // Counted in flight under the same lock as the admission, as a server counts its
        // slots: two requests arriving together cannot both take the last one.
        st.in_flight += 1;
        st.max_in_flight = st.max_in_flight.max(st.in_flight);
        st.log.push(Record {
            at: Instant::now(),
            path: req.path.clone(),
            model: model.clone(),
            stream,
            headers: req.headers.clone(),
            body: body.clone(),
            hung_up_at: None,
            finished_at: None,
            refused: !served,
        });
        (st.log.len() - 1, served, headers)
    };
    let responder = state.lock().unwrap().responder.clone();
    let refused = state.lock().unwrap().refused_params.clone();
    let behavior = if let Some((code, body)) =
        fake_models::refusal(anthropic, &model, &body, &refused)
            .or_else(|| fake_wire::refusal(anthropic, &body))
            .filter(|_| served)
    {
        Behavior::Status {
            code,
            headers: vec![],
            body,
        }
    } else if served {
        let b = responder
            .and_then(|f| f(&body))
            .unwrap_or_else(|| next_behavior(&state, &model));
        match b {
            Behavior::Agent => fake_agent::respond(&body, anthropic),
            b => b,
        }
    } else {
        let body = json!({"error": {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}});
        Behavior::Status {
            code: 429,
            headers: std::mem::take(&mut capacity_headers),
            body: body.to_string(),
        }
    };
    let mut extra = state.lock().unwrap().answer_headers.clone();
    extra.append(&mut capacity_headers);
    let _in_flight = InFlight::counted(&state);
    let hangup = async {
        let mut b = [0u8; 64];
        loop {
            match rd.read(&mut b).await {
                Ok(0) | Err(_) => return Instant::now(),
                Ok(_) => {}
            }
        }
    };
    let behavior = if state.lock().unwrap().ignores_tool_choice {
        behavior
    } else {
        fake_wire::honour_tool_choice(&body, anthropic, behavior)
    };
    let (ids, cache, cost) = {
        let mut st = state.lock().unwrap();
        let n = st.cached_tokens;
        let cache = fake_wire::cache_use(&mut st.prefixes, n, &body, anthropic);
        (st.call_ids, cache, st.cost)
    };
    let w = Wire {
        ids,
        cache,
        cost,
        usage_chunk: fake_wire::wants_usage_chunk(&body),
        anthropic,
        stream,
        model,
        extra,
    };
    tokio::select! {
        at = hangup => {
            state.lock().unwrap().log[index].hung_up_at = Some(at);
        }
        _ = w.play(&behavior, &mut wr) => {
            let _ = wr.shutdown().await;
            state.lock().unwrap().log[index].finished_at = Some(Instant::now());
        }
    }
}

struct Wire {
    /// How tool calls are named.
    ids: fake_wire::CallIds,
    /// What the answer's usage says of the prompt cache.
    cache: fake_models::CacheUse,
    /// The cost the usage reports (a gateway's), if any.
    cost: Option<f64>,
    /// OpenAI streamed: the usage chunk is sent only when `stream_options.include_usage`.
    usage_chunk: bool,
    anthropic: bool,
    stream: bool,
    model: String,
    /// Headers added to every 200 answer.
    extra: Vec<(String, String)>,
}

const FOREVER: Duration = Duration::from_secs(3600);

impl Wire {
    async fn play(&self, b: &Behavior, wr: &mut Writer) {
        match b {
            Behavior::DelayHeaders(d, inner) => {
                tokio::time::sleep(*d).await;
                Box::pin(self.play(inner, wr)).await;
            }
            Behavior::Hang => tokio::time::sleep(FOREVER).await,
            Behavior::Status {
                code,
                headers,
                body,
            } => {
                let mut head = format!(
                    "HTTP/1.1 {code} Fake\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\nx-request-id: req-fake\r\n",
                    body.len()
                );
                for (k, v) in headers {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
                head.push_str("\r\n");
                let _ = wr.write_all(head.as_bytes()).await;
                let _ = wr.write_all(body.as_bytes()).await;
            }
            Behavior::StatusTrickle {
                code,
                headers,
                every,
            } => {
                let mut head = format!(
                    "HTTP/1.1 {code} Fake\r\ncontent-type: application/json\r\nconnection: close\r\n"
                );
                for (k, v) in headers {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
                head.push_str("\r\n");
                if wr.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let doc = br#"{"error": {"message": "slow down", "type": "rate_limit_error"}}"#;
                for b in doc.iter().chain(std::iter::repeat(&b' ')) {
                    tokio::time::sleep(*every).await;
                    if wr.write_all(&[*b]).await.is_err() || wr.flush().await.is_err() {
                        return;
                    }
                }
            }
            Behavior::StatusHuge {
                code,
                headers,
                bytes,
            } => {
                let doc = r#"{"error": {"message": "slow down", "type": "rate_limit_error"}}"#;
                let mut head = format!(
                    "HTTP/1.1 {code} Fake\r\ncontent-type: application/json\r\ncontent-length: {bytes}\r\nconnection: close\r\n"
                );
                for (k, v) in headers {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
                head.push_str("\r\n");
                if wr.write_all(head.as_bytes()).await.is_err()
                    || wr.write_all(doc.as_bytes()).await.is_err()
                {
                    return;
                }
                let pad = vec![b' '; 64 * 1024];
                let mut left = bytes.saturating_sub(doc.len());
                while left > 0 {
                    let n = left.min(pad.len());
                    if wr.write_all(&pad[..n]).await.is_err() {
                        return;
                    }
                    left -= n;
                }
            }
            Behavior::Garbage => {
                let body = if self.stream {
                    "data: {not json\n\n"
                } else {
                    "<html>bad gateway page</html>"
                };
                self.ok_headers(wr, Some(body.len())).await;
                let _ = wr.write_all(body.as_bytes()).await;
            }
            Behavior::Answer(text) => self.answer(wr, text, None).await,
            // Resolved against the request in `handle`; unresolved, an empty review.
            Behavior::Agent => {
                let text = findings_answer(json!([]));
                self.answer(wr, &text, None).await
            }
            Behavior::Reasoning {
                dialect,
                every,
                count,
                answer,
            } => {
                if !self.stream {
                    tokio::time::sleep(every.saturating_mul(*count as u32)).await;
                    return self.answer(wr, answer, None).await;
                }
                self.ok_headers(wr, None).await;
                let _ = wr.write_all(self.first_chunk().as_bytes()).await;
                let step = fake_models::reasoning_delta(self.anthropic, *dialect, &self.model);
                for _ in 0..*count {
                    tokio::time::sleep(*every).await;
                    if wr.write_all(step.as_bytes()).await.is_err() {
                        return;
                    }
                }
                let _ = wr.write_all(self.delta(answer).as_bytes()).await;
                let _ = wr.write_all(self.end().as_bytes()).await;
            }
            Behavior::ToolCalls(calls) => {
                let body = if self.stream {
                    let usage = (self.anthropic || self.usage_chunk).then(|| self.usage(1));
                    fake_tools::stream(self.anthropic, &self.model, calls, self.ids, usage)
                } else {
                    fake_tools::body(self.anthropic, &self.model, calls, self.ids, self.usage(42))
                };
                self.ok_headers(wr, (!self.stream).then_some(body.len()))
                    .await;
                let _ = wr.write_all(body.as_bytes()).await;
            }
            Behavior::CutCalls(calls) => {
                let body = if self.stream {
                    let usage = (self.anthropic || self.usage_chunk).then(|| self.usage(1));
                    fake_tools::stream(self.anthropic, &self.model, calls, self.ids, usage)
                } else if self.anthropic {
                    // Anthropic's whole answer carries `input` as an object, and a cut one
                    // cannot be parsed: the strictest reading, nothing of it survives.
                    let empty: Vec<_> = calls
                        .iter()
                        .map(|(n, _)| (n.clone(), "{}".into()))
                        .collect();
                    fake_tools::body(true, &self.model, &empty, self.ids, self.usage(42))
                } else {
                    fake_tools::body(false, &self.model, calls, self.ids, self.usage(42))
                };
                let body = if self.anthropic {
                    body.replace(
                        r#""stop_reason":"tool_use""#,
                        r#""stop_reason":"max_tokens""#,
                    )
                } else {
                    body.replace(
                        r#""finish_reason":"tool_calls""#,
                        r#""finish_reason":"length""#,
                    )
                };
                self.ok_headers(wr, (!self.stream).then_some(body.len()))
                    .await;
                let _ = wr.write_all(body.as_bytes()).await;
            }
            Behavior::Flood => {
                self.ok_headers(wr, None).await;
                let chunk = vec![b'x'; 64 * 1024];
                while wr.write_all(&chunk).await.is_ok() {}
            }
            Behavior::FloodEvents => {
                self.ok_headers(wr, None).await;
                let _ = wr.write_all(self.first_chunk().as_bytes()).await;
                let one = self.delta("x");
                let chunk = one.repeat((64 * 1024) / one.len());
                while wr.write_all(chunk.as_bytes()).await.is_ok() {}
            }
            Behavior::FloodWith(piece) => {
                self.ok_headers(wr, None).await;
                let chunk = piece.repeat((64 * 1024) / piece.len().max(1) + 1);
                while wr.write_all(chunk.as_bytes()).await.is_ok() {}
            }
            Behavior::WholeAnswer(text) => {
                let body = self.full_body(text);
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = wr.write_all(head.as_bytes()).await;
                let _ = wr.write_all(body.as_bytes()).await;
            }
            Behavior::OkThen(bytes) => {
                self.ok_headers(wr, None).await;
                let _ = wr.write_all(bytes.as_bytes()).await;
            }
            Behavior::Html => {
                let body = "<html><body><h1>502 Bad Gateway</h1></body></html>\n";
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = wr.write_all(head.as_bytes()).await;
                let _ = wr.write_all(body.as_bytes()).await;
            }
            Behavior::LineEnds(text, end) => {
                self.ok_headers(wr, None).await;
                let stream = format!("{}{}{}", self.first_chunk(), self.delta(text), self.end());
                let _ = wr.write_all(stream.replace('\n', end).as_bytes()).await;
            }
            Behavior::Refusal(r) => {
                let body = fake_refusal::answer(r, self.anthropic, self.stream, &self.model);
                self.ok_headers(wr, (!self.stream).then_some(body.len()))
                    .await;
                let _ = wr.write_all(body.as_bytes()).await;
            }
            Behavior::Cut(text) => {
                let body = if self.stream {
                    format!("{}{}{}", self.first_chunk(), self.delta(text), self.end())
                } else {
                    self.full_body(text)
                };
                let body = cut_at_the_cap(&body, self.anthropic);
                self.ok_headers(wr, (!self.stream).then_some(body.len()))
                    .await;
                let _ = wr.write_all(body.as_bytes()).await;
            }
            Behavior::DripTokens { every, count } => {
                let text = findings_answer(json!([]));
                self.answer(wr, &text, Some((*every, *count))).await
            }
            Behavior::HeadersThenHang => {
                self.ok_headers(wr, if self.stream { None } else { Some(1000) })
                    .await;
                tokio::time::sleep(FOREVER).await;
            }
            Behavior::FirstChunkThenHang => {
                if self.stream {
                    self.ok_headers(wr, None).await;
                    let _ = wr.write_all(self.first_chunk().as_bytes()).await;
                } else {
                    self.ok_headers(wr, Some(1000)).await;
                    let _ = wr.write_all(b"{\"id\": \"x\", ").await;
                }
                tokio::time::sleep(FOREVER).await;
            }
            Behavior::KeepAlivesForever(every) => {
                self.ok_headers(wr, if self.stream { None } else { Some(100_000) })
                    .await;
                if self.stream {
                    let _ = wr.write_all(self.first_chunk().as_bytes()).await;
                }
                loop {
                    let ka = match (self.stream, self.anthropic) {
                        (false, _) => "\n",
                        (true, true) => "event: ping\ndata: {\"type\": \"ping\"}\n\n",
                        (true, false) => ": OPENROUTER PROCESSING\n\n",
                    };
                    if wr.write_all(ka.as_bytes()).await.is_err() {
                        tokio::time::sleep(FOREVER).await;
                    }
                    tokio::time::sleep(*every).await;
                }
            }
            Behavior::TokenThenKeepAlives(every) => {
                self.ok_headers(wr, None).await;
                let _ = wr.write_all(self.first_chunk().as_bytes()).await;
                let _ = wr.write_all(self.delta("{").as_bytes()).await;
                loop {
                    let ka = if self.anthropic {
                        "event: ping\ndata: {\"type\": \"ping\"}\n\n"
                    } else {
                        ": OPENROUTER PROCESSING\n\n"
                    };
                    if wr.write_all(ka.as_bytes()).await.is_err() {
                        tokio::time::sleep(FOREVER).await;
                    }
                    tokio::time::sleep(*every).await;
                }
            }
            Behavior::Truncated => {
                if self.stream {
                    self.ok_headers(wr, None).await;
                    let _ = wr.write_all(self.first_chunk().as_bytes()).await;
                    let _ = wr
                        .write_all(self.delta("{\"findings\": [").as_bytes())
                        .await;
                } else {
                    self.ok_headers(wr, Some(5000)).await;
                    let _ = wr.write_all(b"{\"id\": \"x\", \"choices\": [").await;
                }
            }
            Behavior::MidStreamErrorWith(message) => {
                self.ok_headers(wr, None).await;
                let _ = wr.write_all(self.first_chunk().as_bytes()).await;
                let _ = wr.write_all(self.delta("{\"findings\"").as_bytes()).await;
                let err = if self.anthropic {
                    format!(
                        "event: error\ndata: {}\n\n",
                        json!({"type": "error", "error": {"type": "authentication_error", "message": message}})
                    )
                } else {
                    format!(
                        "data: {}\n\n",
                        json!({"id": "gen-1", "model": self.model, "error": {"code": 401, "message": message},
                               "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]})
                    )
                };
                let _ = wr.write_all(err.as_bytes()).await;
            }
            Behavior::MidStreamError => {
                if self.stream {
                    self.ok_headers(wr, None).await;
                    let _ = wr.write_all(self.first_chunk().as_bytes()).await;
                    let _ = wr.write_all(self.delta("{\"findings\"").as_bytes()).await;
                    let err = if self.anthropic {
                        "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n".to_string()
                    } else {
                        format!(
                            "data: {}\n\n",
                            json!({"id": "gen-1", "model": self.model, "error": {"code": 502, "message": "upstream error"},
                                   "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]})
                        )
                    };
                    let _ = wr.write_all(err.as_bytes()).await;
                } else {
                    let body = if self.anthropic {
                        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
                    } else {
                        json!({"error": {"code": 502, "message": "upstream error"}})
                    }
                    .to_string();
                    self.ok_headers(wr, Some(body.len())).await;
                    let _ = wr.write_all(body.as_bytes()).await;
                }
            }
        }
    }

    async fn ok_headers(&self, wr: &mut Writer, len: Option<usize>) {
        let ct = if self.stream {
            "text/event-stream"
        } else {
            "application/json"
        };
        let mut head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {ct}\r\nconnection: close\r\nx-request-id: req-fake\r\nrequest-id: req-fake\r\n"
        );
        if let Some(l) = len {
            head.push_str(&format!("content-length: {l}\r\n"));
        }
        for (k, v) in &self.extra {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let _ = wr.write_all(head.as_bytes()).await;
    }

    /// The protocol's usage object (`output` tokens: Anthropic's count so far).
    fn usage(&self, output: u64) -> Value {
        if self.anthropic {
            fake_models::anthropic_usage(self.cache, output)
        } else {
            fake_models::openai_usage(self.cache, self.cost)
        }
    }

    fn first_chunk(&self) -> String {
        if self.anthropic {
            format!(
                "event: message_start\ndata: {}\n\nevent: content_block_start\ndata: {}\n\n",
                json!({"type": "message_start", "message": {"id": "msg_fake", "model": self.model, "usage": fake_models::anthropic_usage(self.cache, 1)}}),
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
            )
        } else {
            format!(
                "data: {}\n\n",
                json!({"id": "gen-fake", "object": "chat.completion.chunk", "model": self.model,
                       "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]})
            )
        }
    }

    fn delta(&self, text: &str) -> String {
        if self.anthropic {
            format!(
                "event: content_block_delta\ndata: {}\n\n",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}})
            )
        } else {
            format!(
                "data: {}\n\n",
                json!({"id": "gen-fake", "object": "chat.completion.chunk", "model": self.model,
                       "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
            )
        }
    }

    fn end(&self) -> String {
        if self.anthropic {
            format!(
                "event: content_block_stop\ndata: {}\n\nevent: message_delta\ndata: {}\n\nevent: message_stop\ndata: {}\n\n",
                json!({"type": "content_block_stop", "index": 0}),
                json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 42}}),
                json!({"type": "message_stop"})
            )
        } else {
            let usage = if self.usage_chunk {
                format!(
                    "data: {}\n\n",
                    json!({"id": "gen-fake", "object": "chat.completion.chunk", "model": self.model, "choices": [],
                           "usage": fake_models::openai_usage(self.cache, self.cost)})
                )
            } else {
                String::new()
            };
            format!(
                "data: {}\n\n{usage}data: [DONE]\n\n",
                json!({"id": "gen-fake", "object": "chat.completion.chunk", "model": self.model,
                       "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            )
        }
    }

    /// A full answer; with `drip`, `count` tokens one every `every` first.
    async fn answer(&self, wr: &mut Writer, text: &str, drip: Option<(Duration, usize)>) {
        if !self.stream {
            if let Some((every, count)) = drip {
                // Non-streaming drip: the body arrives slowly, byte by byte.
                let body = self.full_body(text);
                self.ok_headers(wr, Some(body.len())).await;
                let step = (body.len() / count.max(1)).max(1);
                for part in body.as_bytes().chunks(step) {
                    tokio::time::sleep(every).await;
                    if wr.write_all(part).await.is_err() {
                        return;
                    }
                }
                return;
            }
            let body = self.full_body(text);
            self.ok_headers(wr, Some(body.len())).await;
            let _ = wr.write_all(body.as_bytes()).await;
            return;
        }
        self.ok_headers(wr, None).await;
        let _ = wr.write_all(self.first_chunk().as_bytes()).await;
        if let Some((every, count)) = drip {
            for _ in 0..count {
                tokio::time::sleep(every).await;
                if wr.write_all(self.delta(" ").as_bytes()).await.is_err() {
                    return;
                }
            }
        }
        let mid = text
            .char_indices()
            .nth(text.chars().count() / 2)
            .map_or(0, |(i, _)| i);
        for part in [&text[..mid], &text[mid..]] {
            let _ = wr.write_all(self.delta(part).as_bytes()).await;
        }
        let _ = wr.write_all(self.end().as_bytes()).await;
    }

    fn full_body(&self, text: &str) -> String {
        if self.anthropic {
            json!({"id": "msg_fake", "type": "message", "role": "assistant", "model": self.model,
                   "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                   "usage": fake_models::anthropic_usage(self.cache, 42)})
        } else {
            json!({"id": "gen-fake", "object": "chat.completion", "model": self.model,
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                   "usage": fake_models::openai_usage(self.cache, self.cost)})
        }
        .to_string()
    }
}

/// A whole answer (stream or body) whose ending says the token cap cut it.
fn cut_at_the_cap(answer: &str, anthropic: bool) -> String {
    if anthropic {
        answer.replace(
            r#""stop_reason":"end_turn""#,
            r#""stop_reason":"max_tokens""#,
        )
    } else {
        answer.replace(r#""finish_reason":"stop""#, r#""finish_reason":"length""#)
    }
}
