//! A review that could not start for a reason in its setup: no unit was reviewed, and
//! every attempt that ended ended on authentication, an invalid model or a request the
//! provider refused. That is not weather (exit 3, try again later) but a config or key to
//! fix (exit 2): CI can tell the two apart.

use super::Report;
use crate::provider::Outcome;

/// The outcomes that say the setup is wrong, whatever the weather.
fn is_setup(o: Outcome) -> bool {
    matches!(
        o,
        Outcome::Auth | Outcome::InvalidModel | Outcome::BadRequest
    )
}

impl Report {
    /// When no unit was reviewed and every attempt that ended was a setup failure (at least
    /// one), what failed, per route: "route `primary`: auth (HTTP 401: …)".
    pub fn setup_failure(&self) -> Option<String> {
        if self.units.is_empty() || self.summary.reviewed > 0 {
            return None;
        }
        let ended = self
            .units
            .iter()
            .flat_map(|u| &u.attempts)
            .filter(|a| a.outcome != Outcome::Cancelled);
        let mut named: Vec<String> = Vec::new();
        for a in ended {
            if !is_setup(a.outcome) {
                return None;
            }
            let line = format!("route `{}`: {}", a.route, a.reason);
            if !named.contains(&line) {
                named.push(line);
            }
        }
        if named.is_empty() {
            return None;
        }
        named.truncate(3);
        Some(format!(
            "no unit could be reviewed, and every attempt failed on setup, not on the provider's weather: {}; fix the route's key, model or parameters (exit 2)",
            named.join("; ")
        ))
    }
}
