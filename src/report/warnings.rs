//! What went wrong around the review without being a unit's status: a config key that is
//! ignored, the fleet's Redis or the result cache failing (the run went on locally), a
//! gateway that may retry behind warden's back. stderr shows them as they happen; the
//! report keeps them, so a script or a CI job reading JSON or SARIF learns them too.

use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};

/// Where a warning comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningSource {
    /// `warden.toml` (a key warden ignores, a route with no prices).
    Config,
    /// A route, during the review (a gateway that may retry on its own).
    Route,
    /// The result cache (it could not be opened, read or written).
    Cache,
    /// The fleet's Redis (unreachable or misbehaving: the rest of the run was local).
    Fleet,
}

impl WarningSource {
    /// The source as reports spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            WarningSource::Config => "config",
            WarningSource::Route => "route",
            WarningSource::Cache => "cache",
            WarningSource::Fleet => "fleet",
        }
    }
}

/// One warning of the run.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Warning {
    /// What it concerns.
    pub source: WarningSource,
    /// The route it concerns, for route warnings.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub route: Option<String>,
    /// The warning, as stderr showed it.
    pub message: String,
}

/// Collects the warnings given while the review runs (the cache's and the fleet's come
/// from their own tasks), for the report.
#[derive(Clone, Default)]
pub struct Warnings(Arc<Mutex<Vec<Warning>>>);

impl Warnings {
    /// Keeps `message` from `source`.
    pub fn push(&self, source: WarningSource, route: Option<String>, message: &str) {
        let w = Warning {
            source,
            route,
            message: message.to_string(),
        };
        let mut all = self.0.lock().expect("warnings lock");
        if !all.contains(&w) {
            all.push(w);
        }
    }

    /// A warning function that keeps each warning as `source` and passes it on to `then`
    /// (stderr in the command).
    pub fn tee(
        &self,
        source: WarningSource,
        then: Arc<dyn Fn(&str) + Send + Sync>,
    ) -> Arc<dyn Fn(&str) + Send + Sync> {
        let this = self.clone();
        Arc::new(move |m: &str| {
            this.push(source, None, m);
            then(m);
        })
    }

    /// Everything kept so far, in the order given.
    pub fn take(&self) -> Vec<Warning> {
        std::mem::take(&mut *self.0.lock().expect("warnings lock"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tee_keeps_each_warning_once_and_passes_every_one_on() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let w = Warnings::default();
        let f = w.tee(
            WarningSource::Fleet,
            Arc::new(move |m: &str| s.lock().unwrap().push(m.to_string())),
        );
        f("redis down");
        f("redis down");
        w.push(WarningSource::Config, None, "unknown key");
        assert_eq!(seen.lock().unwrap().len(), 2);
        let kept = w.take();
        assert_eq!(
            kept.iter().map(|k| k.source).collect::<Vec<_>>(),
            [WarningSource::Fleet, WarningSource::Config]
        );
        assert!(w.take().is_empty());
    }
}
