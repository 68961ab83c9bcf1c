//! Rate-limit headers (docs/design.md section 13): what a provider says about its remaining
//! requests and tokens, read from every answer so the engine can pace a route instead of
//! running into 429s.
//!
//! Three dialects:
//! - OpenAI and LiteLLM: `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, resets as
//!   Go durations (`1s`, `6m0s`, `20ms`, `1h2m3.5s`);
//! - Anthropic: `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,
//!   remaining,reset}`, resets as RFC 3339 instants;
//! - OpenRouter: `X-RateLimit-{Limit,Remaining,Reset}` (requests), the reset in epoch
//!   milliseconds (or seconds; a small number is seconds from now, as other gateways
//!   write this header).
//!
//! Headers are provider data, not trusted: a count past [`MAX_COUNT`], a reset further
//! than [`MAX_RESET`], a remaining count above the limit, or a value that does not parse
//! drops that window (never a panic, never an overflow later) and yields one warning that
//! names the header, so the route's provider can say it once per run.

use reqwest::header::HeaderMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A reset further away than this is not a per-minute (or per-few-minutes) window warden
/// can pace by: OpenAI documents resets like `6m0s`; an hour is a lie or a daily quota.
pub(crate) const MAX_RESET: Duration = Duration::from_secs(10 * 60);

/// No provider counts a trillion requests or tokens per window; larger counts are taken
/// as garbage (and keep every sum the engine makes of them far from `u64::MAX`).
pub(crate) const MAX_COUNT: u64 = 1_000_000_000_000;

/// An unqualified `x-ratelimit-reset` below this (2001-09-09 in epoch seconds) is a
/// number of seconds from now, as some gateways write it.
const DELTA_SECONDS_BELOW: u64 = 1_000_000_000;

/// A header value longer than this is garbage (and is not echoed whole in a warning).
const MAX_VALUE_CHARS: usize = 64;

/// What one answer said about the route's rate limits.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RateLimitInfo {
    /// Requests per window.
    pub requests: Option<Window>,
    /// Tokens per window (Anthropic: `tokens`, or else the tighter of input and output).
    pub tokens: Option<Window>,
}

/// One limit: how much is left and when it is whole again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// The window's size, when the provider says.
    pub limit: Option<u64>,
    /// What may still be used before the reset.
    pub remaining: u64,
    /// When the window resets, measured from when the answer arrived (at most
    /// [`MAX_RESET`]).
    pub reset_after: Duration,
}

/// How a dialect writes its reset.
#[derive(Debug, Clone, Copy)]
enum ResetKind {
    /// `1s`, `6m0s`, `20ms` (a bare number is seconds).
    GoDuration,
    /// `2026-12-01T15:10:30Z`.
    Rfc3339,
    /// Epoch milliseconds (a value below 10^11 is taken as epoch seconds, and one below
    /// 10^9 as seconds from now).
    EpochMs,
}

/// When the answer was sent, by its own `Date` header (else `arrived`). Anthropic and
/// OpenRouter resets are instants on the server's clock: measured against the server's
/// Date, a server clock off by an hour still paces by the seconds it means (the Date's
/// whole seconds err on the side of a longer wait, by under one).
pub(crate) fn answer_time(headers: &HeaderMap, arrived: SystemTime) -> SystemTime {
    headers
        .get(reqwest::header::DATE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| httpdate::parse_http_date(v.trim()).ok())
        .unwrap_or(arrived)
}

/// Reads the rate-limit headers of one answer, `now` being when it arrived. Returns the
/// windows that parsed and were plausible, and a warning for the first header that was
/// dropped (`None` when none was).
pub fn parse(headers: &HeaderMap, now: SystemTime) -> (Option<RateLimitInfo>, Option<String>) {
    let mut p = Parser {
        headers,
        now,
        warning: None,
    };
    let requests = p
        .window(
            [
                "x-ratelimit-limit-requests",
                "x-ratelimit-remaining-requests",
                "x-ratelimit-reset-requests",
            ],
            ResetKind::GoDuration,
        )
        .or_else(|| p.anthropic("requests"))
        .or_else(|| {
            p.window(
                [
                    "x-ratelimit-limit",
                    "x-ratelimit-remaining",
                    "x-ratelimit-reset",
                ],
                ResetKind::EpochMs,
            )
        });
    let tokens = p
        .window(
            [
                "x-ratelimit-limit-tokens",
                "x-ratelimit-remaining-tokens",
                "x-ratelimit-reset-tokens",
            ],
            ResetKind::GoDuration,
        )
        .or_else(|| p.anthropic("tokens"))
        .or_else(|| {
            let input = p.anthropic("input-tokens");
            let output = p.anthropic("output-tokens");
            match (input, output) {
                (Some(i), Some(o)) => Some(if o.remaining < i.remaining { o } else { i }),
                (i, o) => i.or(o),
            }
        });
    let info =
        (requests.is_some() || tokens.is_some()).then_some(RateLimitInfo { requests, tokens });
    (info, p.warning)
}

struct Parser<'a> {
    headers: &'a HeaderMap,
    now: SystemTime,
    warning: Option<String>,
}

