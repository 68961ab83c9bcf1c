//! Shared breakers: every process records its attempt outcomes into the upstream's rolling
//! window in Redis and takes breaker decisions from the fleet's window, so a provider that
//! hangs costs the fleet `minCalls` timeouts, not every job `minCalls` timeouts. Both
//! updates are Lua scripts (atomic on the server, timed by the server's clock); half-open
//! probes are leases in Redis, at most `halfOpenProbes` across the fleet per open period
//! (a lease whose holder died expires after one request deadline).
//!
//! This process keeps a view of each upstream's fleet state (what its last call to Redis
//! said) for the engine's synchronous questions, and its own [`LocalBreakers`], fed with
//! every outcome: a floor under the fleet (what its own outcomes opened stays open, see
//! `floor.rs` for the rule and its probe accounting), and alone once the fleet is off
//! (Redis failed once).

use super::floor::{self, FleetAnswer, Floor};
use super::{Fleet, Upstream, ms};
use crate::config::{BreakerSettings, Execution, format_duration};
use crate::engine::breaker::{Admission, BreakerState, MAX_BACKOFF, Transition};
use crate::engine::breakers::{BreakerFigures, Breakers, Hold, LocalBreakers};
use crate::provider::Outcome;
use futures_util::future::BoxFuture;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};
use std::time::Duration;
use tokio::time::Instant;

static ADMIT: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("lua/breaker_admit.lua")));
static RECORD: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("lua/breaker_record.lua")));

/// How long an auth or invalid-model failure keeps the upstream forced open for the
/// fleet (a run's "for the rest of the run", for runs that start later: a fixed key or
/// model takes effect after this).
pub(crate) const FORCED_FOR: Duration = Duration::from_secs(15 * 60);

/// While another process holds the probe leases, how soon this one asks again.
pub const PROBE_RECHECK: Duration = Duration::from_millis(500);

/// Breakers kept in Redis per upstream, over this process's own breakers (a floor, and the
/// fallback).
pub struct FleetBreakers {
    fleet: Fleet,
    floor: Floor,
    cfg: BreakerSettings,
    /// A half-open probe's lease: one request deadline and a margin.
    probe_lease: Duration,
    routes: Vec<RouteState>,
    /// Makes window entries and probe ids unique across processes.
    me: String,
    next: AtomicU64,
}

struct RouteState {
    keys: [String; 4],
    view: Mutex<View>,
}

/// What this process last learned of one upstream's fleet state, and its figures.
struct View {
    state: BreakerState,
    open_until: Instant,
    opens: u32,
    opened_at: Option<Instant>,
    time_open: Duration,
    /// Probe leases this process holds.
    probes: VecDeque<String>,
    /// How many of its probe leases are out, kept when the view changes (unlike `probes`):
    /// their attempts are still in flight.
    leases: u32,
    /// Half-open, and the fleet's last answer granted no lease while this process holds
    /// one: no new attempt until a verdict or a record (no asking Redis in a loop).
    full: bool,
    /// The newest answer taken (its [`Seen::asked`]).
    asked: u64,
}

/// A fleet answer: the state, how long until a probe may go, and when it was asked.
#[derive(Clone, Copy)]
struct Seen {
    state: BreakerState,
    wait: Duration,
    /// The order this process asked in: answers of concurrent calls can come back to their
    /// tasks out of order, and an older one ("closed", asked before the failure that
    /// opened the upstream) must not undo a newer one.
    asked: u64,
}

impl FleetBreakers {
    /// Breakers for routes whose upstreams are `upstreams` (by route index), with this
    /// execution's breaker settings.
    pub fn new(fleet: Fleet, upstreams: &[Upstream], exec: &Execution, now: Instant) -> Self {
        let routes = upstreams
            .iter()
            .map(|u| {
                let base = fleet.upstream_key("brk", u);
                RouteState {
                    keys: [
                        base.clone(),
                        format!("{base}:calls"),
                        format!("{base}:failures"),
                        format!("{base}:probes"),
                    ],
                    view: Mutex::new(View::closed(now)),
                }
            })
            .collect();
        FleetBreakers {
            floor: Floor::new(
                LocalBreakers::new(upstreams.len(), exec.breaker, now),
                upstreams.len(),
            ),
            fleet,
            cfg: exec.breaker,
            probe_lease: exec.request_timeout.saturating_add(Duration::from_secs(1)),
            routes,
            me: super::process_tag(),
            next: AtomicU64::new(0),
        }
    }

