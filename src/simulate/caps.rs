//! `warden simulate --caps ROUTE=2,4,8,auto`: the same simulation once per ceiling of one
//! route's `maxConcurrency`, side by side (docs/design.md section 13). The right cap depends on
//! what the provider serves, which a user cannot know; this shows what each one costs.
//! Each cap runs under the config's routing policy, `--runs` seeds.

use super::{RunFigures, SimulateInput, median, paused_runtime, runs_of, trim};
use crate::config::{AUTO_CONCURRENCY, MAX_CONCURRENCY, format_duration};
use crate::error::{Error, Result};
use serde::Serialize;
use std::time::Duration;

/// The most caps one `--caps` compares (each is a full simulation).
pub(crate) const MAX_CAPS: usize = 16;

/// One ceiling to try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cap {
    /// `maxConcurrency = N`.
    Fixed(usize),
    /// `maxConcurrency = "auto"`.
    Auto,
}

impl Cap {
    /// The ceiling it sets.
    pub fn ceiling(self) -> usize {
        match self {
            Cap::Fixed(n) => n,
            Cap::Auto => AUTO_CONCURRENCY,
        }
    }

    /// As written: `4` or `auto`.
    pub fn label(self) -> String {
        match self {
            Cap::Fixed(n) => n.to_string(),
            Cap::Auto => "auto".into(),
        }
    }
}

/// `--caps ROUTE=CAPS`: the route and its caps, in the order written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteCaps {
    /// The route whose ceiling varies.
    pub route: String,
    /// The ceilings to try.
    pub caps: Vec<Cap>,
}

/// A `--caps` value that cannot be read (shown after the flag's name).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CapsError {
    /// No `=` between route and caps.
    #[error("write ROUTE=CAPS, for example --caps primary=2,4,8,auto")]
    NoEquals,
    /// Nothing before the `=`.
    #[error("no route before `=`: write ROUTE=CAPS, for example --caps primary=2,4,8,auto")]
    NoRoute,
    /// More caps than one run compares.
    #[error("{0} caps: compare at most {max} in one run", max = MAX_CAPS)]
    TooMany(usize),
    /// A cap that is neither a whole number in range nor `auto` (cut to 40 characters).
    #[error(
        "`{0}` is not a cap: write whole numbers from 1 to {max} or auto, separated by commas",
        max = MAX_CONCURRENCY
    )]
    NotACap(String),
}

/// Parses `ROUTE=2,4,8,auto` (the flag's value parser: its errors are shown after the
/// flag's name).
pub fn parse(s: &str) -> std::result::Result<RouteCaps, CapsError> {
    let Some((route, list)) = s.split_once('=') else {
        return Err(CapsError::NoEquals);
    };
    let route = route.trim();
    if route.is_empty() {
        return Err(CapsError::NoRoute);
    }
    let caps = list
        .split(',')
        .map(|c| cap(c.trim()))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    if caps.len() > MAX_CAPS {
        return Err(CapsError::TooMany(caps.len()));
    }
    Ok(RouteCaps {
        route: route.to_string(),
        caps,
    })
}

fn cap(c: &str) -> std::result::Result<Cap, CapsError> {
    if c == "auto" {
        return Ok(Cap::Auto);
    }
    match c.parse::<usize>() {
        Ok(n) if (1..=MAX_CONCURRENCY).contains(&n) => Ok(Cap::Fixed(n)),
        _ => Err(CapsError::NotACap(c.chars().take(40).collect())),
    }
}

/// The comparison: one row per cap.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CapsComparison {
    /// The route whose ceiling varies.
    pub route: String,
    /// The routing policy every row ran under (the config's).
    pub routing: String,
    /// Units in the plan.
    pub units: usize,
    /// Runs (seeds) per cap.
    pub runs: usize,
    /// One row per cap, in the order given.
    pub caps: Vec<CapRow>,
}

/// One cap's figures over its runs.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CapRow {
    /// As written: `4` or `auto`.
    pub cap: String,
    /// The ceiling it set.
    pub ceiling: usize,
    /// Units reviewed, median over the runs.
    pub reviewed_median: f64,
    /// The fewest units reviewed in a run.
    pub reviewed_min: usize,
    /// The most units reviewed in a run.
    pub reviewed_max: usize,
    /// The review's (simulated) wall time, median, in milliseconds.
    pub wall_ms_median: f64,
    /// Attempts sent, median.
    pub attempts_median: f64,
    /// Attempts answered with back-pressure, median.
    pub backpressure_median: f64,
}

