//! Sharding one review over CI machines: `--shard K/N` reviews the K-th of N disjoint
//! parts of the plan. Units are dealt round-robin in dispatch (priority) order, so every
//! shard gets its share of the most important units, and `warden merge` can put the
//! shards' units back in plan order from the shard index alone. The plan's fingerprint
//! tells merge which reports belong to the same review.

use crate::plan::Plan;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// One shard of a review: `index` (1-based) of `count`, and how many units the whole
/// plan has (so a merge can count the units of a shard that never reported).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Shard {
    /// This shard, 1-based.
    pub index: usize,
    /// How many shards split the plan.
    pub count: usize,
    /// Units of the whole (unsharded) plan.
    #[serde(default)]
    pub plan_units: usize,
}

/// A `--shard` value that is not `K/N` with 1 ≤ K ≤ N (the value as written).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a shard: write K/N with 1 <= K <= N, e.g. 1/4")]
pub struct NotAShard(pub String);

impl FromStr for Shard {
    type Err = NotAShard;

    /// `K/N` with 1 ≤ K ≤ N.
    fn from_str(s: &str) -> Result<Self, NotAShard> {
        let bad = || NotAShard(s.to_string());
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let k: usize = k.trim().parse().map_err(|_| bad())?;
        let n: usize = n.trim().parse().map_err(|_| bad())?;
        if k == 0 || n == 0 || k > n {
            return Err(bad());
        }
        Ok(Shard {
            index: k,
            count: n,
            plan_units: 0,
        })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// How many of a `plan_units`-unit plan's units shard `index` (1-based) of `count` gets.
    pub(crate) fn units_of(index: usize, count: usize, plan_units: usize) -> usize {
        if index == 0 || index > count || plan_units < index {
            return 0;
        }
        (plan_units - index) / count + 1
    }

    /// Keeps this shard's units of `plan` (positions `index-1`, `index-1+count`, ...),
    /// renumbered in order; files and skipped files stay, so every shard's report says
    /// the same about them. Returns the shard with the whole plan's unit count.
    pub(crate) fn deal(self, plan: &mut Plan) -> Shard {
        let plan_units = plan.units.len();
        let units = std::mem::take(&mut plan.units);
        plan.units = units
            .into_iter()
            .enumerate()
            .filter(|(i, _)| i % self.count == self.index - 1)
            .map(|(_, u)| u)
            .collect();
        for (i, u) in plan.units.iter_mut().enumerate() {
            u.index = i;
        }
        plan.totals.units = plan.units.len();
        plan.totals.prompt_chars = plan.units.iter().map(|u| u.prompt_chars).sum();
        Shard { plan_units, ..self }
    }
}

/// The plan's fingerprint: a hash of every unit's skills, file, lines and chunk text, in
/// dispatch order. Machines that check out the same change with the same config get the
/// same plan and so the same fingerprint.
pub fn fingerprint(plan: &Plan) -> String {
    let mut parts: Vec<String> = Vec::with_capacity(plan.units.len() * 2);
    for u in &plan.units {
        parts.push(format!(
            "{}\u{1}{}\u{1}{}\u{1}{}\u{1}{}",
            u.skill, u.path, u.start_line, u.end_line, u.optional
        ));
        let chunk = &plan.files[u.file].chunks[u.chunk];
        let text: String = chunk
            .lines
            .iter()
            .map(|l| format!("{:?}{}\n", l.kind, l.text))
            .collect();
        parts.push(text);
    }
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    format!("{:016x}", crate::text::fnv1a(&refs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_k_of_n_and_refuses_the_rest() {
        let s: Shard = "2/3".parse().unwrap();
        assert_eq!((s.index, s.count), (2, 3));
        for bad in ["0/3", "4/3", "1/0", "1", "a/b", "1/2/3", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn shard_sizes_add_up_to_the_plan() {
        for n in 1..6 {
            for units in 0..20 {
                let total: usize = (1..=n).map(|k| Shard::units_of(k, n, units)).sum();
                assert_eq!(total, units, "{n} shards of {units}");
            }
        }
    }
}