    fn view(&self, route: usize) -> std::sync::MutexGuard<'_, View> {
        self.routes[route].view.lock().expect("fleet breaker view")
    }

    fn unique(&self) -> String {
        self.lease_id(self.next.fetch_add(1, Ordering::Relaxed))
    }

    /// A probe lease's member in Redis, from its number (a [`Hold`] carries the number).
    fn lease_id(&self, n: u64) -> String {
        format!("{}-{n}", self.me)
    }

    /// The fleet's view of `route` for the floor's combination (`None`: the fleet is off).
    fn fleet_state(&self, route: usize) -> Option<BreakerState> {
        self.fleet.is_on().then(|| self.view(route).state)
    }

    async fn fleet_admit(&self, route: usize, now: Instant) -> Option<FleetAnswer> {
        let keys = &self.routes[route].keys;
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let id = self.lease_id(n);
        let mut inv = ADMIT.prepare_invoke();
        inv.key(&keys[0]).key(&keys[3]);
        inv.arg(self.cfg.half_open_probes)
            .arg(ms(self.probe_lease))
            .arg(&id);
        const WHAT: &str = "asking a breaker";
        let asked = self.next.fetch_add(1, Ordering::Relaxed);
        let (state, wait, granted): (String, u64, u8) = self
            .fleet
            .call(WHAT, |mut c| async move { inv.invoke_async(&mut c).await })
            .await
            .ok()?;
        if granted > 1 {
            let why = format!("answered {granted} probe leases granted (0 or 1)");
            self.fleet.distrust(WHAT, &why);
            return None;
        }
        let mut seen = self.trusted(WHAT, &state, wait)?;
        seen.asked = asked;
        if seen.state == BreakerState::Open && seen.wait.is_zero() {
            // The script answers half_open once the open period is over. Taken as it is,
            // the engine would ask again at once, in a loop, until its budget is spent.
            let why =
                "answered open for 0ms to an admission (an open period that is over is half_open)";
            self.fleet.distrust(WHAT, why);
            return None;
        }
        if seen.state == BreakerState::Open {
            // Not asked again sooner than this: "open for 1ms" every time must not become a
            // loop of calls (a half-open answer would come one recheck later at most).
            seen.wait = seen.wait.max(self.cfg.open_for.min(PROBE_RECHECK));
        }
        let (answer, over) = self.take_answer(route, now, seen, granted == 1, (id, n));
        if over {
            // A warden Redis grants at most halfOpenProbes leases across the fleet; one
            // more for this process (a hostile or flapping server, or leases of an earlier
            // open period still out) goes back at once, and no attempt is asked for until
            // one of its own probes ends.
            self.fleet_record(route, now, Outcome::Cancelled, answer.lease)
                .await;
            self.view(route).full = true;
            return Some(FleetAnswer {
                admission: Admission::No,
                lease: None,
                ..answer
            });
        }
        Some(answer)
    }

    /// The view takes an admission's answer (`granted`: a lease, `lease`: its id and
    /// number); this call's own answer decides its attempt (the view may hold a newer
    /// one). Also: whether the lease is one more than this process may hold.
    fn take_answer(
        &self,
        route: usize,
        now: Instant,
        mut seen: Seen,
        granted: bool,
        lease: (String, u64),
    ) -> (FleetAnswer, bool) {
        let mut v = self.view(route);
        if seen.state == BreakerState::HalfOpen && !granted && v.probes.is_empty() {
            // Every probe lease is out, held by other processes: this one treats the
            // upstream as open and asks again shortly, instead of spinning on it. (Its own
            // probe's verdict comes back through its own record.)
            seen = Seen {
                state: BreakerState::Open,
                wait: PROBE_RECHECK,
                asked: seen.asked,
            };
        }
        let transition = v.observe(seen, now, || self.reason_seen(seen.state));
        if seen.asked >= v.asked {
            v.full = seen.state == BreakerState::HalfOpen && !granted;
        }
        let (admission, lease) = match seen.state {
            BreakerState::Closed => (Admission::Yes, None),
            BreakerState::HalfOpen if granted => {
                v.probes.push_back(lease.0);
                v.leases += 1;
                (Admission::Probe, Some(lease.1))
            }
            _ => (Admission::No, None),
        };
        let over = lease.is_some() && v.leases > self.cfg.half_open_probes;
        let answer = FleetAnswer {
            admission,
            lease,
            transition,
        };
        (answer, over)
    }

    async fn fleet_record(
        &self,
        route: usize,
        now: Instant,
        outcome: Outcome,
        lease: Option<u64>,
    ) -> Option<Option<Transition>> {
        let kind = if outcome.no_verdict() {
            "cancel"
        } else if outcome.forces_open() {
            "force"
        } else if outcome.is_breaker_failure() {
            "fail"
        } else {
            "ok"
        };
        // Only the lease this attempt holds is a probe's verdict (or is given back).
        let probe = lease.is_some();
        let probe_id = lease.map(|n| self.lease_id(n)).unwrap_or_default();
        if probe {
            let mut v = self.view(route);
            v.probes.retain(|p| *p != probe_id);
            v.leases = v.leases.saturating_sub(1);
            v.full = false;
        }
        let keys = &self.routes[route].keys;
        let mut inv = RECORD.prepare_invoke();
        for k in keys {
            inv.key(k);
        }
        inv.arg(kind).arg(u8::from(probe)).arg(probe_id);
        inv.arg(ms(self.cfg.window)).arg(self.cfg.min_calls);
        inv.arg(self.cfg.failure_rate).arg(ms(self.cfg.open_for));
        inv.arg(self.unique()).arg(ms(FORCED_FOR));
        const WHAT: &str = "recording an attempt";
        let asked = self.next.fetch_add(1, Ordering::Relaxed);
        let (state, wait, calls, failures): (String, u64, u64, u64) = self
            .fleet
            .call(WHAT, |mut c| async move { inv.invoke_async(&mut c).await })
            .await
            .ok()?;
        let mut seen = self.trusted(WHAT, &state, wait)?;
        seen.asked = asked;
        let mine = calls > 0 || (probe && kind != "cancel") || kind == "force";
        let reason = || match seen.state {
            BreakerState::Open if calls > 0 => format!(
                "{failures} of the last {calls} attempts across the fleet timed out or were unavailable; open for {}",
                format_duration(seen.wait)
            ),
            BreakerState::Open if mine => format!(
                "probe failed ({outcome}); open again across the fleet for {}",
                format_duration(seen.wait)
            ),
            BreakerState::Closed if mine => format!("probe succeeded ({outcome})"),
            BreakerState::ForcedOpen if mine => format!(
                "{outcome}: the route cannot work with this key or model; open across the fleet for {}",
                format_duration(FORCED_FOR)
            ),
            s => self.reason_seen(s),
        };
        let mut v = self.view(route);
        Some(v.observe(seen, now, reason))
    }

    /// The fleet's answer, if a warden process could have given it: a known state, and an
    /// open period no longer than this process's own longest (`openFor` × the backoff
    /// cap). Anything else (a hostile or broken server, or a process sharing the namespace
    /// with a longer `openFor`) gives the one warning and turns the fleet off: a planted
    /// "open until next year" must not keep a route from its reviews.
    fn trusted(&self, what: &str, state: &str, wait_ms: u64) -> Option<Seen> {
        let longest = self.cfg.open_for.saturating_mul(MAX_BACKOFF);
        let why = match Seen::parse(state, wait_ms) {
            Some(seen) if seen.wait <= longest => return Some(seen),
            Some(seen) => format!(
                "answered open for {}, longer than this process's breakers ever stay open (openFor × {MAX_BACKOFF} = {}); its breaker state is not trusted",
                format_duration(seen.wait),
                format_duration(longest)
            ),
            None => {
                let shown: String = state.chars().take(40).collect();
                format!(
                    "answered an unknown breaker state `{}`",
                    shown.escape_debug()
                )
            }
        };
        self.fleet.distrust(what, &why);
        None
    }

    fn reason_seen(&self, state: BreakerState) -> String {
        match state {
            BreakerState::Open => {
                "opened by the fleet's window (attempts of other warden processes)".into()
            }
            BreakerState::HalfOpen => format!(
                "openFor elapsed; letting {} probe(s) through across the fleet",
                self.cfg.half_open_probes
            ),
            BreakerState::ForcedOpen => {
                "forced open by the fleet (auth or invalid model on this upstream)".into()
            }
            BreakerState::Closed => "closed by the fleet (a probe succeeded)".into(),
        }
    }
}

