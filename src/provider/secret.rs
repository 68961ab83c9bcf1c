//! API keys: read only from the environment variable a route names, never printed.

use crate::config::{ProviderKind, Route};
use crate::error::Error;
use std::fmt;

/// An API key. Its Debug and Display say `[redacted]`; only the HTTP layer sees the text.
#[derive(Clone)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key read by the caller (warden itself reads keys only through [`load`]).
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// Replaces any occurrence of the key in `text` (a provider may echo it in an error).
    pub(crate) fn redact(&self, text: &str) -> String {
        if self.0.len() >= 4 && text.contains(&self.0) {
            text.replace(&self.0, "[redacted]")
        } else {
            text.to_string()
        }
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// The default endpoint of each HTTP provider.
pub fn default_base_url(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::OpenAi => "https://api.openai.com/v1",
        ProviderKind::OpenRouter => "https://openrouter.ai/api/v1",
        ProviderKind::Anthropic => "https://api.anthropic.com/v1",
        ProviderKind::Sim => "sim://",
    }
}

/// Whether `url` points at this machine (then a missing key is allowed: local gateways
/// and test servers often need none).
pub fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host = rest.split(['/', '?']).next().unwrap_or("");
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    host == "localhost"
        || host == "::1"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Reads the route's key from its environment variable.
pub fn load(route: &Route) -> Result<Option<ApiKey>, Error> {
    if route.provider == ProviderKind::Sim {
        return Ok(None);
    }
    let base = route
        .base_url
        .as_deref()
        .unwrap_or(default_base_url(route.provider));
    let var = route.api_key_env.as_deref().unwrap_or("");
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => Ok(Some(ApiKey(v.trim().to_string()))),
        _ if is_loopback(base) => Ok(None),
        _ => Err(Error::MissingKey {
            route: route.name.clone(),
            var: var.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        assert!(is_loopback("http://127.0.0.1:4000/v1"));
        assert!(is_loopback("http://localhost/v1"));
        assert!(is_loopback("http://[::1]:8080"));
        assert!(!is_loopback("https://openrouter.ai/api/v1"));
        assert!(!is_loopback("http://10.0.0.1/v1"));
    }

    #[test]
    fn debug_and_display_never_show_the_key() {
        let k = ApiKey("sk-canary-123".into());
        assert!(!format!("{k:?} {k}").contains("canary"));
        assert_eq!(k.redact("bad key sk-canary-123"), "bad key [redacted]");
    }
}
