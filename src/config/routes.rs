//! `[[routes]]` → [`Route`]s, and Warden's `[defaults] model = "provider/model"` as a
//! single route when the file has none.

use super::ctx::Ctx;
use super::raw::{RawRoute, S};
use super::route_settings::*;
use crate::error::Error;

/// Resolves the routes in file order (= failover order); names are unique.
pub(super) fn resolve_routes(
    raw: &[RawRoute],
    ctx: &Ctx,
    default_cap: usize,
) -> Result<Vec<Route>, Error> {
    let mut routes: Vec<Route> = Vec::new();
    for r in raw {
        let route = resolve_route(r, ctx, default_cap)?;
        if routes.iter().any(|x| x.name == route.name) {
            return Err(ctx.err(
                &r.name,
                format!(
                    "route name `{}` is used twice: give each [[routes]] entry its own name",
                    route.name
                ),
            ));
        }
        routes.push(route);
    }
    Ok(routes)
}

fn resolve_route(r: &RawRoute, ctx: &Ctx, default_cap: usize) -> Result<Route, Error> {
    let name = r.name.get_ref().trim().to_string();
    if name.is_empty() {
        return Err(ctx.err(&r.name, "routes.name: must not be empty"));
    }
    let provider = ProviderKind::parse(r.provider.get_ref()).ok_or_else(|| {
        ctx.err(
            &r.provider,
            format!(
                "route `{name}`: unknown provider `{}`: expected one of {}",
                r.provider.get_ref(),
                ProviderKind::NAMES
            ),
        )
    })?;
    let model = match (&r.model, provider) {
        (Some(m), _) if !m.get_ref().trim().is_empty() => m.get_ref().trim().to_string(),
        (_, ProviderKind::Sim) => "sim-reviewer".to_string(),
        (Some(m), _) => return Err(ctx.err(m, format!("route `{name}`: model must not be empty"))),
        (None, _) => {
            return Err(ctx.err(
                &r.name,
                format!(
                    "route `{name}`: missing `model` (for example model = \"{}\")",
                    example_model(provider)
                ),
            ));
        }
    };
    let mut route = Route::new(&name, provider, &model, default_cap);
    if let Some(v) = &r.api_key_env {
        route.api_key_env = Some(v.get_ref().clone());
    }
    if let Some(c) = &r.max_concurrency {
        (route.max_concurrency, route.auto_concurrency) = max_concurrency(c, &name, ctx)?;
    }
    route.stream = r.stream.unwrap_or(true);
    if let Some(t) = &r.max_tokens {
        route.max_tokens = ctx.positive(t, &format!("route `{name}` maxTokens"))?;
    }
    if let Some(t) = &r.max_tokens_ceiling {
        let key = format!("route `{name}` maxTokensCeiling");
        let ceiling = ctx.positive(t, &key)?;
        if ceiling < route.max_tokens {
            return Err(ctx.err(
                t,
                format!(
                    "{key}: {ceiling} is below maxTokens ({}): write a ceiling at least as high, or lower maxTokens",
                    route.max_tokens
                ),
            ));
        }
        route.max_tokens_ceiling = Some(ceiling);
    }
    route.base_url = r
        .base_url
        .as_ref()
        .map(|u| base_url(u, &name, ctx))
        .transpose()?;
    route.sim = sim_options(r, &name, ctx)?;
    if let Some(c) = &r.ca_cert {
        route.ca_cert = Some(super::ca_cert::load(c, ctx, &name)?);
    }
    route.spill = r.spill.unwrap_or(true);
    if let Some(c) = &r.fleet_max_concurrency {
        route.fleet_max_concurrency =
            Some(ctx.positive(c, &format!("route `{name}` fleetMaxConcurrency"))? as usize);
    }
    route.prices = match (&r.input_price, &r.output_price) {
        (None, None) => None,
        (i, o) => {
            let usd = |v: &Option<S<f64>>, key: &str| {
                v.as_ref()
                    .map(|v| ctx.usd(v, &format!("route `{name}` {key}")))
                    .transpose()
                    .map(|x| x.unwrap_or(0.0))
            };
            Some(Prices {
                input: usd(i, "inputPrice")?,
                output: usd(o, "outputPrice")?,
                ..Prices::default()
            })
        }
    };
    super::route_wire::resolve(r, ctx, &mut route)?;
    if provider.is_local() {
        // docs/design.md §15: what the config leaves open, the server says.
        route.from_server = FromServer {
            slots: r.max_concurrency.is_none(),
            window: r.context_window.is_none(),
            max_tokens: r.max_tokens.is_none(),
        };
        if r.max_tokens.is_none() {
            route.max_tokens = LOCAL_MAX_TOKENS;
        }
    }
    Ok(route)
}