/// Runs the simulation once per cap of `caps.route` (each `input.runs` seeds).
pub fn compare(input: &SimulateInput, caps: &RouteCaps) -> Result<CapsComparison> {
    let Some(index) = input
        .settings
        .routes
        .iter()
        .position(|r| r.name == caps.route)
    else {
        return Err(Error::Usage(format!(
            "--caps {}=…: no route is named `{}` (routes: {})",
            caps.route,
            caps.route,
            super::names(&input.settings)
        )));
    };
    let rt = paused_runtime()?;
    let routing = input.settings.execution.routing;
    let rows = caps
        .caps
        .iter()
        .map(|cap| {
            let mut routes = input.settings.routes.clone();
            routes[index].max_concurrency = cap.ceiling();
            routes[index].auto_concurrency = *cap == Cap::Auto;
            row(*cap, &runs_of(&rt, input, &routes, routing))
        })
        .collect();
    Ok(CapsComparison {
        route: caps.route.clone(),
        routing: routing.as_str().to_string(),
        units: input.units.len(),
        runs: input.runs.max(1),
        caps: rows,
    })
}

fn row(cap: Cap, f: &[RunFigures]) -> CapRow {
    let col = |g: &dyn Fn(&RunFigures) -> f64| median(f.iter().map(g).collect());
    CapRow {
        cap: cap.label(),
        ceiling: cap.ceiling(),
        reviewed_median: col(&|x| x.reviewed as f64),
        reviewed_min: f.iter().map(|x| x.reviewed).min().unwrap_or(0),
        reviewed_max: f.iter().map(|x| x.reviewed).max().unwrap_or(0),
        wall_ms_median: col(&|x| x.wall.as_secs_f64() * 1000.0).round(),
        attempts_median: col(&|x| x.attempts as f64),
        backpressure_median: col(&|x| x.backpressure as f64),
    }
}

/// The comparison as a table for people.
pub fn render_text(c: &CapsComparison, budget: Duration) -> String {
    let mut out = format!(
        "{} units, route `{}` under each cap, {} run{} per cap on a paused clock ({} routing, review budget {})\n",
        c.units,
        c.route,
        c.runs,
        if c.runs == 1 { "" } else { "s" },
        c.routing,
        format_duration(budget)
    );
    out.push_str(&format!(
        "{:<9} {:>9} {:>11} {:>10} {:>9} {:>14}\n",
        "cap", "reviewed", "(min-max)", "wall", "attempts", "back-pressure"
    ));
    for r in &c.caps {
        let cap = match r.cap.as_str() {
            "auto" => format!("auto ({})", r.ceiling),
            n => n.to_string(),
        };
        out.push_str(&format!(
            "{:<9} {:>9} {:>11} {:>10} {:>9} {:>14}\n",
            cap,
            trim(r.reviewed_median),
            format!("({}-{})", r.reviewed_min, r.reviewed_max),
            format_duration(Duration::from_millis(r.wall_ms_median as u64)),
            trim(r.attempts_median),
            trim(r.backpressure_median),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_parse_as_written() {
        assert_eq!(
            parse("primary=2,4, 8,auto").unwrap(),
            RouteCaps {
                route: "primary".into(),
                caps: vec![Cap::Fixed(2), Cap::Fixed(4), Cap::Fixed(8), Cap::Auto],
            }
        );
        assert_eq!(Cap::Auto.ceiling(), AUTO_CONCURRENCY);
    }

    #[test]
    fn bad_caps_say_what_to_write() {
        for (bad, says) in [
            ("primary", "write ROUTE=CAPS"),
            ("=4", "no route"),
            ("primary=", "`` is not a cap"),
            ("primary=0", "`0` is not a cap"),
            ("primary=-1", "`-1` is not a cap"),
            ("primary=fast", "`fast` is not a cap"),
            ("primary=4,,8", "`` is not a cap"),
            ("primary=1025", "`1025` is not a cap"),
            ("primary=99999999999999999999999", "is not a cap"),
            ("primary=AUTO", "`AUTO` is not a cap"),
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
        let many = format!("p={}", vec!["2"; 17].join(","));
        assert!(parse(&many).unwrap_err().to_string().contains("at most 16"));
    }
}
