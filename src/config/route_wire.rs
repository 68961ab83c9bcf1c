//! A route's keys for current models (docs/design.md §14): `reasoningEffort`, `params`,
//! `structuredOutput`, `contextWindow`, and the cache prices `cachedInputPrice` /
//! `cacheWritePrice`. Each bad value names its file, line and column.

use super::ctx::Ctx;
use super::raw::{RawRoute, S};
use super::route_settings::*;
use crate::error::Error;

/// Keys `params` may not set: warden builds them, and a table that replaced them would
/// send another prompt or another model than the review asked for.
const RESERVED: &[&str] = &["model", "messages", "system", "stream"];

/// Fills the current-model keys of `route` from its raw table.
pub(super) fn resolve(r: &RawRoute, ctx: &Ctx, route: &mut Route) -> Result<(), Error> {
    let name = route.name.clone();
    if let Some(e) = &r.reasoning_effort {
        let v = e.get_ref().trim();
        if !REASONING_EFFORTS.contains(&v) {
            return Err(ctx.err(
                e,
                format!(
                    "route `{name}` reasoningEffort: `{}` is not an effort: expected one of {}",
                    v.chars().take(40).collect::<String>(),
                    REASONING_EFFORTS.join(", ")
                ),
            ));
        }
        if !matches!(
            route.provider,
            ProviderKind::OpenAi | ProviderKind::OpenRouter | ProviderKind::LiteLlm
        ) {
            return Err(ctx.err(
                e,
                format!(
                    "route `{name}` reasoningEffort: applies to openai, openrouter and litellm routes; for {} use `params` (for example params = {{ thinking = {{ type = \"enabled\", budget_tokens = 2048 }} }})",
                    route.provider.as_str()
                ),
            ));
        }
        route.reasoning_effort = Some(v.to_string());
    }
    if let Some(p) = &r.params {
        route.params = params(p, &name, ctx)?;
    }
    if let Some(s) = &r.structured_output {
        route.structured_output = match s.get_ref().trim() {
            "auto" => StructuredOutput::Auto,
            "off" => StructuredOutput::Off,
            other => {
                return Err(ctx.err(
                    s,
                    format!(
                        "route `{name}` structuredOutput: `{}` is not a choice: write \"auto\" (the provider's schema enforcement where it takes it) or \"off\" (the text contract only)",
                        other.chars().take(40).collect::<String>()
                    ),
                ));
            }
        };
    }
    if let Some(w) = &r.context_window {
        let tokens = ctx.positive(w, &format!("route `{name}` contextWindow"))?;
        if tokens < MIN_CONTEXT_WINDOW {
            return Err(ctx.err(
                w,
                format!(
                    "route `{name}` contextWindow: {tokens} tokens cannot hold a prompt: write the model's window in tokens, at least {MIN_CONTEXT_WINDOW} (for example contextWindow = 128000)"
                ),
            ));
        }
        if tokens <= route.max_tokens {
            return Err(ctx.err(
                w,
                format!(
                    "route `{name}` contextWindow: {tokens} tokens leave no room for a prompt beside the answer cap (maxTokens = {}): the window holds the prompt and the answer; write the model's whole window, or lower maxTokens",
                    route.max_tokens
                ),
            ));
        }
        route.context_window = Some(tokens);
    }
    let cache_prices = (&r.cached_input_price, &r.cache_write_price);
    if cache_prices.0.is_some() || cache_prices.1.is_some() {
        let usd = |v: &Option<S<f64>>, key: &str| {
            v.as_ref()
                .map(|v| ctx.usd(v, &format!("route `{name}` {key}")))
                .transpose()
        };
        let cached = usd(cache_prices.0, "cachedInputPrice")?;
        let write = usd(cache_prices.1, "cacheWritePrice")?;
        let prices = route.prices.get_or_insert_with(Prices::default);
        prices.cached_input = cached;
        prices.cache_write = write;
    }
    Ok(())
}

/// The smallest `contextWindow` taken: below it no prompt warden writes fits.
pub(crate) const MIN_CONTEXT_WINDOW: u32 = 1024;

