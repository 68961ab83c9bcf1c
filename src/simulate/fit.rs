//! Latency profiles fitted from a `--trace` JSONL of an earlier review: per route, the
//! success latency (log-normal median and p95), the share and duration of provider errors,
//! and the share of rate limits. Timeouts are successes that took longer than their
//! deadline (censored): they count above every observed success, and when they reach
//! past the 95th percentile the tail is extrapolated from how many there were.

use crate::error::{Error, Result};
use crate::provider::sim::Profile;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// What one route's attempts did, in minutes.
#[derive(Debug, Default, Clone)]
struct Observed {
    ok: Vec<f64>,
    /// Timed-out attempts' durations (their deadlines).
    timeouts: Vec<f64>,
    errors: Vec<f64>,
    rate_limited: usize,
}

/// Reads a trace and fits a profile for every route it has attempts of.
pub fn from_trace(path: &Path) -> Result<BTreeMap<String, Profile>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::Usage(format!(
            "--from-trace {}: cannot read the file ({e})",
            path.display()
        ))
    })?;
    let mut routes: BTreeMap<String, Observed> = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line).map_err(|e| {
            Error::Usage(format!(
                "--from-trace {}:{}: not a trace line ({e}); give the JSONL file `warden review --trace FILE` wrote",
                path.display(),
                i + 1
            ))
        })?;
        if v["type"] != "span" || v["name"] != "warden.attempt" {
            continue;
        }
        let f = &v["fields"];
        let (Some(route), Some(outcome), Some(ms)) = (
            f["warden.route"].as_str(),
            f["warden.outcome"].as_str(),
            f["warden.duration_ms"].as_f64(),
        ) else {
            continue;
        };
        let o = routes.entry(route.to_string()).or_default();
        let minutes = ms / 60_000.0;
        match outcome {
            "ok" => o.ok.push(minutes),
            "timeout" => o.timeouts.push(minutes),
            "unavailable" => o.errors.push(minutes),
            "rate_limited" => o.rate_limited += 1,
            _ => {}
        }
    }
    if routes.is_empty() {
        return Err(Error::Usage(format!(
            "--from-trace {}: no attempt spans in the file; give the JSONL file `warden review --trace FILE` wrote",
            path.display()
        )));
    }
    Ok(routes
        .into_iter()
        .map(|(name, o)| (name, fit(&o)))
        .collect())
}

