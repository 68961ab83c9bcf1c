//! Rate-limit headers (DESIGN.md section 13): what a provider says about its remaining
//! requests and tokens, read from every answer so the engine can pace a route instead of
//! running into 429s.
//!
//! Three dialects:
//! - OpenAI and LiteLLM: `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, resets as
//!   Go durations (`1s`, `6m0s`, `20ms`, `1h2m3.5s`);
//! - Anthropic: `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,
//!   remaining,reset}`, resets as RFC 3339 instants;
//! - OpenRouter: `X-RateLimit-{Limit,Remaining,Reset}` (requests), the reset in epoch
//!   milliseconds.
//!
//! Headers are provider data, not trusted: a count past [`MAX_COUNT`], a reset further
//! than [`MAX_RESET`], a remaining count above the limit, or a value that does not parse
//! drops that window (never a panic, never an overflow later) and yields one warning that
//! names the header, so the route's provider can say it once per run.

use reqwest::header::HeaderMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A reset further away than this is not a per-minute (or per-few-minutes) window warden
/// can pace by: OpenAI documents resets like `6m0s`; an hour is a lie or a daily quota.
pub const MAX_RESET: Duration = Duration::from_secs(10 * 60);

/// No provider counts a trillion requests or tokens per window; larger counts are taken
/// as garbage (and keep every sum the engine makes of them far from `u64::MAX`).
pub const MAX_COUNT: u64 = 1_000_000_000_000;

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
    /// Epoch milliseconds (a value below 10^11 is taken as epoch seconds).
    EpochMs,
}