impl Seen {
    fn parse(state: &str, wait_ms: u64) -> Option<Seen> {
        let state = match state {
            "closed" => BreakerState::Closed,
            "open" => BreakerState::Open,
            "half_open" => BreakerState::HalfOpen,
            "forced" => BreakerState::ForcedOpen,
            _ => return None,
        };
        Some(Seen {
            state,
            wait: Duration::from_millis(wait_ms),
            asked: 0,
        })
    }
}

impl View {
    /// Closed, with nothing seen yet.
    fn closed(now: Instant) -> View {
        View {
            state: BreakerState::Closed,
            open_until: now,
            opens: 0,
            opened_at: None,
            time_open: Duration::ZERO,
            probes: VecDeque::new(),
            leases: 0,
            full: false,
            asked: 0,
        }
    }

    /// Takes the fleet's state; a change is a transition with `reason`.
    fn observe(
        &mut self,
        seen: Seen,
        now: Instant,
        reason: impl FnOnce() -> String,
    ) -> Option<Transition> {
        if seen.asked < self.asked {
            return None;
        }
        self.asked = seen.asked;
        if seen.state == BreakerState::Open {
            self.open_until = now + seen.wait;
        }
        let from = self.state;
        if from == seen.state {
            return None;
        }
        let to = seen.state;
        if from == BreakerState::Closed {
            self.opened_at = Some(now);
        }
        if to == BreakerState::Closed
            && let Some(t) = self.opened_at.take()
        {
            self.time_open = self
                .time_open
                .saturating_add(now.saturating_duration_since(t));
        }
        if matches!(to, BreakerState::Open | BreakerState::ForcedOpen) {
            self.opens += 1;
        }
        if to != BreakerState::HalfOpen {
            self.probes.clear();
            self.full = false;
        }
        self.state = to;
        Some(Transition {
            from,
            to,
            reason: reason(),
        })
    }

