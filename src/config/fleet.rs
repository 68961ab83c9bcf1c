//! `[fleet]`: the Redis server warden processes share route health and capacity through.
//! The file may name the server, never its password: a password comes from the variable
//! `passwordEnv` names, or from `WARDEN_REDIS_URL` (both environment, set by whoever runs
//! the CI, like API keys).

use super::ctx::Ctx;
use super::raw::RawFleet;
use super::settings::{FleetSettings, RedisUrl};
use crate::error::Error;

/// The longest `namespace`: keys stay short and readable in `redis-cli`.
const MAX_NAMESPACE: usize = 64;

pub(super) fn resolve(raw: &RawFleet, ctx: &Ctx) -> Result<FleetSettings, Error> {
    let redis = match &raw.redis {
        Some(v) => {
            let url = RedisUrl::parse(v.get_ref())
                .map_err(|e| ctx.err(v, format!("fleet.redis: {e}")))?;
            if url.has_credentials() {
                return Err(ctx.err(
                    v,
                    "fleet.redis: the URL holds a user or password, which everyone who can read the repository would see: remove it and set `passwordEnv = \"WARDEN_REDIS_PASSWORD\"` (or give the whole URL in WARDEN_REDIS_URL)",
                ));
            }
            Some(url)
        }
        None => None,
    };
    let password_env = match &raw.password_env {
        Some(v) => {
            let name = v.get_ref().trim();
            let valid = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err(ctx.err(
                    v,
                    format!("fleet.passwordEnv: `{name}` is not an environment variable name: write it like \"WARDEN_REDIS_PASSWORD\""),
                ));
            }
            Some(name.to_string())
        }
        None => None,
    };
    let namespace = match &raw.namespace {
        Some(v) => {
            let ns = v.get_ref().trim();
            let valid = !ns.is_empty()
                && ns.len() <= MAX_NAMESPACE
                && ns.chars().all(|c| c.is_ascii_graphic());
            if !valid {
                return Err(ctx.err(
                    v,
                    format!("fleet.namespace: must be 1 to {MAX_NAMESPACE} printable ASCII characters without spaces (for example \"team-a\")"),
                ));
            }
            Some(ns.to_string())
        }
        None => None,
    };
    Ok(FleetSettings {
        redis,
        password_env,
        namespace,
        cache: raw.cache.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use crate::config::parse_str;
    use std::path::Path;

    fn parse(src: &str) -> crate::Result<crate::config::Settings> {
        parse_str(src, Path::new("warden.toml"))
    }

    #[test]
    fn fleet_table_and_route_cap_load() {
        let s = parse(
            "version = 1\n[fleet]\nredis = \"rediss://redis.example.com:6380/2\"\npasswordEnv = \"TEAM_REDIS_PW\"\nnamespace = \"team-a\"\ncache = true\n[[routes]]\nname = \"a\"\nprovider = \"openai\"\nmodel = \"m\"\nfleetMaxConcurrency = 3\n",
        )
        .unwrap();
        let f = &s.fleet;
        assert_eq!(
            f.redis.as_ref().map(|u| u.expose()),
            Some("rediss://redis.example.com:6380/2")
        );
        assert_eq!(f.password_env.as_deref(), Some("TEAM_REDIS_PW"));
        assert_eq!(f.namespace.as_deref(), Some("team-a"));
        assert!(f.cache);
        assert_eq!(s.routes[0].fleet_max_concurrency, Some(3));
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        let d = parse("version = 1\n").unwrap();
        assert_eq!(d.fleet, Default::default());
        assert!(!d.fleet.cache);
    }

    #[test]
    fn bad_fleet_values_name_the_key_and_line() {
        let cases = [
            (
                "[fleet]\nredis = \"http://127.0.0.1:6379\"\n",
                "3:9: fleet.redis:",
            ),
            ("[fleet]\nredis = \"redis://\"\n", "3:9: fleet.redis:"),
            (
                "[fleet]\nredis = \"redis://:hunter2@10.0.0.1\"\n",
                "3:9: fleet.redis: the URL holds",
            ),
            (
                "[fleet]\npasswordEnv = \"1 BAD\"\n",
                "3:15: fleet.passwordEnv:",
            ),
            (
                "[fleet]\nnamespace = \"two words\"\n",
                "3:13: fleet.namespace:",
            ),
            ("[fleet]\ncache = \"yes\"\n", "3:9:"),
            (
                "[[routes]]\nname = \"a\"\nprovider = \"openai\"\nmodel = \"m\"\nfleetMaxConcurrency = 0\n",
                "6:23: route `a` fleetMaxConcurrency: must be at least 1",
            ),
        ];
        for (body, want) in cases {
            let e = parse(&format!("version = 1\n{body}"))
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(&format!("warden.toml:{want}")), "{body}: {e}");
            assert!(!e.contains("hunter2"), "the password is never shown: {e}");
        }
    }

    #[test]
    fn redis_urls_are_shown_without_their_password() {
        let u = crate::config::RedisUrl::parse("redis://user:s3cret@10.0.0.1:6379/0").unwrap();
        assert!(u.has_credentials());
        for shown in [u.to_string(), format!("{u:?}")] {
            assert!(
                !shown.contains("s3cret") && !shown.contains("user"),
                "{shown}"
            );
            assert!(shown.contains("10.0.0.1:6379"), "{shown}");
        }
        let e = crate::config::RedisUrl::parse("redis://:s3cret@ bad host")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("s3cret"), "{e}");
    }
}