/// When the answer was sent, by its own `Date` header (else `arrived`). Anthropic and
/// OpenRouter resets are instants on the server's clock: measured against the server's
/// Date, a server clock off by an hour still paces by the seconds it means (the Date's
/// whole seconds err on the side of a longer wait, by under one).
pub fn answer_time(headers: &HeaderMap, arrived: SystemTime) -> SystemTime {
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
pub fn go_duration(s: &str) -> Option<Duration> {
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
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                reqwest::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    fn now() -> SystemTime {
        // 2026-12-01T15:00:00Z
        UNIX_EPOCH + Duration::from_secs(1_796_137_200)
    }

    fn w(limit: Option<u64>, remaining: u64, ms: u64) -> Window {
        Window {
            limit,
            remaining,
            reset_after: Duration::from_millis(ms),
        }
    }

    #[test]
    fn go_durations() {
        let ms = |s: &str| go_duration(s).map(|d| d.as_millis());
        assert_eq!(ms("1s"), Some(1000));
        assert_eq!(ms("6m0s"), Some(360_000));
        assert_eq!(ms("20ms"), Some(20));
        assert_eq!(ms("1h2m3.5s"), Some(3_723_500));
        assert_eq!(ms("0.5s"), Some(500));
        assert_eq!(ms("0"), Some(0));
        assert_eq!(ms("2"), Some(2000), "a bare number is seconds");
        assert_eq!(go_duration("1500us"), Some(Duration::from_micros(1500)));
        assert_eq!(go_duration("1500µs"), Some(Duration::from_micros(1500)));
        assert_eq!(go_duration("7ns"), Some(Duration::from_nanos(7)));
        for bad in [
            "", "-1s", "+1s", "s", "1x", "1.2.3s", "1s5", "ms", ".s", "1 s", "NaN", "inf", "1e3s",
            "１s",
        ] {
            assert_eq!(go_duration(bad), None, "{bad:?}");
        }
        assert_eq!(
            go_duration("99999999999999999999999h"),
            Some(Duration::MAX),
            "too long to represent is the longest, not a panic"
        );
    }

    #[test]
    fn openai_and_litellm_headers() {
        let h = headers(&[
            ("x-ratelimit-limit-requests", "60"),
            ("x-ratelimit-remaining-requests", "59"),
            ("x-ratelimit-reset-requests", "1s"),
            ("x-ratelimit-limit-tokens", "150000"),
            ("x-ratelimit-remaining-tokens", "149984"),
            ("x-ratelimit-reset-tokens", "6m0s"),
        ]);
        let (info, warning) = parse(&h, now());
        assert_eq!(warning, None);
        assert_eq!(
            info,
            Some(RateLimitInfo {
                requests: Some(w(Some(60), 59, 1000)),
                tokens: Some(w(Some(150_000), 149_984, 360_000)),
            })
        );
    }

    #[test]
    fn anthropic_headers_with_rfc3339_resets() {
        let h = headers(&[
            ("anthropic-ratelimit-requests-limit", "50"),
            ("anthropic-ratelimit-requests-remaining", "0"),
            ("anthropic-ratelimit-requests-reset", "2026-12-01T15:00:12Z"),
            ("anthropic-ratelimit-input-tokens-limit", "40000"),
            ("anthropic-ratelimit-input-tokens-remaining", "39000"),
            (
                "anthropic-ratelimit-input-tokens-reset",
                "2026-12-01T15:00:01.5Z",
            ),
            ("anthropic-ratelimit-output-tokens-limit", "8000"),
            ("anthropic-ratelimit-output-tokens-remaining", "7000"),
            (
                "anthropic-ratelimit-output-tokens-reset",
                "2026-12-01T15:00:03+00:00",
            ),
            ("retry-after", "12"),
        ]);
        let (info, warning) = parse(&h, now());
        assert_eq!(warning, None);
        let info = info.unwrap();
        assert_eq!(info.requests, Some(w(Some(50), 0, 12_000)));
        assert_eq!(
            info.tokens,
            Some(w(Some(8000), 7000, 3000)),
            "without a combined tokens window, the tighter of input and output"
        );

        let h = headers(&[
            ("anthropic-ratelimit-tokens-limit", "48000"),
            ("anthropic-ratelimit-tokens-remaining", "47000"),
            ("anthropic-ratelimit-tokens-reset", "2026-12-01T14:59:00Z"),
            ("anthropic-ratelimit-output-tokens-limit", "8000"),
            ("anthropic-ratelimit-output-tokens-remaining", "10"),
            (
                "anthropic-ratelimit-output-tokens-reset",
                "2026-12-01T15:00:03Z",
            ),
        ]);
        let (info, _) = parse(&h, now());
        assert_eq!(
            info.unwrap().tokens,
            Some(w(Some(48_000), 47_000, 0)),
            "the combined window wins; a reset in the past is now"
        );
    }

    #[test]
    fn instants_are_read_against_the_answers_own_date() {
        // The server's clock is in 2015; its resets are 12 s and 2.5 s after its Date.
        let date = "Wed, 21 Oct 2015 07:28:00 GMT";
        let sent = httpdate::parse_http_date(date).unwrap();
        let ms = (sent.duration_since(UNIX_EPOCH).unwrap() + Duration::from_millis(2500))
            .as_millis()
            .to_string();
        let h = headers(&[
            ("date", date),
            ("anthropic-ratelimit-requests-remaining", "0"),
            ("anthropic-ratelimit-requests-reset", "2015-10-21T07:28:12Z"),
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", &ms),
        ]);
        let at = answer_time(&h, now());
        assert_eq!(at, sent);
        let (info, warning) = parse(&h, at);
        assert_eq!(warning, None);
        assert_eq!(info.unwrap().requests, Some(w(None, 0, 12_000)));
        let h = headers(&[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", &ms)]);
        assert_eq!(
            parse(&h, answer_time(&h, sent)).0.unwrap().requests,
            Some(w(None, 0, 2500))
        );
        // No Date, or garbage: when it arrived.
        assert_eq!(answer_time(&headers(&[("date", "soon")]), now()), now());
        assert_eq!(answer_time(&HeaderMap::new(), now()), now());
    }

    #[test]
    fn openrouter_headers_with_epoch_resets() {
        let at_ms = (now().duration_since(UNIX_EPOCH).unwrap() + Duration::from_millis(2500))
            .as_millis()
            .to_string();
        let h = headers(&[
            ("X-RateLimit-Limit", "20"),
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Reset", &at_ms),
        ]);
        let (info, warning) = parse(&h, now());
        assert_eq!(warning, None);
        assert_eq!(
            info,
            Some(RateLimitInfo {
                requests: Some(w(Some(20), 3, 2500)),
                tokens: None,
            })
        );
        let at_s = (now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 30).to_string();
        let h = headers(&[("x-ratelimit-remaining", "3"), ("x-ratelimit-reset", &at_s)]);
        assert_eq!(
            parse(&h, now()).0.unwrap().requests,
            Some(w(None, 3, 30_000)),
            "epoch seconds are read as seconds"
        );
    }

    #[test]
    fn no_headers_or_half_a_window_is_nothing_and_no_warning() {
        assert_eq!(parse(&HeaderMap::new(), now()), (None, None));
        let h = headers(&[
            ("x-ratelimit-limit-requests", "60"),
            ("x-ratelimit-remaining-requests", "59"),
        ]);
        assert_eq!(parse(&h, now()), (None, None));
    }

    fn rejected(pairs: &[(&str, &str)], names: &str) {
        let (info, warning) = parse(&headers(pairs), now());
        assert_eq!(info, None, "{pairs:?}");
        let warning = warning.unwrap_or_else(|| panic!("no warning for {pairs:?}"));
        assert!(warning.contains(names), "{warning}");
    }

    fn openai(limit: &str, remaining: &str, reset: &str) -> Vec<(&'static str, String)> {
        vec![
            ("x-ratelimit-limit-requests", limit.to_string()),
            ("x-ratelimit-remaining-requests", remaining.to_string()),
            ("x-ratelimit-reset-requests", reset.to_string()),
        ]
    }

    fn rejected_openai(limit: &str, remaining: &str, reset: &str, names: &str) {
        let pairs = openai(limit, remaining, reset);
        let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        rejected(&pairs, names);
    }

    #[test]
    fn garbage_and_huge_counts_are_dropped_with_a_warning() {
        for bad in [
            "-1",
            "fast",
            "1.5",
            "",
            "18446744073709551615",
            "18446744073709551616",
            "99999999999999999999999999",
            "1000000000001",
        ] {
            rejected_openai("60", bad, "1s", "x-ratelimit-remaining-requests");
            rejected_openai(bad, "1", "1s", "x-ratelimit-limit-requests");
        }
        for bad in ["-1s", "soon", "1y", "NaN", ""] {
            rejected_openai("60", "1", bad, "x-ratelimit-reset-requests");
        }
    }

    #[test]
    fn lying_windows_are_dropped_with_a_warning() {
        // An hour away for a 60-a-minute limit.
        rejected_openai("60", "0", "1h0m0s", "further away than the 10m0s");
        rejected_openai("60", "0", "99999999999999999999h", "further away");
        rejected_openai("60", "61", "1s", "more remaining than the limit of 60");
        rejected_openai("0", "0", "1s", "a limit of 0 allows nothing");
        rejected(
            &[
                ("anthropic-ratelimit-tokens-limit", "0"),
                ("anthropic-ratelimit-tokens-remaining", "0"),
                ("anthropic-ratelimit-tokens-reset", "2026-12-01T15:00:01Z"),
            ],
            "anthropic-ratelimit-tokens-limit",
        );
        rejected(
            &[
                ("anthropic-ratelimit-requests-remaining", "1"),
                ("anthropic-ratelimit-requests-reset", "2026-12-01T16:00:00Z"),
            ],
            "anthropic-ratelimit-requests-reset",
        );
        rejected(
            &[
                ("anthropic-ratelimit-requests-remaining", "1"),
                ("anthropic-ratelimit-requests-reset", "tomorrow"),
            ],
            "does not parse",
        );
        rejected(
            &[
                ("x-ratelimit-remaining", "1"),
                ("x-ratelimit-reset", "18446744073709551615"),
            ],
            "x-ratelimit-reset",
        );
        rejected(
            &[
                ("x-ratelimit-remaining", "1"),
                ("x-ratelimit-reset", "-1700000000000"),
            ],
            "does not parse",
        );
    }

    #[test]
    fn a_bad_window_leaves_the_good_one_and_a_long_value_is_not_echoed() {
        let long = "9".repeat(5000);
        let h = headers(&[
            ("x-ratelimit-limit-requests", "60"),
            ("x-ratelimit-remaining-requests", &long),
            ("x-ratelimit-reset-requests", "1s"),
            ("x-ratelimit-limit-tokens", "1000"),
            ("x-ratelimit-remaining-tokens", "10"),
            ("x-ratelimit-reset-tokens", "20ms"),
        ]);
        let (info, warning) = parse(&h, now());
        assert_eq!(
            info,
            Some(RateLimitInfo {
                requests: None,
                tokens: Some(w(Some(1000), 10, 20)),
            })
        );
        let warning = warning.unwrap();
        assert!(warning.len() < 300, "{warning}");
        assert!(
            warning.contains("x-ratelimit-remaining-requests"),
            "{warning}"
        );
    }

    #[test]
    fn many_repeated_headers_read_the_first_only() {
        let mut h = headers(&[
            ("x-ratelimit-remaining-requests", "5"),
            ("x-ratelimit-reset-requests", "1s"),
        ]);
        for i in 0..10_000 {
            h.append(
                "x-ratelimit-remaining-requests",
                i.to_string().parse().unwrap(),
            );
            h.append(
                reqwest::header::HeaderName::from_bytes(format!("x-junk-{i}").as_bytes()).unwrap(),
                "x".parse().unwrap(),
            );
        }
        assert_eq!(parse(&h, now()).0.unwrap().requests, Some(w(None, 5, 1000)));
    }
}
