//! Reading a 2xx body under the attempt's clocks and the response caps, whatever the
//! provider sends. A flooding provider must not starve the clocks: the deadline is
//! checked after every chunk (a body whose chunks are always ready never lets a timer
//! fire), and the task yields to the runtime after every `YIELD_EVERY` bytes, so the
//! review budget and signals, which are polled by the same task, act at once.

use super::attempt::Outcome;
use super::classify::Failure;
use super::sse::{SseCaps, SseItem, SseReader};
use super::wire::{Answer, Clocks, Decoder, ResponseCaps, Step, body_cap_failure, root_cause};
use tokio::time::{Instant, timeout_at};

/// Bytes parsed between two yields to the runtime.
const YIELD_EVERY: usize = 256 * 1024;

/// What reading the body gave.
pub(crate) struct Read {
    pub(crate) bytes: u64,
    /// The first token of any kind (reasoning included).
    pub(crate) ttft: Option<std::time::Duration>,
    /// The first token of the answer itself (text or a tool call).
    pub(crate) first_content: Option<std::time::Duration>,
    pub(crate) result: Result<Answer, Failure>,
}

/// Reads the body: as an event stream when `events`, else as one JSON document.
pub(crate) async fn read(
    resp: &mut reqwest::Response,
    clocks: &Clocks,
    caps: &ResponseCaps,
    events: bool,
    decoder: &mut dyn Decoder,
) -> Read {
    let mut st = State {
        clocks,
        events,
        bytes: 0,
        ttft: None,
        first_content: None,
        last_progress: clocks.t0,
        saw_done: false,
        items_seen: 0,
        sse: SseReader::with_caps(SseCaps {
            line: caps.line,
            event: caps.event,
        }),
        raw: Vec::new(),
        items: Vec::new(),
    };
    let result = st.run(resp, caps.body, decoder).await;
    Read {
        bytes: st.bytes,
        ttft: st.ttft,
        first_content: st.first_content,
        result,
    }
}

struct State<'a> {
    clocks: &'a Clocks,
    events: bool,
    bytes: u64,
    ttft: Option<std::time::Duration>,
    first_content: Option<std::time::Duration>,
    last_progress: Instant,
    saw_done: bool,
    items_seen: usize,
    sse: SseReader,
    /// The body itself: all of it when not an event stream, else only until the first
    /// event (a body with no event at all is read as a whole answer or a bad one).
    raw: Vec<u8>,
    items: Vec<SseItem>,
}

impl State<'_> {
    /// The clock that bounds the next chunk.
    fn deadline(&self) -> Instant {
        let c = self.clocks;
        if !self.events {
            // A whole answer may legitimately arrive all at once at the end (or after
            // keep-alive whitespace), so only the total deadline bounds it.
            c.total_at
        } else if self.ttft.is_none() {
            c.first_at
        } else {
            (self.last_progress + c.limits.idle).min(c.total_at)
        }
    }

    async fn run(
        &mut self,
        resp: &mut reqwest::Response,
        body_cap: usize,
        decoder: &mut dyn Decoder,
    ) -> Result<Answer, Failure> {
        let mut since_yield = 0usize;
        loop {
            let deadline = self.deadline();
            if Instant::now() >= deadline {
                return Err(self.clocks.expired(deadline, self.ttft.is_some()));
            }
            let chunk = match timeout_at(deadline, resp.chunk()).await {
                // Returning drops the response: the connection closes now.
                Err(_) => return Err(self.clocks.expired(deadline, self.ttft.is_some())),
                Ok(Err(e)) => {
                    return Err(Failure::new(
                        Outcome::Unavailable,
                        format!("connection lost mid-answer: {}", root_cause(&e)),
                    ));
                }
                Ok(Ok(None)) => break,
                Ok(Ok(Some(c))) => c,
            };
            self.bytes += chunk.len() as u64;
            if self.bytes > body_cap as u64 {
                return Err(body_cap_failure(body_cap));
            }
            if !self.events || self.items_seen == 0 {
                self.raw.extend_from_slice(&chunk);
            }
            if self.events {
                self.feed(&chunk, decoder)?;
                if self.saw_done {
                    break;
                }
            }
            since_yield += chunk.len();
            if since_yield >= YIELD_EVERY {
                since_yield = 0;
                tokio::task::yield_now().await;
            }
        }
        if !self.events {
            return decoder.body(&self.raw);
        }
        if self.items_seen == 0 && !self.raw.is_empty() {
            // Bytes, but not one event: not a stream at all (an HTML error page, a
            // whole JSON answer under the wrong content type).
            return decoder.body(&self.raw);
        }
        decoder.end_of_stream(self.saw_done)
    }

    fn feed(&mut self, chunk: &[u8], decoder: &mut dyn Decoder) -> Result<(), Failure> {
        self.items.clear();
        let fed = self.sse.feed(chunk, &mut self.items);
        if self.items_seen == 0 && !self.items.is_empty() {
            self.raw = Vec::new();
        }
        self.items_seen += self.items.len();
        for item in &self.items {
            match decoder.item(item)? {
                step @ (Step::Content | Step::Reasoning) => {
                    let now = Instant::now();
                    self.ttft.get_or_insert(now - self.clocks.t0);
                    if matches!(step, Step::Content) {
                        self.first_content.get_or_insert(now - self.clocks.t0);
                    }
                    self.last_progress = now;
                }
                Step::Other => {}
                Step::Done => {
                    self.saw_done = true;
                    return Ok(());
                }
            }
        }
        fed.map_err(|e| Failure::new(Outcome::BadResponse, e.to_string()))
    }
}
