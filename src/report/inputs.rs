//! Everything a report is built from, gathered before [`super::build`] runs: the plan,
//! what the engine returned, the settings and skills, and what the run learned beside the
//! engine. The report comes out of the build finished; nothing patches it afterwards.

use super::{BackpressureFigures, LimitFigures, Vcs, Warning};
use crate::config::Settings;
use crate::engine::EngineReport;
use crate::plan::Plan;
use crate::shard::Shard;
use crate::skills::ActiveSkill;
use crate::trust::{SkillUse, TrustReport};
use std::collections::BTreeMap;

/// The inputs of [`super::build`].
pub struct Inputs<'a> {
    /// The plan: this shard's units, in dispatch order.
    pub plan: &'a Plan,
    /// What the engine returned for the review pass.
    pub engine: &'a EngineReport,
    /// The resolved settings: thresholds, routes (their keys are redacted from the report).
    pub settings: &'a Settings,
    /// The skills the plan's units use, with their thresholds.
    pub skills: &'a [ActiveSkill],
    /// The verification pass, when it ran.
    pub verification: Option<&'a crate::verify::Pass>,
    /// What the run learned beside the engine.
    pub run: RunFacts,
}

/// What a review knows beside the engine's report. A report written mid-review (a
/// signal's) knows none of it: [`RunFacts::default`].
#[derive(Default)]
pub struct RunFacts {
    /// Repository, revision and branch under review, when known.
    pub vcs: Option<Vcs>,
    /// Where config and skills came from.
    pub trust: Option<TrustReport>,
    /// The skills of the run and their origins (each skill's rule in the report says it).
    pub skill_uses: Vec<SkillUse>,
    /// The whole plan's fingerprint (the same on every shard of one review).
    pub plan_fingerprint: String,
    /// Which part of the plan this review covers (`--shard K/N`).
    pub shard: Option<Shard>,
    /// Warnings given outside the engine's report (the cache's, the fleet's, the routes'),
    /// after the config's own.
    pub warnings: Vec<Warning>,
    /// Each route's limit and back-pressure over the run ([`super::RouteLoad::figures`]).
    pub load: BTreeMap<String, (LimitFigures, BackpressureFigures)>,
}
