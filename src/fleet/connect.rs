//! Which Redis the fleet uses and how it connects. `WARDEN_REDIS_URL` (set by whoever
//! runs the CI) wins over `[fleet] redis`; the password comes from the URL in that
//! variable or from the variable `[fleet] passwordEnv` names, never from the repository.

use super::budget::{Budgeted, ReadBudget};
use crate::config::{FleetSettings, RedisUrl, Settings};
use crate::error::Error;
use redis::AsyncConnectionConfig;
use redis::IntoConnectionInfo;
use redis::aio::MultiplexedConnection;
use std::time::Duration;

/// The variable that names the fleet's Redis, password included if needed.
pub(crate) const URL_ENV: &str = "WARDEN_REDIS_URL";

/// The server to connect to, and how keys are named there.
#[derive(Clone)]
pub struct Target {
    /// The server (shown without its password).
    pub url: RedisUrl,
    /// The password from `passwordEnv`: `Err` names the variable that is not set.
    pub password: Result<Option<String>, String>,
    /// `[fleet] namespace`.
    pub namespace: Option<String>,
    /// `[fleet] cache`.
    pub cache: bool,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("url", &self.url)
            .field(
                "password",
                &self.password.as_ref().map(|p| p.as_ref().map(|_| "***")),
            )
            .field("namespace", &self.namespace)
            .field("cache", &self.cache)
            .finish()
    }
}

