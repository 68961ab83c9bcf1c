//! The cache in one review: look every planned unit up before dispatch and answer the hits
//! through the engine's [`Answerer`] hook (no request, no permit, no cost), then store what
//! the models answered once the review (and its verification) is done.

use super::key::{self, Key, UnitMaterial};
use super::shared::Shared;
use super::value::{Answer, Producer, StoredVerdict};
use super::{Cache, now_ms};
use crate::config::Route;
use crate::engine::{
    Answerer, CacheLevel as Level, EngineReport, FromCache, UnitInfo, UnitResult, UnitStatus,
};
use crate::plan::Plan;
use crate::skills::ActiveSkill;
use crate::verify::{self, Verdict};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The hits' results, as the engine's [`Answerer`].
struct Answers(BTreeMap<usize, Arc<UnitResult>>);

impl Answerer for Answers {
    fn answer(&self, unit: usize, _info: &UnitInfo) -> Option<UnitResult> {
        self.0.get(&unit).map(|r| (**r).clone())
    }
}

/// One unit answered from the cache.
struct Hit {
    /// Index of the route whose key matched.
    route: usize,
    answer: Answer,
    /// Which level held it.
    level: Level,
    /// The unit's result, as the engine would have reported it.
    result: Arc<UnitResult>,
}

/// The levels a review may use. Without any, every method is a no-op and every unit a miss.
pub struct Levels {
    /// This machine's store.
    pub local: Option<Cache>,
    /// The fleet's store (`[fleet] cache = true`).
    pub shared: Option<Shared>,
    /// Answers older than this are misses at every level (`[cache] maxAge`).
    pub max_age: Duration,
}

impl Levels {
    /// No cache at all.
    pub fn off() -> Levels {
        Levels {
            local: None,
            shared: None,
            max_age: Duration::ZERO,
        }
    }

    fn any(&self) -> bool {
        self.local.is_some() || self.shared.is_some()
    }
}

/// The cache's part in one review. Without a cache (off or unusable) every method is a
/// no-op and every unit is a miss.
pub struct ReviewCache {
    levels: Levels,
    routes: Vec<Route>,
    /// Per plan unit, the key under each route (in route order).
    keys: Vec<Vec<Key>>,
    hits: BTreeMap<usize, Hit>,
    /// Answers to store: per plan unit, the answering route and its answer.
    pending: BTreeMap<usize, (usize, Answer)>,
    verification: bool,
}

/// The part of a unit's user message before its line numbers: the file and how it
/// changed (the prompt is built without the other changed files). Should the marker ever
/// go, the whole message is used: keys then change with position, never the answers.
fn header(user: &str) -> &str {
    user.split_once("\nLines under review:")
        .map_or(user, |(head, _)| head)
}

/// Every unit's key under each route (`loops`: each unit's [`key::loop_material`], when
/// it runs as a tool loop).
fn unit_keys(
    plan: &Plan,
    active: &[ActiveSkill],
    routes: &[Route],
    loops: &[Option<String>],
) -> Vec<Vec<Key>> {
    plan.units
        .iter()
        .enumerate()
        .map(|(i, u)| {
            let skills: Vec<&crate::skills::Skill> = u
                .skills
                .iter()
                .filter_map(|n| active.iter().find(|a| a.skill.name == *n))
                .map(|a| &a.skill)
                .collect();
            let prompt = plan.prompt(u, &skills, 0);
            let material = UnitMaterial {
                system: &prompt.system,
                path: &u.path.to_string(),
                header: header(&prompt.user),
                chunk: &plan.files[u.file].chunks[u.chunk],
                tools: loops.get(i).and_then(Option::as_deref),
            };
            routes.iter().map(|r| key::key(&material, r)).collect()
        })
        .collect()
}

impl ReviewCache {
    /// Computes every unit's keys and looks them up: locally first, then (for the units
    /// that missed) in the shared level. A unit hits when the key of a route it may use
    /// holds an intact answer younger than maxAge (the first in its failover order wins):
    /// failover would have accepted that route's review too. `routes` are the configured
    /// routes and, per plan unit, the indices of those it may use in order (empty: all);
    /// `loops`, per plan unit, the tool loop it runs as ([`key::loop_material`]).
    pub(crate) async fn lookup(
        levels: Levels,
        plan: &Plan,
        active: &[ActiveSkill],
        (routes, allowed): (&[Route], &[Vec<usize>]),
        loops: &[Option<String>],
        verification: bool,
    ) -> ReviewCache {
        let mut rc = ReviewCache {
            levels,
            routes: routes.to_vec(),
            keys: Vec::new(),
            hits: BTreeMap::new(),
            pending: BTreeMap::new(),
            verification,
        };
        if !rc.levels.any() {
            return rc;
        }
        rc.keys = unit_keys(plan, active, routes, loops);
        let all: Vec<usize> = (0..plan.units.len()).collect();
        if let Some(local) = &rc.levels.local {
            let answers = local.get(&rc.flat(&all));
            rc.choose(plan, allowed, &all, answers, Level::Local);
        }
        if let Some(shared) = &rc.levels.shared {
            let missed: Vec<usize> = all
                .into_iter()
                .filter(|i| !rc.hits.contains_key(i))
                .collect();
            let answers = shared.get(&rc.flat(&missed)).await;
            rc.choose(plan, allowed, &missed, answers, Level::Shared);
        }
        rc
    }