impl Parser<'_> {
    fn anthropic(&mut self, what: &str) -> Option<Window> {
        let names = ["limit", "remaining", "reset"]
            .map(|part| format!("anthropic-ratelimit-{what}-{part}"));
        let [l, r, s] = &names;
        self.window([l.as_str(), r.as_str(), s.as_str()], ResetKind::Rfc3339)
    }

    /// One window from its `[limit, remaining, reset]` headers. A window without both a
    /// remaining count and a reset is not one (nothing to pace by), silently.
    fn window(&mut self, [limit, remaining, reset]: [&str; 3], kind: ResetKind) -> Option<Window> {
        let present = |n: &str| self.headers.contains_key(n);
        if !present(remaining) || !present(reset) {
            return None;
        }
        let lim = match self.headers.contains_key(limit) {
            true => Some(self.field(limit, count)?),
            false => None,
        };
        let rem = self.field(remaining, count)?;
        let now = self.now;
        let reset_after = self.field(reset, |v| reset_of(v, kind, now))?;
        if reset_after > MAX_RESET {
            let v = self.value(reset).unwrap_or_default();
            self.warn(
                reset,
                &v,
                "the reset is further away than the 10m0s warden paces by",
            );
            return None;
        }
        if lim == Some(0) {
            // Refilled to nothing at every reset, it would pause the route for ever.
            let v = self.value(limit).unwrap_or_default();
            self.warn(limit, &v, "a limit of 0 allows nothing, ever");
            return None;
        }
        if let Some(l) = lim
            && rem > l
        {
            let v = self.value(remaining).unwrap_or_default();
            self.warn(
                remaining,
                &v,
                &format!("more remaining than the limit of {l}"),
            );
            return None;
        }
        Some(Window {
            limit: lim,
            remaining: rem,
            reset_after,
        })
    }

    /// A header's value through `read`, or a warning naming it.
    fn field<T>(&mut self, name: &str, read: impl FnOnce(&str) -> Option<T>) -> Option<T> {
        let v = self.value(name);
        match v.as_deref().and_then(read) {
            Some(t) => Some(t),
            None => {
                self.warn(name, &v.unwrap_or_default(), "it does not parse");
                None
            }
        }
    }

    /// The first value of a header, trimmed; `None` if it is not visible ASCII or too long.
    fn value(&self, name: &str) -> Option<String> {
        let v = self.headers.get(name)?.to_str().ok()?.trim();
        (v.len() <= MAX_VALUE_CHARS).then(|| v.to_string())
    }

    fn warn(&mut self, name: &str, value: &str, why: &str) {
        if self.warning.is_some() {
            return;
        }
        let shown = match value {
            "" => "(unprintable, empty or too long)".to_string(),
            v => format!("{v:?}"),
        };
        self.warning = Some(format!(
            "ignored rate-limit header {name} = {shown}: {why}; the route is paced without that window"
        ));
    }
}

/// A request or token count: a plain non-negative integer up to [`MAX_COUNT`].
fn count(v: &str) -> Option<u64> {
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse::<u64>().ok().filter(|n| *n <= MAX_COUNT)
}

/// A reset as a duration from `now`. A reset in the past is zero; one too far to
/// represent is `Duration::MAX` (and so beyond [`MAX_RESET`]).
fn reset_of(v: &str, kind: ResetKind, now: SystemTime) -> Option<Duration> {
    let at = match kind {
        ResetKind::GoDuration => return go_duration(v),
        ResetKind::Rfc3339 => {
            let z = v.strip_suffix("+00:00").map(|s| format!("{s}Z"));
            humantime::parse_rfc3339(z.as_deref().unwrap_or(v)).ok()?
        }
        ResetKind::EpochMs => {
            let n = count_any(v)?;
            if n < DELTA_SECONDS_BELOW {
                // No epoch reading is this small (it would be before 2001): gateways that
                // write `x-ratelimit-reset` as seconds from now mean seconds from now.
                return Some(Duration::from_secs(n));
            }
            let since = if n < 100_000_000_000 {
                Duration::from_secs(n)
            } else {
                Duration::from_millis(n)
            };
            match UNIX_EPOCH.checked_add(since) {
                Some(at) => at,
                None => return Some(Duration::MAX),
            }
        }
    };
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A plain non-negative integer of any size `u64` holds.
fn count_any(v: &str) -> Option<u64> {
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse::<u64>().ok()
}

/// A Go duration (`1h2m3.5s`, `6m0s`, `20ms`, `0.5s`, `1us`); a bare number is seconds.
/// Signs, empty parts and unknown units are garbage (`None`); a duration too long to
/// represent is `Duration::MAX`.
pub(crate) fn go_duration(s: &str) -> Option<Duration> {
    if s.is_empty() || s.len() > MAX_VALUE_CHARS {
        return None;
    }
    let number = |c: char| c.is_ascii_digit() || c == '.';
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let n_end = rest.find(|c: char| !number(c)).unwrap_or(rest.len());
        if n_end == 0 {
            return None;
        }
        let n: f64 = rest[..n_end].parse().ok()?;
        rest = &rest[n_end..];
        let u_end = rest.find(number).unwrap_or(rest.len());
        let scale = match &rest[..u_end] {
            "" if n_end == s.len() => 1.0, // a bare number
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" | "μs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        total += n * scale;
        rest = &rest[u_end..];
    }
    if !total.is_finite() {
        return Some(Duration::MAX);
    }
    Some(Duration::try_from_secs_f64(total).unwrap_or(Duration::MAX))
}

#[cfg(test)]
#[path = "ratelimit_tests.rs"]
mod tests;