/// The fleet target of these settings and this environment (`env` reads a variable);
/// None when neither `[fleet] redis` nor `WARDEN_REDIS_URL` names a server. A
/// `WARDEN_REDIS_URL` that is not a Redis URL is a usage error (exit 2).
pub fn target(
    settings: &FleetSettings,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<Target>, Error> {
    let from_env = env(URL_ENV).filter(|v| !v.trim().is_empty());
    let url = match from_env {
        Some(v) => RedisUrl::parse(&v).map_err(|e| Error::Usage(format!("{URL_ENV}: {e}")))?,
        None => match &settings.redis {
            Some(u) => u.clone(),
            None => return Ok(None),
        },
    };
    let password = match &settings.password_env {
        Some(var) => match env(var).filter(|v| !v.is_empty()) {
            Some(p) => Ok(Some(p)),
            None => Err(format!(
                "[fleet] passwordEnv names {var}, which is not set: export the Redis password in it"
            )),
        },
        None => Ok(None),
    };
    Ok(Some(Target {
        url,
        password,
        namespace: settings.namespace.clone(),
        cache: settings.cache,
    }))
}

/// The warning when routes set `fleetMaxConcurrency` but no server is named (neither
/// `[fleet] redis` nor `WARDEN_REDIS_URL`): the caps cannot apply, each process keeps only
/// its `maxConcurrency`. Not an error: a CI job without the secret still reviews.
pub fn unused_caps_warning(settings: &Settings, server_named: bool) -> Option<String> {
    if server_named {
        return None;
    }
    let routes: Vec<String> = settings
        .routes
        .iter()
        .filter(|r| r.fleet_max_concurrency.is_some())
        .map(|r| format!("`{}`", r.name))
        .collect();
    (!routes.is_empty()).then(|| {
        format!(
            "fleet: route {} sets fleetMaxConcurrency, but no Redis is named ([fleet] redis or {URL_ENV}): each process keeps only its own maxConcurrency",
            routes.join(", ")
        )
    })
}

/// Every form of the password `target` connects with, to scrub from messages: the one
/// from `passwordEnv`, and the URL's as written (percent-encoded) and decoded (as sent in
/// AUTH, which a server or the client library may echo in an error).
pub(super) fn secrets(target: &Target) -> Vec<String> {
    let mut out: Vec<String> = target.password.clone().ok().flatten().into_iter().collect();
    if let Ok(u) = reqwest::Url::parse(target.url.expose())
        && let Some(raw) = u.password()
    {
        out.push(raw.to_string());
        if let Ok(info) = target.url.expose().into_connection_info()
            && let Some(p) = info.redis_settings().password()
        {
            out.push(p.to_string());
        }
    }
    out.retain(|s| !s.is_empty());
    // Longest first, so a password that contains another is replaced whole.
    out.sort_by_key(|s| std::cmp::Reverse(s.len()));
    out.dedup();
    out
}

/// `text` with every one of `secrets` replaced by `***`.
pub(super) fn scrub(text: &str, secrets: &[String]) -> String {
    secrets
        .iter()
        .fold(text.to_string(), |t, s| t.replace(s.as_str(), "***"))
}

/// The connection [`open`] made: cheap to clone, and the task that drives it (aborted when
/// this is dropped, which ends every clone).
pub(super) struct Opened {
    pub(super) conn: MultiplexedConnection,
    pub(super) driver: Driver,
}

/// The task reading and writing the connection's stream, aborted on drop.
pub(super) struct Driver(tokio::task::JoinHandle<()>);

impl Drop for Driver {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The most the handshake's replies (AUTH, SELECT, HELLO's map, CLIENT SETINFO) and the
/// PING after it can honestly be.
const HANDSHAKE_REPLY_BYTES: u64 = 64 * 1024;

/// Why no connection to the fleet's server was opened, for the fleet's one warning; the
/// messages carry no password (scrubbed when built).
#[derive(Debug, Clone, thiserror::Error)]
pub(super) enum ConnectError {
    /// `passwordEnv` names a variable that is not set.
    #[error("{0}")]
    Password(String),
    /// The URL gives no connection.
    #[error("{0}")]
    Url(String),
    /// Dialing, the handshake or the PING failed.
    #[error("{0}")]
    Failed(String),
    /// No answer within the connect timeout.
    #[error("cannot connect to redis {server} within {within}")]
    Timeout { server: String, within: String },
}

/// Opens one connection within [`super::CONNECT_TIMEOUT`], reading through `budget` (see
/// [`super::budget`]); each call bounded by `call_timeout`. The error is a message fragment
/// without the password.
pub(super) async fn open(
    target: &Target,
    call_timeout: Duration,
    budget: &ReadBudget,
) -> Result<Opened, ConnectError> {
    let server = target.url.to_string();
    let secrets = secrets(target);
    let scrub = |text: String| scrub(&text, &secrets);
    let password = target.password.clone().map_err(ConnectError::Password)?;
    let info = target
        .url
        .expose()
        .into_connection_info()
        .map_err(|e| ConnectError::Url(scrub(format!("redis {server}: {e}"))))?;
    let mut settings = info.redis_settings().clone();
    if let Some(p) = &password {
        settings = settings.set_password(p);
    }
    let config = AsyncConnectionConfig::new().set_response_timeout(Some(call_timeout));
    // A PING proves the server speaks Redis and accepted the password (a connection
    // alone proves neither).
    // A reply past the cap is named as such, whichever step it broke.
    let failed = |e: redis::RedisError| budget.overrun().unwrap_or_else(|| e.to_string());
    let connecting = async {
        let _handshake = budget.grant(HANDSHAKE_REPLY_BYTES);
        let stream = super::dial::stream(info.addr())
            .await
            .map_err(|e| e.to_string())?;
        let stream = Budgeted::new(stream, budget.clone());
        let (mut conn, drive) = MultiplexedConnection::new_with_config(&settings, stream, config)
            .await
            .map_err(failed)?;
        let driver = Driver(tokio::spawn(drive));
        redis::cmd("PING")
            .query_async::<String>(&mut conn)
            .await
            .map_err(failed)?;
        Ok::<_, String>(Opened { conn, driver })
    };
    match tokio::time::timeout(super::CONNECT_TIMEOUT, connecting).await {
        Ok(Ok(opened)) => Ok(opened),
        Ok(Err(e)) => Err(ConnectError::Failed(scrub(format!(
            "cannot connect to redis {server}: {e}"
        )))),
        Err(_) => Err(ConnectError::Timeout {
            server,
            within: crate::config::format_duration(super::CONNECT_TIMEOUT),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_environment_url_wins_and_bad_ones_are_usage_errors() {
        let file = FleetSettings {
            redis: Some(RedisUrl::parse("redis://file-host:6379").unwrap()),
            ..Default::default()
        };
        let t = target(&file, env(&[])).unwrap().unwrap();
        assert_eq!(t.url.expose(), "redis://file-host:6379");
        let t = target(&file, env(&[(URL_ENV, "rediss://:pw@env-host:6380")]))
            .unwrap()
            .unwrap();
        assert_eq!(t.url.expose(), "rediss://:pw@env-host:6380");
        assert!(!t.url.to_string().contains("pw"));
        assert!(
            target(&FleetSettings::default(), env(&[]))
                .unwrap()
                .is_none()
        );
        let e = target(&file, env(&[(URL_ENV, "http://:pw@x")])).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let msg = e.to_string();
        assert!(msg.starts_with(URL_ENV) && !msg.contains("pw@"), "{msg}");
    }

    #[test]
    fn fleet_caps_without_a_server_are_named_in_a_warning() {
        let mut s = Settings::default();
        let mut r = crate::config::Route::new("fast", crate::config::ProviderKind::OpenAi, "m", 4);
        assert_eq!(unused_caps_warning(&s, false), None);
        r.fleet_max_concurrency = Some(3);
        s.routes.push(r);
        let w = unused_caps_warning(&s, false).unwrap();
        assert!(w.contains("route `fast` sets fleetMaxConcurrency"), "{w}");
        assert_eq!(unused_caps_warning(&s, true), None);
    }

    #[test]
    fn the_password_comes_from_the_variable_password_env_names() {
        let s = FleetSettings {
            redis: Some(RedisUrl::parse("redis://h").unwrap()),
            password_env: Some("PW".into()),
            ..Default::default()
        };
        let t = target(&s, env(&[("PW", "hunter2")])).unwrap().unwrap();
        assert_eq!(t.password, Ok(Some("hunter2".into())));
        let t = target(&s, env(&[])).unwrap().unwrap();
        assert!(t.password.unwrap_err().contains("PW"));
    }
}