/// `maxConcurrency`: a whole number from 1 to [`MAX_CONCURRENCY`], or `"auto"` for a
/// ceiling of [`AUTO_CONCURRENCY`]. Either way it is the ceiling the route's effective
/// limit adapts under (docs/design.md section 13); the flag says which was written.
fn max_concurrency(v: &S<toml::Value>, route: &str, ctx: &Ctx) -> Result<(usize, bool), Error> {
    match v.get_ref() {
        toml::Value::String(s) if s == "auto" => return Ok((AUTO_CONCURRENCY, true)),
        toml::Value::Integer(n) if (1..=MAX_CONCURRENCY as i64).contains(n) => {
            return Ok((*n as usize, false));
        }
        _ => {}
    }
    let written = match v.get_ref() {
        toml::Value::String(s) => format!("{:?}", s.chars().take(40).collect::<String>()),
        other => other.to_string().chars().take(40).collect(),
    };
    Err(ctx.err(
        v,
        format!(
            "route `{route}` maxConcurrency: {written} is not a ceiling: write a whole number from 1 to {MAX_CONCURRENCY} (for example maxConcurrency = 4), or \"auto\" for {AUTO_CONCURRENCY} with the limit found under it"
        ),
    ))
}

/// A `baseUrl` must be an http(s) URL that parses (a space in it is an error here, not a
/// panic when the first request is built). Credentials in it (`user:pw@`) are refused
/// without being echoed: the key comes from `apiKeyEnv`, and userinfo would send a second
/// Authorization header. A query string or fragment is refused too: warden appends the
/// endpoint's path, which would splice it into the path (docs/design.md §13, "Bounds").
fn base_url(u: &S<String>, route: &str, ctx: &Ctx) -> Result<String, Error> {
    let url = u.get_ref().trim();
    let shown = super::url::shown(url);
    let example = "write it like \"http://127.0.0.1:4000/v1\"";
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(ctx.err(
            u,
            format!("route `{route}`: baseUrl `{shown}` must start with http:// or https://"),
        ));
    }
    if shown != url {
        return Err(ctx.err(
            u,
            format!("route `{route}`: baseUrl must not hold a user name or password (`{shown}`): remove them and give the key through apiKeyEnv"),
        ));
    }
    let parsed = reqwest::Url::parse(url).map_err(|e| {
        ctx.err(
            u,
            format!("route `{route}`: baseUrl `{shown}` is not a valid URL ({e}): {example}"),
        )
    })?;
    if parsed.host_str().is_none_or(str::is_empty) || url.contains(char::is_whitespace) {
        return Err(ctx.err(
            u,
            format!("route `{route}`: baseUrl `{shown}` is not a valid URL (no host, or white space in it): {example}"),
        ));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(ctx.err(
            u,
            format!("route `{route}`: baseUrl must not hold a user name or password: remove them and give the key through apiKeyEnv"),
        ));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(ctx.err(
            u,
            format!(
                "route `{route}`: baseUrl `{}` must not have a query string or fragment (`?…`, `#…`; not shown): warden appends the endpoint's path to it; give the key through apiKeyEnv",
                shown.split(['?', '#']).next().unwrap_or("")
            ),
        ));
    }
    Ok(url.trim_end_matches('/').to_string())
}

fn sim_options(r: &RawRoute, name: &str, ctx: &Ctx) -> Result<SimOptions, Error> {
    let mut sim = SimOptions::default();
    if let Some(p) = &r.profile {
        let known = super::SIM_PROFILES;
        if !known.contains(&p.get_ref().as_str()) {
            return Err(ctx.err(
                p,
                format!(
                    "route `{name}`: unknown sim profile `{}`: expected one of {}",
                    p.get_ref(),
                    known.join(", ")
                ),
            ));
        }
        sim.profile = p.get_ref().clone();
    }
    if let Some(t) = &r.time_scale {
        if !(*t.get_ref() >= 1.0 && t.get_ref().is_finite()) {
            return Err(ctx.err(
                t,
                format!("route `{name}`: timeScale must be a number >= 1 (60 plays a minute in a second)"),
            ));
        }
        sim.time_scale = *t.get_ref();
    }
    if let Some(seed) = r.seed {
        sim.seed = seed;
    }
    if let Some(c) = &r.capacity {
        sim.capacity = ctx.positive(c, &format!("route `{name}` capacity"))?;
    }
    Ok(sim)
}

