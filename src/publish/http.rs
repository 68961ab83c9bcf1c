//! Requests to a forge's API under the publish budget. The token goes only to the API's
//! origin (a pagination link elsewhere is refused), no redirect is followed, and every
//! message is redacted. The forge's limits are back-pressure (docs/design.md §13): a primary
//! limit (`x-ratelimit-remaining: 0`) pauses until its reset, a secondary limit (403/429,
//! `retry-after`) waits that long; a wait past the budget ends publishing instead.

use crate::provider::secret::{ApiKey, Redactor};
use reqwest::{Method, StatusCode, Url};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The largest response body read.
const MAX_BODY: usize = 16 << 20;
/// Back-pressure answers waited out per request at most.
const MAX_WAITS: u32 = 5;
/// The wait after a secondary limit that names none (GitHub: at least a minute).
const DEFAULT_WAIT: Duration = Duration::from_secs(60);

/// Why a request gave no usable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// The forge answered this status (message redacted, escaped, capped).
    Status(u16, String),
    /// The publish budget cannot cover the wait or the request.
    Budget(String),
    /// No answer (connection, TLS, timeout) or one that was not JSON.
    Transport(String),
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApiError::Status(c, m) => write!(f, "HTTP {c}: {m}"),
            ApiError::Budget(m) => write!(f, "publish budget: {m}"),
            ApiError::Transport(m) => write!(f, "{m}"),
        }
    }
}

/// An answer: status, JSON body, the `Link` next page.
pub struct Answer {
    /// The status.
    pub status: StatusCode,
    /// The body (Null when empty).
    pub body: serde_json::Value,
    /// `Link: <…>; rel="next"`.
    pub next: Option<String>,
    /// GitLab's `x-next-page` (empty on the last page).
    pub next_page: Option<u64>,
}

/// A forge API client for one run.
pub struct Api {
    client: reqwest::Client,
    origin: reqwest::Url,
    token: Option<ApiKey>,
    token_header: &'static str,
    redactor: Redactor,
    deadline: Instant,
    paused_until: Option<Instant>,
    /// Requests sent (each retry counts).
    pub requests: usize,
    /// Time spent waiting on limits.
    pub waited: Duration,
}

impl Api {
    /// A client for `origin`'s API with `token` sent as `token_header`
    /// (`Authorization: Bearer` on GitHub, `PRIVATE-TOKEN` on GitLab), until `budget` ends.
    pub fn new(
        origin: &Url,
        token: Option<ApiKey>,
        token_header: &'static str,
        budget: Duration,
    ) -> Result<Api, crate::provider::ClientError> {
        let client = crate::provider::tls::api_client(origin.as_str(), Duration::from_secs(10))?;
        let redactor = Redactor::new(token.as_slice());
        Ok(Api {
            client,
            origin: origin.clone(),
            token,
            token_header,
            redactor,
            deadline: Instant::now() + budget,
            paused_until: None,
            requests: 0,
            waited: Duration::ZERO,
        })
    }

    /// Redacts and escapes a message for output.
    pub fn clean(&self, s: &str) -> String {
        let s: String = self.redactor.redact(s).chars().take(400).collect();
        crate::text::escape::inline(&s)
    }

    /// `path` (with query) under the API base.
    pub fn url(&self, base: &Url, path: &str) -> Url {
        let mut s = base.as_str().trim_end_matches('/').to_string();
        s.push_str(path);
        Url::parse(&s).unwrap_or_else(|_| base.clone())
    }