/// `params`: a TOML table, as JSON, without the keys warden builds.
fn params(
    p: &S<toml::Value>,
    route: &str,
    ctx: &Ctx,
) -> Result<serde_json::Map<String, serde_json::Value>, Error> {
    let toml::Value::Table(t) = p.get_ref() else {
        return Err(ctx.err(
            p,
            format!("route `{route}` params: must be a table of request fields (for example params = {{ top_p = 0.9 }})"),
        ));
    };
    if let Some(k) = t.keys().find(|k| RESERVED.contains(&k.as_str())) {
        return Err(ctx.err(
            p,
            format!(
                "route `{route}` params: `{k}` is built by warden and cannot be set here (reserved: {})",
                RESERVED.join(", ")
            ),
        ));
    }
    Ok(t.iter().map(|(k, v)| (k.clone(), json_of(v))).collect())
}

/// A TOML value as JSON (dates as their text).
fn json_of(v: &toml::Value) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        toml::Value::String(s) => J::String(s.clone()),
        toml::Value::Integer(i) => J::from(*i),
        toml::Value::Float(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
        toml::Value::Boolean(b) => J::Bool(*b),
        toml::Value::Datetime(d) => J::String(d.to_string()),
        toml::Value::Array(a) => J::Array(a.iter().map(json_of).collect()),
        toml::Value::Table(t) => {
            J::Object(t.iter().map(|(k, v)| (k.clone(), json_of(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{StructuredOutput, parse_str};
    use std::path::Path;

    fn route(extra: &str, provider: &str) -> crate::Result<crate::config::Settings> {
        parse_str(
            &format!(
                "version = 1\n[[routes]]\nname = \"a\"\nprovider = \"{provider}\"\nmodel = \"o4-mini\"\n{extra}\n"
            ),
            Path::new("warden.toml"),
        )
    }

    #[test]
    fn current_model_keys_resolve() {
        let s = route(
            "reasoningEffort = \"high\"\nstructuredOutput = \"off\"\ncontextWindow = 8192\ninputPrice = 2.0\ncachedInputPrice = 0.5\nparams = { top_p = 0.9, reasoning = { effort = \"low\" } }",
            "openai",
        )
        .unwrap();
        let r = &s.routes[0];
        assert_eq!(r.reasoning_effort.as_deref(), Some("high"));
        assert_eq!(r.structured_output, StructuredOutput::Off);
        assert_eq!(r.context_window, Some(8192));
        let p = r.prices.unwrap();
        assert_eq!(
            (p.input, p.cached_input, p.cache_write),
            (2.0, Some(0.5), None)
        );
        assert_eq!(r.params["top_p"], 0.9);
        assert_eq!(r.params["reasoning"]["effort"], "low");
        let d = route("", "openai").unwrap();
        assert_eq!(d.routes[0].structured_output, StructuredOutput::Auto);
        assert!(d.routes[0].params.is_empty());
    }

    #[test]
    fn bad_values_name_the_line_and_the_fix() {
        for (extra, provider, want) in [
            (
                "reasoningEffort = \"max\"",
                "openai",
                "warden.toml:6:19: route `a` reasoningEffort: `max` is not an effort",
            ),
            (
                "reasoningEffort = \"low\"",
                "anthropic",
                "warden.toml:6:19: route `a` reasoningEffort: applies to openai",
            ),
            (
                "structuredOutput = \"on\"",
                "openai",
                "warden.toml:6:20: route `a` structuredOutput: `on` is not a choice",
            ),
            (
                "contextWindow = 0",
                "openai",
                "warden.toml:6:17: route `a` contextWindow: must be at least 1",
            ),
            (
                "contextWindow = 100",
                "openai",
                "warden.toml:6:17: route `a` contextWindow: 100 tokens cannot hold a prompt",
            ),
            (
                "contextWindow = 4096",
                "openai",
                "warden.toml:6:17: route `a` contextWindow: 4096 tokens leave no room for a prompt beside the answer cap (maxTokens = 4096)",
            ),
            (
                "params = 3",
                "openai",
                "warden.toml:6:10: route `a` params: must be a table",
            ),
            (
                "params = { messages = [] }",
                "openai",
                "warden.toml:6:10: route `a` params: `messages` is built by warden",
            ),
            (
                "cacheWritePrice = -1.0",
                "openai",
                "warden.toml:6:19: route `a` cacheWritePrice: must be an amount",
            ),
        ] {
            let e = route(extra, provider).unwrap_err().to_string();
            assert!(e.starts_with(want), "{extra}: {e}");
        }
    }
}