/// The profile that best explains one route's attempts.
fn fit(o: &Observed) -> Profile {
    let base = Profile::named("healthy").expect("built in");
    let n = (o.ok.len() + o.timeouts.len() + o.errors.len() + o.rate_limited) as f64;
    if o.ok.is_empty() && !o.timeouts.is_empty() && o.errors.is_empty() {
        return Profile { hang: true, ..base };
    }
    let mut ok = o.ok.clone();
    ok.sort_by(f64::total_cmp);
    let m = ok.len() + o.timeouts.len();
    // Quantile over successes and timeouts, the timeouts ranked above every success.
    let quantile = |q: f64| -> Option<f64> {
        let k = ((m as f64 - 1.0) * q).round() as usize;
        ok.get(k).copied()
    };
    let median = quantile(0.5).unwrap_or_else(|| {
        // Most calls timed out: the median lies past the deadline.
        o.timeouts.iter().copied().fold(0.0, f64::max).max(1e-3) * 1.5
    });
    let median = median.max(1e-4);
    let p95 = match quantile(0.95) {
        Some(p) => p.max(median * 1.01),
        None => {
            // Censored tail: a share q of calls took longer than the deadline d.
            let d = mean(&o.timeouts).max(median * 1.01);
            let q = o.timeouts.len() as f64 / m as f64;
            let z = inverse_normal(1.0 - q).max(0.05);
            let sigma = (d / median).ln() / z;
            median * (1.645 * sigma).exp()
        }
    };
    let (elo, ehi) = o
        .errors
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), e| (lo.min(*e), hi.max(*e)));
    Profile {
        median_min: median,
        p95_min: p95,
        clip_min: 45.0,
        error_rate: o.errors.len() as f64 / n,
        error_min: if o.errors.is_empty() {
            base.error_min
        } else {
            (elo, ehi.max(elo))
        },
        fast_503_rate: 0.0,
        rate_limit_rate: o.rate_limited as f64 / n,
        retry_after_s: base.retry_after_s,
        hang: false,
        load: base.load,
    }
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// The standard normal quantile (Acklam's rational approximation, relative error below
/// 1.2e-9), for extrapolating a censored tail.
fn inverse_normal(p: f64) -> f64 {
    let p = p.clamp(1e-12, 1.0 - 1e-12);
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::sim::Draw;
    use rand::SeedableRng;
    use rand::rngs::SmallRng;

    #[test]
    fn the_normal_quantile_matches_known_values() {
        assert!((inverse_normal(0.5)).abs() < 1e-9);
        assert!((inverse_normal(0.95) - 1.644_853_6).abs() < 1e-6);
        assert!((inverse_normal(0.01) + 2.326_347_9).abs() < 1e-6);
    }

    /// Draws from a profile, cut at a deadline as the engine would, fit back.
    #[test]
    fn a_fitted_profile_recovers_the_slow_tail_even_when_its_tail_times_out() {
        let p = Profile::named("slow-tail").unwrap();
        let deadline = 2.0;
        let mut rng = SmallRng::seed_from_u64(3);
        let mut o = Observed::default();
        for _ in 0..4000 {
            match Draw::sample(&p, &mut rng) {
                Draw::Answer { minutes } if minutes > deadline => o.timeouts.push(deadline),
                Draw::Answer { minutes } => o.ok.push(minutes),
                Draw::SlowError { minutes } if minutes > deadline => o.timeouts.push(deadline),
                Draw::SlowError { minutes } => o.errors.push(minutes),
                _ => {}
            }
        }
        let f = fit(&o);
        assert!((f.median_min - 1.5).abs() < 0.15, "median {}", f.median_min);
        assert!((f.p95_min - 6.2).abs() < 1.2, "p95 {}", f.p95_min);
        assert!(!f.hang);
    }

    #[test]
    fn a_route_that_only_timed_out_hangs() {
        let o = Observed {
            timeouts: vec![2.0; 10],
            ..Observed::default()
        };
        assert!(fit(&o).hang);
    }

    #[test]
    fn traces_are_read_per_route_and_bad_lines_name_their_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        let line = |route: &str, outcome: &str, ms: f64| {
            format!(
                "{{\"type\":\"span\",\"name\":\"warden.attempt\",\"fields\":{{\"warden.route\":\"{route}\",\"warden.outcome\":\"{outcome}\",\"warden.duration_ms\":{ms}}}}}\n"
            )
        };
        let mut text = String::from("{\"type\":\"event\",\"name\":\"warden.retry\"}\n");
        for i in 0..20 {
            text.push_str(&line("a", "ok", 30_000.0 + 1000.0 * i as f64));
        }
        text.push_str(&line("a", "unavailable", 500.0));
        text.push_str(&line("b", "timeout", 120_000.0));
        std::fs::write(&p, &text).unwrap();
        let fitted = from_trace(&p).unwrap();
        assert!(
            (fitted["a"].median_min - 0.66).abs() < 0.05,
            "{:?}",
            fitted["a"]
        );
        assert!((fitted["a"].error_rate - 1.0 / 21.0).abs() < 1e-9);
        assert!(fitted["b"].hang);
        std::fs::write(&p, "{\"type\":\"span\"}\nnot json\n").unwrap();
        let e = from_trace(&p).unwrap_err().to_string();
        assert!(e.contains("t.jsonl:2:"), "{e}");
    }
}