    /// The keys of `units`, each unit's under every route in route order.
    fn flat(&self, units: &[usize]) -> Vec<Key> {
        units
            .iter()
            .flat_map(|i| self.keys[*i].iter().cloned())
            .collect()
    }

    /// Records a hit for each of `units` whose answers (one per route, in the order of
    /// [`flat`](Self::flat)) hold a usable one.
    fn choose(
        &mut self,
        plan: &Plan,
        allowed: &[Vec<usize>],
        units: &[usize],
        answers: Vec<Option<Answer>>,
        level: Level,
    ) {
        let n = self.routes.len();
        let oldest = now_ms().saturating_sub(self.levels.max_age.as_millis() as u64);
        let mut answers = answers.into_iter();
        for &i in units {
            let u = &plan.units[i];
            // Take this unit's answers (one per route) before choosing among them.
            let mut mine: Vec<Option<Answer>> = answers.by_ref().take(n).collect();
            let order: Vec<usize> = match allowed.get(i) {
                Some(list) if !list.is_empty() => list.clone(),
                _ => (0..n).collect(),
            };
            let found = order
                .into_iter()
                .filter_map(|r| mine.get_mut(r).and_then(Option::take).map(|a| (r, a)))
                .filter(|(_, a)| a.cached_at >= oldest)
                .find(|(_, a)| a.findings_at(u.start_line, u.end_line).is_some());
            if let Some((route, answer)) = found {
                let result = self.hit_result(i, route, &answer, level, (u.start_line, u.end_line));
                let result = Arc::new(result);
                self.hits.insert(
                    i,
                    Hit {
                        route,
                        answer,
                        level,
                        result,
                    },
                );
            }
        }
    }

    /// Drops the hits whose answer read the repository through tools when replaying those
    /// calls on this head gives another result (docs/design.md §14): a push that touched a file
    /// the model read re-reviews the unit; one that touched none does not. Without tools
    /// (`--no-tools`, no repository) such a hit cannot be checked and is dropped too.
    /// Replays are local reads: no request.
    pub fn replay(&mut self, tools: Option<&crate::tools::Toolbox>) {
        self.hits.retain(|_, hit| {
            hit.answer
                .tool_calls
                .iter()
                .all(|c| tools.is_some_and(|tb| tb.call(&c.tool, &c.arguments).hash == c.hash))
        });
    }

    /// The engine's hook: a unit with a hit ends with the cached result before dispatch,
    /// with no request and no permit (and flows through the events like any other).
    pub(crate) fn answerer(&self) -> Arc<dyn Answerer> {
        Arc::new(Answers(
            self.hits
                .iter()
                .map(|(i, h)| (*i, h.result.clone()))
                .collect(),
        ))
    }

    /// Whether unit `i`'s findings were verified when they were cached (with the pass on,
    /// they are not verified again).
    pub fn verified(&self, i: usize) -> bool {
        self.verification
            && self
                .hits
                .get(&i)
                .is_some_and(|h| h.answer.verdicts.is_some())
    }

    /// Notes the models' new answers in the review pass's report, for storing.
    pub(crate) fn note_answers(&mut self, plan: &Plan, r: &EngineReport) {
        if !self.levels.any() {
            return;
        }
        let at = now_ms();
        for u in &r.units {
            // A unit split for a context window is not one answer to keep (docs/design.md §14).
            if u.status != UnitStatus::Reviewed || u.from_cache.is_some() || !u.parts.is_empty() {
                continue;
            }
            let (Some(name), Some(last)) = (&u.route, u.attempts.last()) else {
                continue;
            };
            let Some(route) = self.routes.iter().position(|r| r.name == *name) else {
                continue;
            };
            let rec = &last.record;
            let by = Producer {
                route: name,
                provider: rec.provider,
                model: rec.model_answered.as_deref().unwrap_or(&rec.model),
                at,
            };
            let start = plan.units[u.unit].start_line;
            let mut answer = Answer::new(by, &u.findings, start, u.dropped_findings);
            if let Some(l) = &u.tool_loop {
                answer.tool_calls = l.calls.clone();
            }
            self.pending.insert(u.unit, (route, answer));
        }
    }