/// Warden's `[defaults] model = "provider/model"` as a single route.
pub(super) fn route_from_selector(
    m: &S<String>,
    ctx: &Ctx,
    cap: usize,
    warnings: &mut Vec<String>,
) -> Result<Route, Error> {
    let sel = m.get_ref().trim();
    let (provider, model) = match sel.split_once('/') {
        Some((p, rest)) if ProviderKind::parse(p).is_some() && !rest.is_empty() => {
            (ProviderKind::parse(p).expect("checked"), rest.to_string())
        }
        _ if !sel.is_empty() => {
            warnings.push(format!(
                "defaults.model `{sel}` names no known provider prefix ({}); using it as an OpenRouter model id",
                ProviderKind::NAMES
            ));
            (ProviderKind::OpenRouter, sel.to_string())
        }
        _ => return Err(ctx.err(m, "defaults.model: must not be empty")),
    };
    Ok(Route::new("default", provider, &model, cap))
}

/// A model the provider serves, for the missing-`model` message: an OpenAI route is not
/// told to use a Claude model (the README's routes use the same names).
fn example_model(provider: ProviderKind) -> &'static str {
    match provider {
        ProviderKind::OpenAi => "gpt-5-mini",
        ProviderKind::OpenRouter => "moonshotai/kimi-k2.6",
        ProviderKind::Anthropic | ProviderKind::Sim => "claude-sonnet-4-5",
        ProviderKind::LiteLlm => "claude-sonnet",
        ProviderKind::LlamaCpp => "local",
        ProviderKind::Ollama => "qwen2.5-coder:7b",
        ProviderKind::Vllm => "Qwen/Qwen2.5-Coder-7B-Instruct",
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{AUTO_CONCURRENCY, parse_str};
    use std::path::Path;

    fn route(cap: &str) -> crate::Result<crate::config::Settings> {
        parse_str(
            &format!(
                "version = 1\n[[routes]]\nname = \"a\"\nprovider = \"openai\"\nmodel = \"m\"\nmaxConcurrency = {cap}\n"
            ),
            Path::new("warden.toml"),
        )
    }

    #[test]
    fn max_concurrency_is_a_number_or_auto() {
        let s = route("\"auto\"").unwrap();
        assert_eq!(
            (s.routes[0].max_concurrency, s.routes[0].auto_concurrency),
            (AUTO_CONCURRENCY, true)
        );
        let s = route("8").unwrap();
        assert_eq!(
            (s.routes[0].max_concurrency, s.routes[0].auto_concurrency),
            (8, false)
        );
        assert_eq!(route("1024").unwrap().routes[0].max_concurrency, 1024);
    }

    #[test]
    fn a_bad_max_concurrency_names_the_line_and_the_fix() {
        for (bad, shown) in [
            ("\"fast\"", "\"fast\""),
            ("\"Auto\"", "\"Auto\""),
            ("0", "0"),
            ("-1", "-1"),
            ("1e9", "1000000000.0"),
            ("1000000000", "1000000000"),
            ("1025", "1025"),
            ("4.5", "4.5"),
            ("true", "true"),
            ("[4]", "[4]"),
        ] {
            let e = route(bad).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!(
                    "warden.toml:6:18: route `a` maxConcurrency: {shown} is not a ceiling"
                )),
                "{bad}: {e}"
            );
            assert!(e.contains("\"auto\""), "{e}");
        }
    }

    #[test]
    fn a_sim_route_s_capacity_is_n_of_its_load_profile() {
        let src = |c: &str| {
            format!(
                "version = 1\n[[routes]]\nname = \"a\"\nprovider = \"sim\"\nprofile = \"limited\"\n{c}"
            )
        };
        let s = parse_str(&src("capacity = 8\n"), Path::new("warden.toml")).unwrap();
        assert_eq!(
            (s.routes[0].sim.profile.as_str(), s.routes[0].sim.capacity),
            ("limited", 8)
        );
        let s = parse_str(&src(""), Path::new("warden.toml")).unwrap();
        assert_eq!(
            s.routes[0].sim.capacity,
            crate::config::SIM_DEFAULT_CAPACITY
        );
        let e = parse_str(&src("capacity = 0\n"), Path::new("warden.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("warden.toml:6:12: route `a` capacity: must be at least 1"),
            "{e}"
        );
    }

    #[test]
    fn a_missing_model_is_told_a_model_of_its_provider() {
        let e = |provider: &str| {
            let src = format!(
                "version = 1\n[[routes]]\nname = \"a\"\nprovider = \"{provider}\"\napiKeyEnv = \"K\"\n"
            );
            parse_str(&src, Path::new("warden.toml"))
                .unwrap_err()
                .to_string()
        };
        let openai = e("openai");
        assert!(openai.contains("model = \"gpt-5-mini\""), "{openai}");
        assert!(!openai.contains("claude"), "{openai}");
        assert!(e("anthropic").contains("claude-sonnet-4-5"));
        assert!(e("openrouter").contains("moonshotai/kimi-k2.6"));
    }
}