    fn time_open(&self, now: Instant) -> Duration {
        let open_now = self
            .opened_at
            .map_or(Duration::ZERO, |t| now.saturating_duration_since(t));
        self.time_open.saturating_add(open_now)
    }
}

impl Breakers for FleetBreakers {
    fn would_admit(&self, route: usize, now: Instant) -> bool {
        if !self.floor.would_admit(route, now) {
            return false;
        }
        if !self.fleet.is_on() {
            return true;
        }
        let v = self.view(route);
        match v.state {
            BreakerState::Closed => true,
            BreakerState::HalfOpen => !v.full,
            BreakerState::Open => now >= v.open_until,
            BreakerState::ForcedOpen => false,
        }
    }

    fn admit(&self, route: usize, now: Instant) -> (Admission, Option<Transition>) {
        self.floor.local.admit(route, now)
    }

    fn record(
        &self,
        route: usize,
        now: Instant,
        outcome: Outcome,
        probe: bool,
    ) -> Option<Transition> {
        self.floor.local.record(route, now, outcome, probe)
    }

    fn admit_async(
        &self,
        route: usize,
        now: Instant,
    ) -> BoxFuture<'_, (Admission, Option<Transition>, Hold)> {
        Box::pin(async move {
            // The floor first: what this process's own outcomes opened is not admitted,
            // and the fleet is not asked (no lease is taken for it).
            let take = self.floor.take(route, now);
            let answer = if take.refused() || !self.fleet.is_on() {
                None
            } else {
                self.fleet_admit(route, now).await
            };
            let (admission, hold, level) = self.floor.admit(route, now, take, answer);
            let t = self.floor.show(route, self.fleet_state(route), level);
            (admission, t, hold)
        })
    }

    fn record_async(
        &self,
        route: usize,
        now: Instant,
        outcome: Outcome,
        hold: Hold,
    ) -> BoxFuture<'_, Option<Transition>> {
        Box::pin(async move {
            // Both levels, once each, with what each reserved for the attempt.
            let mut level = self.floor.record(route, now, outcome, hold);
            if let Some(t) = self.fleet_record(route, now, outcome, hold.lease).await {
                level.extend(self.floor.fleet_said(route, now, t.as_ref()));
                level.splice(0..0, t);
            }
            self.floor.show(route, self.fleet_state(route), level)
        })
    }

    fn force_open(&self, route: usize, now: Instant, reason: String) -> Option<Transition> {
        // This process's own floor: what it found dead stays dead here whatever the fleet
        // says (another process may reach the upstream by another network).
        let t = self.floor.local.force_open(route, now, reason)?;
        self.floor.show(route, self.fleet_state(route), vec![t])
    }

    fn reopens_at(&self, route: usize) -> Option<Instant> {
        let local = &self.floor.local;
        let fleet = self.fleet_state(route);
        let fleet_reopen = (fleet == Some(BreakerState::Open)).then(|| self.view(route).open_until);
        let local_state = local.state(route);
        let at = floor::reopen(
            (local_state, local.reopens_at(route)),
            (fleet, fleet_reopen),
        );
        let forced =
            local_state == BreakerState::ForcedOpen || fleet == Some(BreakerState::ForcedOpen);
        let now = Instant::now();
        if forced || self.would_admit(route, now) || at.is_some_and(|t| t > now) {
            return at;
        }
        // No open period left, yet the route does not admit: probes in flight (its own,
        // or the fleet's leases this process holds) decide it, and their end may free it
        // with no transition to announce (a fleet probe that failed while the fleet's view
        // stays closed). The engine sleeps until this instant when no route admits: none
        // would be a sleep to the unit's deadline, one in the past a busy loop for as long
        // as the probes run. So it looks again a recheck later.
        Some(now + PROBE_RECHECK)
    }

    fn state(&self, route: usize) -> BreakerState {
        self.floor.state(route, self.fleet_state(route))
    }

    fn figures(&self, route: usize, now: Instant) -> BreakerFigures {
        let local = self.floor.local.figures(route, now);
        let state = self.state(route);
        let v = self.view(route);
        BreakerFigures {
            state,
            opens: local.opens.max(v.opens),
            time_open: local.time_open.max(v.time_open(now)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(s: &str, ms: u64) -> Seen {
        Seen::parse(s, ms).unwrap()
    }

    #[test]
    fn the_view_turns_fleet_answers_into_transitions_and_figures() {
        let t0 = Instant::now();
        let mut v = View::closed(t0);
        assert!(v.observe(seen("closed", 0), t0, || "x".into()).is_none());
        let t = v
            .observe(seen("open", 30_000), t0, || "opened".into())
            .unwrap();
        assert_eq!(
            (t.from, t.to, t.reason.as_str()),
            (BreakerState::Closed, BreakerState::Open, "opened")
        );
        assert_eq!(v.open_until, t0 + Duration::from_secs(30));
        // Open again with a later end (another process's failed probe): no transition.
        assert!(v.observe(seen("open", 60_000), t0, || "x".into()).is_none());
        assert_eq!(v.open_until, t0 + Duration::from_secs(60));
        let t1 = t0 + Duration::from_secs(60);
        v.probes.push_back("p".into());
        assert_eq!(
            v.observe(seen("half_open", 0), t1, || "h".into())
                .unwrap()
                .to,
            BreakerState::HalfOpen
        );
        assert_eq!(v.probes.len(), 1, "a half-open view keeps its probe leases");
        assert_eq!(
            v.observe(seen("closed", 0), t1, || "c".into()).unwrap().to,
            BreakerState::Closed
        );
        assert!(v.probes.is_empty());
        assert_eq!((v.opens, v.time_open(t1)), (1, Duration::from_secs(60)));
        assert_eq!(
            v.observe(seen("forced", 0), t1, || "f".into()).unwrap().to,
            BreakerState::ForcedOpen
        );
        assert_eq!(v.opens, 2);
        assert!(Seen::parse("garbage", 0).is_none());
    }

    #[test]
    fn an_answer_asked_earlier_that_comes_back_later_changes_nothing() {
        let t0 = Instant::now();
        let at = |s: &str, wait: u64, asked: u64| Seen {
            asked,
            ..seen(s, wait)
        };
        // Two records in flight: the second opened the upstream; the first's "closed"
        // (asked before it) reaches its task after.
        let mut v = View::closed(t0);
        v.observe(at("open", 60_000, 2), t0, || "o".into()).unwrap();
        assert!(v.observe(at("closed", 0, 1), t0, || "c".into()).is_none());
        assert_eq!(v.state, BreakerState::Open);
        assert_eq!(v.open_until, t0 + Duration::from_secs(60));
        // A newer answer is taken.
        let t = v.observe(at("closed", 0, 3), t0, || "c".into()).unwrap();
        assert_eq!(t.to, BreakerState::Closed);
    }
}
