//! What a route is across processes: its upstream (provider, base URL host, model). Two
//! jobs that call the same model at the same endpoint share breakers and permits whatever
//! they name the route locally; the same local name on different endpoints does not.

use crate::config::Route;
use crate::provider::secret::default_base_url;

/// A route's identity across processes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Upstream {
    /// The wire it speaks (`openai`, `anthropic`, …).
    pub provider: String,
    /// The endpoint's host, with its port when one is written (`api.openai.com`,
    /// `127.0.0.1:4000`).
    pub host: String,
    /// The model asked for.
    pub model: String,
}

impl Upstream {
    /// The upstream of a configured route (its `baseUrl`, else the provider's endpoint).
    pub fn of(route: &Route) -> Upstream {
        let base = route
            .base_url
            .as_deref()
            .unwrap_or(default_base_url(route.provider));
        let host = reqwest::Url::parse(base)
            .ok()
            .and_then(|u| {
                let host = u.host_str()?.to_ascii_lowercase();
                Some(match u.port() {
                    Some(p) => format!("{host}:{p}"),
                    None => host,
                })
            })
            .unwrap_or_else(|| base.to_string());
        Upstream {
            provider: route.provider.as_str().to_string(),
            host,
            model: route.model.clone(),
        }
    }
}

/// Escapes a key segment: `%`, `/`, `:`, white space and control characters become
/// `%XX`, so segments joined with `:` or `/` never run into each other.
pub fn escape(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    for c in part.chars() {
        if matches!(c, '%' | '/' | ':') || c.is_whitespace() || c.is_control() {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ProviderKind;

    #[test]
    fn routes_are_identified_by_provider_host_and_model_not_by_name() {
        let mut a = Route::new("primary", ProviderKind::OpenAi, "gpt-x", 4);
        let mut b = Route::new("fast", ProviderKind::OpenAi, "gpt-x", 2);
        assert_eq!(Upstream::of(&a), Upstream::of(&b));
        assert_eq!(Upstream::of(&a).host, "api.openai.com");
        a.base_url = Some("http://127.0.0.1:4000/v1".into());
        b.base_url = Some("http://127.0.0.1:4001/v1".into());
        assert_ne!(Upstream::of(&a), Upstream::of(&b));
        assert_eq!(Upstream::of(&a).host, "127.0.0.1:4000");
    }

    #[test]
    fn key_segments_cannot_run_into_each_other() {
        assert_eq!(escape("a/b:c d%"), "a%2Fb%3Ac%20d%25");
        assert_eq!(escape("gpt-4o"), "gpt-4o");
    }
}