    fn hit_result(
        &self,
        i: usize,
        route: usize,
        a: &Answer,
        level: Level,
        (start, end): (u32, u32),
    ) -> UnitResult {
        let mut findings = a.findings_at(start, end).unwrap_or_default();
        if self.verification && a.verdicts.is_some() {
            // The pass removed rejected findings when it ran; it does so again here.
            let verdicts = a.verdicts.as_deref().unwrap_or(&[]);
            findings = findings
                .into_iter()
                .zip(verdicts)
                .filter(|(_, v)| **v == StoredVerdict::Confirmed)
                .map(|(f, _)| f)
                .collect();
        }
        let name = self.routes[route].name.clone();
        let when = humantime::format_rfc3339_seconds(
            std::time::UNIX_EPOCH + std::time::Duration::from_millis(a.cached_at),
        );
        UnitResult {
            unit: i,
            status: UnitStatus::Reviewed,
            route: Some(name.clone()),
            reason: format!(
                "answered from the {} cache: reviewed by {name} ({}) at {when}",
                level.as_str(),
                a.model
            ),
            attempts: Vec::new(),
            routes_tried: Vec::new(),
            moves: Vec::new(),
            findings,
            dropped_findings: a.dropped,
            // The cache keeps the count, not the names.
            dropped: Vec::new(),
            answer_cut: false,
            findings_cut: 0,
            from_cache: Some(FromCache {
                cached_at: a.cached_at,
                model: a.model.clone(),
                level,
            }),
            tool_loop: None,
            parts: Vec::new(),
        }
    }

    /// After the review: counts the cached verdicts into the pass (when it ran), attaches
    /// the pass's verdicts to the answers, then stores: new answers go to both levels,
    /// answers the shared level served are copied to this machine's, and local hits are
    /// marked as used.
    pub async fn finish(&mut self, pass: Option<&mut verify::Pass>) {
        if !self.levels.any() {
            return;
        }
        if let Some(pass) = pass {
            self.note_verdicts(pass);
        }
        let entry = |i: &usize, route: usize, a: &Answer| (self.keys[*i][route].clone(), a.clone());
        let fresh: Vec<(Key, Answer)> = self
            .pending
            .iter()
            .map(|(i, (route, a))| entry(i, *route, a))
            .collect();
        let untouched = || {
            self.hits
                .iter()
                .filter(|(i, _)| !self.pending.contains_key(i))
        };
        if let Some(local) = &self.levels.local {
            let mut entries = fresh.clone();
            entries.extend(
                untouched()
                    .filter(|(_, h)| h.level == Level::Shared)
                    .map(|(i, h)| entry(i, h.route, &h.answer)),
            );
            let used: Vec<Key> = untouched()
                .filter(|(_, h)| h.level == Level::Local)
                .map(|(i, h)| self.keys[*i][h.route].clone())
                .collect();
            local.put(&entries, &used);
        }
        if let Some(shared) = &self.levels.shared {
            shared.put(&fresh).await;
        }
    }

    /// Counts the cached verdicts into the pass and attaches the pass's new verdicts to the
    /// answers to store.
    fn note_verdicts(&mut self, pass: &mut verify::Pass) {
        for (i, hit) in &self.hits {
            let Some(vs) = hit.answer.verdicts.as_ref().filter(|_| self.verification) else {
                continue;
            };
            let kept = vs
                .iter()
                .filter(|v| **v == StoredVerdict::Confirmed)
                .count();
            for k in 0..kept {
                pass.verdicts.insert((*i, k), Verdict::Confirmed);
            }
            pass.summary.confirmed += kept;
            pass.summary.rejected += vs.len() - kept;
        }
        for (i, verdicts) in &pass.checked {
            let stored: Option<Vec<StoredVerdict>> = verdicts
                .iter()
                .map(|v| StoredVerdict::from_verdict(*v))
                .collect();
            let Some(stored) = stored else { continue };
            let entry = match self.hits.get(i) {
                Some(hit) => self
                    .pending
                    .entry(*i)
                    .or_insert_with(|| (hit.route, hit.answer.clone())),
                None => match self.pending.get_mut(i) {
                    Some(e) => e,
                    None => continue,
                },
            };
            entry.1.verdicts = Some(stored);
        }
    }
}
