//! One HTTP exchange under the attempt's clocks: connect (the client's connect timeout),
//! time to first token, idle between content chunks, and the total deadline. When a
//! clock runs out the response is dropped, which closes the connection at once. Nothing
//! here retries or follows a redirect: one call is exactly one request on the wire, to
//! the configured origin only.

use super::Limits;
use super::attempt::{Outcome, Stage};
use super::body;
use super::classify::{self, Failure};
use super::tls::ClientError;
use super::wire::{Answer, Clocks, Decoder, ResponseCaps, root_cause};
use tokio::time::{Instant, timeout_at};

/// The URL of `path` (`chat/completions`, `messages`) under a route's base. Built from the
/// parsed URL: a query stays a query (never spliced into the path), and any userinfo is
/// dropped so that the key header is the request's only credential (config refuses both
/// at load; this holds for routes built in code too).
pub(crate) fn endpoint(base: &str, path: &str) -> Result<reqwest::Url, ClientError> {
    let mut url =
        reqwest::Url::parse(base.trim()).map_err(|e| ClientError::BaseUrl(e.to_string()))?;
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.set_fragment(None);
    url.path_segments_mut()
        .map_err(|()| ClientError::NoPath)?
        .pop_if_empty()
        .extend(path.split('/'));
    Ok(url)
}

/// Error bodies are read up to this size.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// What the wire did, measured.
#[derive(Debug)]
pub(crate) struct Exchange {
    pub(crate) status: Option<u16>,
    pub(crate) headers: Option<std::time::Duration>,
    pub(crate) ttft: Option<std::time::Duration>,
    pub(crate) first_content: Option<std::time::Duration>,
    pub(crate) duration: std::time::Duration,
    pub(crate) bytes: u64,
    pub(crate) request_id: Option<String>,
    /// The gateway that answered, when its response headers say so (`litellm`).
    pub(crate) gateway: Option<&'static str>,
    /// What the response's rate-limit headers said, and a header dropped as bad.
    pub(crate) rate_limit: Option<super::ratelimit::RateLimitInfo>,
    pub(crate) rate_limit_warning: Option<String>,
    /// An error status's body (capped), for the route's self-correction.
    pub(crate) error_body: Vec<u8>,
    pub(crate) result: Result<Answer, Failure>,
}

pub(crate) async fn exchange(
    client: &reqwest::Client,
    request: reqwest::Request,
    limits: &Limits,
    caps: &ResponseCaps,
    stream: bool,
    decoder: &mut dyn Decoder,
) -> Exchange {
    let clocks = Clocks::new(limits, stream);
    let t0 = clocks.t0;
    let mut ex = Exchange {
        status: None,
        headers: None,
        ttft: None,
        first_content: None,
        duration: Default::default(),
        bytes: 0,
        request_id: None,
        gateway: None,
        rate_limit: None,
        rate_limit_warning: None,
        error_body: Vec::new(),
        result: Err(Failure::new(Outcome::Unavailable, "not sent")),
    };
    let url = request.url().clone();
    let resp = match timeout_at(clocks.first_at, client.execute(request)).await {
        Err(_) => {
            let mut f = clocks.expired(clocks.first_at, false);
            f.reason.push_str("; no response headers");
            ex.result = Err(f);
            ex.duration = t0.elapsed();
            return ex;
        }
        Ok(Err(e)) => {
            ex.result = Err(send_failure(&e, &url, limits));
            ex.duration = t0.elapsed();
            return ex;
        }
        Ok(Ok(r)) => r,
    };
    ex.headers = Some(t0.elapsed());
    let status = resp.status().as_u16();
    ex.status = Some(status);
    ex.request_id = request_id(resp.headers());
    let headers = resp.headers().clone();
    if super::litellm::is_gateway_response(&headers) {
        ex.gateway = Some("litellm");
    }
    let sent = super::ratelimit::answer_time(&headers, std::time::SystemTime::now());
    (ex.rate_limit, ex.rate_limit_warning) = super::ratelimit::parse(&headers, sent);
    let mut resp = resp;

    if resp.status().is_redirection() {
        // Following would send the key to wherever the Location points.
        ex.result = Err(redirect(status, &headers));
        ex.duration = t0.elapsed();
        return ex;
    }
    if !resp.status().is_success() {
        // An error document is short and sent at once: one that trickles (or never
        // comes) after its headers would hold the attempt and its permit to the total
        // deadline, for an answer whose status already said what it is.
        let until = Instant::now()
            .checked_add(limits.idle)
            .map_or(clocks.total_at, |t| t.min(clocks.total_at));
        let body = error_body(&mut resp, until, &mut ex.bytes).await;
        ex.result = Err(classify::classify_status(status, &headers, &body));
        ex.error_body = body;
        ex.duration = t0.elapsed();
        return ex;
    }

    let events = stream && is_event_stream(&headers);
    let read = body::read(&mut resp, &clocks, caps, events, decoder).await;
    ex.bytes = read.bytes;
    ex.ttft = read.ttft;
    ex.first_content = read.first_content;
    ex.result = read.result;
    if let Ok(a) = &mut ex.result
        && a.request_id.is_none()
    {
        a.request_id = ex.request_id.clone();
    }
    ex.duration = t0.elapsed();
    ex
}

