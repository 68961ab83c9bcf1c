//! Whether a URL points at this machine, decided once from the parsed URL (docs/design.md §13,
//! "Bounds"). Matching the string let `127.1`, `LOCALHOST` and `localhost.` through a
//! proxy with the key; the URL parser already normalises all three, so the answer comes
//! from the host it parsed. Every "is it local" question in warden asks here: a missing
//! key is allowed (`provider::secret::load`) and no proxy is used (`provider::tls`).

use reqwest::Url;
use std::net::IpAddr;

/// Whether `url`'s host is a loopback address: 127.0.0.0/8, ::1, or `localhost` in any
/// case, with or without a trailing dot (docs/design.md §13's list, nothing more).
pub(crate) fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return is_loopback_ip(ip);
    }
    let name = host.strip_suffix('.').unwrap_or(host);
    name.eq_ignore_ascii_case("localhost")
}

/// [`is_loopback`] on text: a URL that does not parse is not local.
pub(crate) fn is_loopback_str(url: &str) -> bool {
    Url::parse(url.trim()).is_ok_and(|u| is_loopback(&u))
}

fn is_loopback_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback(),
    }
}

/// `url` as it may be shown in a message: any `user:password@` before the host is
/// replaced with `…@`, so an error about a URL never echoes a credential in it.
pub fn shown(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (format!("{s}://"), r),
        None => (String::new(), url),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{scheme}…{}", &rest[at..]),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_decided_from_the_parsed_host() {
        for local in [
            "http://127.0.0.1:4000/v1",
            "http://127.1:4000/v1",
            "http://127.255.255.254/v1",
            "http://2130706433/v1",
            "http://0x7f.1/v1",
            "http://localhost/v1",
            "http://LOCALHOST:8080/v1",
            "http://LocalHost./v1",
            "http://localhost.:9/v1",
            "http://[::1]:8080",
            "http://[0:0:0:0:0:0:0:1]/v1",
            "https://127.0.0.1/v1",
        ] {
            assert!(is_loopback_str(local), "{local}");
        }
        for remote in [
            "https://openrouter.ai/api/v1",
            "http://10.0.0.1/v1",
            "http://128.0.0.1/v1",
            "http://localhost.example.com/v1",
            "http://mylocalhost/v1",
            "http://localhost..evil/v1",
            "http://[::2]/v1",
            "http://127.0.0.1.nip.io/v1",
            "not a url",
            "",
        ] {
            assert!(!is_loopback_str(remote), "{remote}");
        }
    }

    #[test]
    fn shown_hides_userinfo_and_nothing_else() {
        assert_eq!(
            shown("http://user:pw@127.0.0.1:9/v1"),
            "http://…@127.0.0.1:9/v1"
        );
        assert_eq!(shown("http://a:b@c@host/v1?x=@"), "http://…@host/v1?x=@");
        assert_eq!(shown("http://host/v1?x=@y"), "http://host/v1?x=@y");
        assert_eq!(
            shown("https://api.openai.com/v1"),
            "https://api.openai.com/v1"
        );
    }
}
