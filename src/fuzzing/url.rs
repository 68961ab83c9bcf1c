//! A route's `baseUrl` as config validation reads it (`[[routes]] baseUrl`), then as
//! the provider decides on it. Whatever the text:
//! - no panic; a refusal is a config error that never echoes a password written in it;
//! - an accepted URL parses, is http(s), and carries no userinfo (it would be sent as a
//!   second Authorization header), no query and no fragment (spliced into the path when
//!   the endpoint is appended);
//! - the loopback decision (a missing key allowed, proxies bypassed) is the parsed
//!   host's: 127.0.0.0/8, ::1, `localhost` in any case with or without a trailing dot,
//!   so `http://127.1:4000` and `http://LOCALHOST.:4000` are loopback and
//!   `http://localhost.evil.example` is not.

use crate::config;
use crate::config::url::is_loopback_str as is_loopback;
use std::path::Path;

/// Reads `data` as the `baseUrl` of a route in an otherwise valid config and checks the
/// result.
pub fn check(data: &[u8]) {
    let raw = String::from_utf8_lossy(data);
    let quoted = toml::Value::String(raw.to_string()).to_string();
    let text = format!(
        "version = 1\n[[routes]]\nname = \"r\"\nprovider = \"openai\"\nmodel = \"m\"\nbaseUrl = {quoted}\n"
    );
    let path = Path::new("fuzz/warden.toml");
    match config::parse_str(&text, path) {
        Ok(s) => {
            let base = s.routes[0].base_url.as_deref().expect("baseUrl kept");
            accepted(base);
        }
        Err(e) => {
            let shown = e.to_string();
            if let Some(pw) = password(&raw) {
                assert!(
                    !shown.contains(pw),
                    "the refusal echoes the password {pw:?}: {shown}"
                );
            }
        }
    }
}

/// What an accepted `baseUrl` promises.
fn accepted(base: &str) {
    let url = reqwest::Url::parse(base).unwrap_or_else(|e| panic!("{base}: {e}"));
    assert!(
        matches!(url.scheme(), "http" | "https"),
        "{base}: scheme {}",
        url.scheme()
    );
    assert!(
        url.username().is_empty() && url.password().is_none(),
        "{base}: userinfo accepted (sent as a second Authorization header)"
    );
    assert!(
        url.query().is_none() && url.fragment().is_none(),
        "{base}: a query or fragment accepted (the endpoint is appended after it)"
    );
    assert_eq!(
        is_loopback(base),
        loopback(&url),
        "{base}: the loopback decision differs from the parsed host {:?}",
        url.host_str()
    );
}

/// The oracle: loopback as the parsed host says (the URL parser has already turned
/// `127.1` or `0x7f.1` into `127.0.0.1` and lowercased names).
fn loopback(url: &reqwest::Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return v6
            .parse::<std::net::Ipv6Addr>()
            .is_ok_and(|ip| ip.is_loopback());
    }
    if let Ok(ip) = host.parse::<std::net::Ipv4Addr>() {
        return ip.is_loopback();
    }
    host.strip_suffix('.')
        .unwrap_or(host)
        .eq_ignore_ascii_case("localhost")
}

/// The password of `http(s)://user:PASSWORD@host` in `raw`, read off the text (the URL
/// may not parse), when it can be told apart from other text: at least 4 bytes, and
/// nowhere else in `raw` (text echoed from elsewhere in a refused value is no leak).
fn password(raw: &str) -> Option<&str> {
    let t = raw.trim();
    let rest = t
        .strip_prefix("http://")
        .or_else(|| t.strip_prefix("https://"))?;
    let authority = rest.split(['/', '?', '#', '\\']).next()?;
    let userinfo = authority.rsplit_once('@')?.0;
    let pw = userinfo.split_once(':')?.1;
    (pw.len() >= 4 && raw.matches(pw).count() == 1).then_some(pw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oracle_reads_hosts_as_parsed() {
        let l = |u: &str| loopback(&reqwest::Url::parse(u).unwrap());
        assert!(l("http://127.1:4000/v1"));
        assert!(l("http://LOCALHOST.:4000/v1"));
        assert!(l("http://[::1]/v1"));
        assert!(l("http://127.255.0.9/"));
        assert!(!l("http://localhost.evil.example/v1"));
        assert!(!l("http://128.0.0.1/"));
        assert_eq!(password("http://u:hunter2@h/v1"), Some("hunter2"));
        assert_eq!(password("http://u:hunter2@h st"), Some("hunter2"));
        assert_eq!(password("http://h/v1?x=a:b@c"), None);
        // Found by the `url` target: the same bytes after the `@` are not the password
        // echoed, nor is a "password" in text that is no http(s) URL.
        assert_eq!(password("http://u:\0\0\0\0@ \0\0\0\0//h"), None);
        assert_eq!(password("ht::up://0:::1x@ph"), None);
    }

    /// Inputs that keep the invariants today.
    #[test]
    fn plain_urls_keep_the_invariants() {
        for u in [
            "http://127.0.0.1:4000/v1",
            "https://openrouter.ai/api/v1",
            "http://[::1]:8080",
            "http://localhost:4000/v1/",
            "ftp://x/v1",
            "http://ho st/v1",
            "",
        ] {
            check(u.as_bytes());
        }
    }
}