    /// Sends one request, waiting out back-pressure inside the budget.
    pub async fn call(
        &mut self,
        method: Method,
        url: &Url,
        body: Option<&serde_json::Value>,
    ) -> Result<Answer, ApiError> {
        if url.origin() != self.origin.origin() {
            return Err(ApiError::Transport(format!(
                "refused to send the token to {}: not the API's origin",
                self.clean(&url.origin().ascii_serialization())
            )));
        }
        let mut waits = 0;
        loop {
            self.wait_for_pause().await?;
            let left = self.deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ApiError::Budget("spent before the request".into()));
            }
            self.requests += 1;
            let resp = self
                .request(&method, url, body, left)
                .send()
                .await
                .map_err(|e| {
                    ApiError::Transport(self.clean(&crate::provider::wire::root_cause(&e)))
                })?;
            let status = resp.status();
            let headers = resp.headers().clone();
            let bytes = read_capped(resp)
                .await
                .map_err(|e| ApiError::Transport(self.clean(&e.to_string())))?;
            if self.limited(status, &headers, &bytes) && waits < MAX_WAITS {
                waits += 1;
                continue;
            }
            return self.answer(status, &headers, &bytes);
        }
    }

    /// One request: the token in its header, GitHub's media type and version to GitHub.
    fn request(
        &self,
        method: &Method,
        url: &Url,
        body: Option<&serde_json::Value>,
        left: Duration,
    ) -> reqwest::RequestBuilder {
        let mut req = self
            .client
            .request(method.clone(), url.clone())
            .timeout(left.min(Duration::from_secs(30)));
        if self.token_header == "Authorization" {
            req = req
                .header("Accept", "application/vnd.github+json")
                .header("X-GitHub-Api-Version", "2022-11-28");
        }
        if let Some(t) = &self.token {
            req = match self.token_header {
                "Authorization" => req.bearer_auth(t.expose()),
                h => req.header(h, t.expose()),
            };
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        req
    }

    /// Reads the limit headers of an answer (a spent primary limit pauses until its
    /// reset) and says whether the answer is a limit to wait out (403/429), setting the
    /// pause: `retry-after`, else the reset, else a minute.
    fn limited(
        &mut self,
        status: StatusCode,
        headers: &reqwest::header::HeaderMap,
        bytes: &[u8],
    ) -> bool {
        let remaining =
            header(headers, "x-ratelimit-remaining").and_then(|v| v.parse::<u64>().ok());
        let reset = header(headers, "x-ratelimit-reset").and_then(|v| v.parse::<u64>().ok());
        if let (Some(0), Some(at)) = (remaining, reset.map(epoch_to_instant)) {
            self.paused_until = Some(at);
        }
        let retry_after = header(headers, "retry-after");
        let limited = status == StatusCode::TOO_MANY_REQUESTS
            || (status == StatusCode::FORBIDDEN
                && (remaining == Some(0)
                    || retry_after.is_some()
                    || String::from_utf8_lossy(bytes)
                        .to_ascii_lowercase()
                        .contains("rate limit")));
        if limited {
            let wait = retry_after
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs)
                .or_else(|| {
                    self.paused_until
                        .map(|p| p.saturating_duration_since(Instant::now()))
                })
                .unwrap_or(DEFAULT_WAIT);
            let until = Instant::now() + wait;
            self.paused_until = Some(self.paused_until.map_or(until, |p| p.max(until)));
        }
        limited
    }

    /// An answer as a result: a redirect or an error status (its message redacted), or
    /// the JSON body with its next-page links.
    fn answer(
        &self,
        status: StatusCode,
        headers: &reqwest::header::HeaderMap,
        bytes: &[u8],
    ) -> Result<Answer, ApiError> {
        if status.is_redirection() {
            return Err(ApiError::Status(
                status.as_u16(),
                "a redirect, not followed: check the API address".into(),
            ));
        }
        if !status.is_success() {
            let msg = serde_json::from_slice::<serde_json::Value>(bytes)
                .ok()
                .and_then(|v| {
                    let m = v["message"].as_str()?.to_string();
                    let errs = v.get("errors").map(|e| format!(" {e}")).unwrap_or_default();
                    Some(format!("{m}{errs}"))
                })
                .unwrap_or_else(|| String::from_utf8_lossy(bytes).chars().take(200).collect());
            return Err(ApiError::Status(status.as_u16(), self.clean(&msg)));
        }
        let body = if bytes.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::from_slice(bytes)
                .map_err(|e| ApiError::Transport(format!("the answer is not JSON ({e})")))?
        };
        Ok(Answer {
            status,
            body,
            next: header(headers, "link").and_then(|l| next_link(&l)),
            next_page: header(headers, "x-next-page").and_then(|v| v.trim().parse().ok()),
        })
    }

    async fn wait_for_pause(&mut self) -> Result<(), ApiError> {
        let Some(until) = self.paused_until else {
            return Ok(());
        };
        let now = Instant::now();
        if until <= now {
            self.paused_until = None;
            return Ok(());
        }
        if until > self.deadline {
            return Err(ApiError::Budget(format!(
                "the API's rate limit asks for a wait of {}s, past what is left",
                (until - now).as_secs_f64().ceil() as u64
            )));
        }
        tokio::time::sleep(until - now).await;
        self.waited += until - now;
        self.paused_until = None;
        Ok(())
    }
}

fn header(h: &reqwest::header::HeaderMap, k: &str) -> Option<String> {
    h.get(k).and_then(|v| v.to_str().ok()).map(str::to_string)
}

fn epoch_to_instant(secs: u64) -> Instant {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    // A reset in the past or absurdly far (a lying header) is capped: one hour at most.
    Instant::now() + Duration::from_secs(secs.saturating_sub(now).min(3600))
}

/// The `rel="next"` address of a `Link` header.
pub(crate) fn next_link(link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (url, rest) = part.trim().split_once(';')?;
        rest.contains("rel=\"next\"").then(|| {
            url.trim()
                .trim_start_matches('<')
                .trim_end_matches('>')
                .to_string()
        })
    })
}

/// Why an answer's body was not read whole.
#[derive(Debug, thiserror::Error)]
enum BodyError {
    /// The connection failed mid-body (the innermost reason).
    #[error("{0}")]
    Transport(String),
    /// Past [`MAX_BODY`].
    #[error("the answer is over {max} bytes", max = MAX_BODY)]
    TooBig,
}

async fn read_capped(resp: reqwest::Response) -> Result<Vec<u8>, BodyError> {
    use futures_util::StreamExt;
    let mut out = Vec::new();
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk =
            chunk.map_err(|e| BodyError::Transport(crate::provider::wire::root_cause(&e)))?;
        if out.len() + chunk.len() > MAX_BODY {
            return Err(BodyError::TooBig);
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_next_link_is_found_among_others() {
        let l = r#"<https://api.example.com/x?page=1>; rel="prev", <https://api.example.com/x?page=3>; rel="next", <https://api.example.com/x?page=9>; rel="last""#;
        assert_eq!(
            super::next_link(l).as_deref(),
            Some("https://api.example.com/x?page=3")
        );
        assert_eq!(super::next_link(r#"<a>; rel="last""#), None);
    }
}