/// Whether a 200 to a streaming request is an event stream. A gateway that ignores
/// `stream: true` answers `application/json` (a whole completion), and a broken one an
/// HTML page: both are read as a whole body. No content type at all is taken as a stream.
fn is_event_stream(headers: &reqwest::header::HeaderMap) -> bool {
    match headers
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    {
        None => true,
        Some(ct) => ct
            .trim_start()
            .to_ascii_lowercase()
            .starts_with("text/event-stream"),
    }
}

/// A 3xx is the attempt's outcome: warden never follows one (the key would go along).
fn redirect(status: u16, headers: &reqwest::header::HeaderMap) -> Failure {
    let location = headers
        .get(reqwest::header::LOCATION)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_else(|| "nowhere (no Location header)".into());
    Failure::new(
        Outcome::BadResponse,
        format!(
            "{status} redirect to {location}: warden does not follow redirects, so the key goes only to the configured origin; if the endpoint moved, set baseUrl to the new address"
        ),
    )
}

/// A request that got no response: connect timeout, refused, reset, or a certificate
/// that is not trusted.
/// The provider's request id, from the first header that has one.
fn request_id(headers: &reqwest::header::HeaderMap) -> Option<String> {
    ["x-request-id", "request-id", "x-amzn-requestid"]
        .iter()
        .find_map(|h| headers.get(*h))
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// An error response's body, up to [`MAX_ERROR_BODY`] and `until` (what arrived by then
/// is classified).
async fn error_body(resp: &mut reqwest::Response, until: Instant, bytes: &mut u64) -> Vec<u8> {
    let mut body = Vec::new();
    while body.len() < MAX_ERROR_BODY {
        match timeout_at(until, resp.chunk()).await {
            Ok(Ok(Some(b))) => {
                *bytes += b.len() as u64;
                body.extend_from_slice(&b);
            }
            _ => break,
        }
    }
    body
}

fn send_failure(e: &reqwest::Error, url: &reqwest::Url, limits: &Limits) -> Failure {
    if let Some(detail) = super::tls::certificate_error(e) {
        return super::tls::certificate_failure(url, &detail);
    }
    // The only timeout reqwest itself enforces is the connect timeout.
    if e.is_timeout() {
        return Failure::timeout(Stage::Connect, limits);
    }
    if e.is_connect() {
        // Nothing listens, no route to the host, or its name does not resolve: no request
        // reached anything (the breaker may call the route dead, docs/design.md §14).
        let address = address(url);
        let mut f = Failure::new(
            Outcome::Unavailable,
            format!("cannot connect to {address}: {}", root_cause(e)),
        );
        f.unreachable = Some(address.into());
        return f;
    }
    Failure::new(
        Outcome::Unavailable,
        format!("request failed: {}", root_cause(e)),
    )
}

/// `host:port` of `url` (the scheme's port when none is written).
fn address(url: &reqwest::Url) -> String {
    let host = url.host_str().unwrap_or("?");
    // An IPv6 host comes bracketed already.
    match url.port_or_known_default() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    }
}

#[cfg(test)]
mod endpoint_tests {
    use super::endpoint;

    #[test]
    fn the_path_goes_into_the_path_and_a_query_stays_a_query() {
        let u = |b: &str| endpoint(b, "chat/completions").unwrap().to_string();
        assert_eq!(
            u("http://127.0.0.1:9/v1"),
            "http://127.0.0.1:9/v1/chat/completions"
        );
        assert_eq!(
            u("http://127.0.0.1:9/v1/"),
            "http://127.0.0.1:9/v1/chat/completions"
        );
        assert_eq!(u("http://h/v1?key=X"), "http://h/v1/chat/completions?key=X");
        assert_eq!(u("http://user:pw@h/v1#f"), "http://h/v1/chat/completions");
        assert_eq!(u("http://127.1:9"), "http://127.0.0.1:9/chat/completions");
    }
}
