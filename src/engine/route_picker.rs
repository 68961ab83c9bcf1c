//! Which route an attempt goes to (docs/design.md rule 6): the routes in the order a
//! [`RouteOrder`] gives, the first whose breaker admits calls. The ordering rule is its
//! own small trait so another (least loaded) can replace [`Ordered`] without touching
//! admission. Under `routing = "spillover"` the picker also names the later routes whose
//! free permits a new unit may take instead of waiting ([`Pick::Route::spill`]).

use super::breakers::Breakers;
use crate::config::Routing;
use tokio::time::Instant;

/// What an ordering rule may look at.
#[derive(Debug, Clone, Copy)]
pub struct OrderInput<'a> {
    /// The routes the unit may use, in its preference order (all routes in config order,
    /// or a skill's `routes` list).
    pub allowed: &'a [usize],
    /// The route the unit's last attempt failed on, if any.
    pub last_failed: Option<usize>,
}

/// Orders the routes to try.
pub trait RouteOrder: Send + Sync {
    /// Route indices, most preferred first.
    fn order(&self, input: OrderInput<'_>) -> Vec<usize>;
}

/// Rule 6: the allowed routes in order for a first attempt; after a failure, the ones
/// after the failed one (wrapping), and the failed route itself last.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ordered;

impl RouteOrder for Ordered {
    fn order(&self, input: OrderInput<'_>) -> Vec<usize> {
        let a = input.allowed;
        match input
            .last_failed
            .and_then(|l| a.iter().position(|r| *r == l))
        {
            None => a.to_vec(),
            Some(p) => a[p + 1..].iter().chain(&a[..=p]).copied().collect(),
        }
    }
}

/// The picker's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pick {
    /// Try this route.
    Route {
        /// Its index.
        route: usize,
        /// Preferred routes passed over because their breakers do not admit calls.
        passed_over: Vec<usize>,
        /// The soonest one of those half-opens (a waiting unit goes back to it).
        preferred_reopen: Option<Instant>,
        /// Spillover: later routes that admit calls and take spillover, in order; a new
        /// unit takes the first of `route` and these with a free permit.
        spill: Vec<usize>,
    },
    /// No route admits calls now; the soonest an open one half-opens (None: every route
    /// is forced open, or there are no routes).
    NoneAdmits {
        /// When an open breaker lets a probe through.
        reopen: Option<Instant>,
        /// When the soonest route paused by back-pressure (its breaker admitting) may
        /// take attempts again.
        resume: Option<Instant>,
    },
}

/// Failover order plus breaker admission.
pub struct RoutePicker {
    order: Box<dyn RouteOrder>,
    routing: Routing,
    /// Per route: whether it takes spillover (`spill`); missing means yes.
    takes_spill: Vec<bool>,
}

impl Default for RoutePicker {
    fn default() -> Self {
        RoutePicker::new(Ordered)
    }
}

impl RoutePicker {
    /// A picker with this ordering rule.
    pub fn new(order: impl RouteOrder + 'static) -> Self {
        RoutePicker {
            order: Box::new(order),
            routing: Routing::Ordered,
            takes_spill: Vec::new(),
        }
    }

    /// Sets the routing policy and which routes take spillover (by index).
    pub fn with_spillover(mut self, takes_spill: Vec<bool>, routing: Routing) -> Self {
        self.takes_spill = takes_spill;
        self.routing = routing;
        self
    }

    /// Whether new units spill onto later routes' free permits.
    pub fn spills(&self) -> bool {
        self.routing == Routing::Spillover
    }

    /// The first route in order whose breaker admits calls at `now`.
    pub fn pick(&self, breakers: &dyn Breakers, input: OrderInput<'_>, now: Instant) -> Pick {
        self.pick_paced(breakers, &|_| None, input, now)
    }

    /// As [`RoutePicker::pick`], passing over the routes `paused` says are paused by
    /// back-pressure (docs/design.md section 13) as it passes over open breakers; waiting units
    /// come back when the pause ends.
    pub fn pick_paced(
        &self,
        breakers: &dyn Breakers,
        paused: &dyn Fn(usize) -> Option<Instant>,
        input: OrderInput<'_>,
        now: Instant,
    ) -> Pick {
        let order = self.order.order(input);
        let admits = |r: usize| breakers.would_admit(r, now) && paused(r).is_none();
        let back_at = |r: usize| breakers.reopens_at(r).or_else(|| paused(r));
        let Some(pos) = order.iter().position(|r| admits(*r)) else {
            return Pick::NoneAdmits {
                reopen: input
                    .allowed
                    .iter()
                    .filter_map(|r| breakers.reopens_at(*r))
                    .min(),
                resume: input
                    .allowed
                    .iter()
                    .filter(|r| breakers.would_admit(**r, now))
                    .filter_map(|r| paused(*r))
                    .min(),
            };
        };
        let passed_over = order[..pos].to_vec();
        // Failovers keep rule 6; only a unit's first attempt spills.
        let spill = if self.spills() && input.last_failed.is_none() {
            order[pos + 1..]
                .iter()
                .copied()
                .filter(|r| self.takes_spill.get(*r).copied().unwrap_or(true))
                .filter(|r| admits(*r))
                .collect()
        } else {
            Vec::new()
        };
        Pick::Route {
            route: order[pos],
            spill,
            preferred_reopen: passed_over.iter().filter_map(|r| back_at(*r)).min(),
            passed_over,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spillover_names_later_admitting_routes_that_take_spill_for_first_attempts_only() {
        let t0 = Instant::now();
        let cfg = BreakerSettings::default();
        let b = LocalBreakers::new(4, cfg, t0);
        for _ in 0..5 {
            b.record(2, t0, Outcome::Timeout, false); // route 2 open
        }
        let picker = RoutePicker::new(Ordered)
            .with_spillover(vec![true, true, true, false], Routing::Spillover);
        let Pick::Route { route, spill, .. } = picker.pick(&b, input(&[0, 1, 2, 3], None), t0)
        else {
            panic!("a route admits");
        };
        assert_eq!(
            (route, spill),
            (0, vec![1]),
            "open 2 and spill=false 3 left out"
        );
        let Pick::Route { route, spill, .. } = picker.pick(&b, input(&[0, 1, 2, 3], Some(0)), t0)
        else {
            panic!("a route admits");
        };
        assert_eq!((route, spill), (1, vec![]), "a failover follows rule 6");
        let ordered = RoutePicker::new(Ordered).with_spillover(vec![true; 4], Routing::Ordered);
        let Pick::Route { spill, .. } = ordered.pick(&b, input(&[0, 1, 2, 3], None), t0) else {
            panic!("a route admits");
        };
        assert!(spill.is_empty());
    }
    use crate::config::BreakerSettings;
    use crate::engine::breakers::LocalBreakers;
    use crate::provider::Outcome;
    use std::time::Duration;

    const ALL: &[usize] = &[0, 1, 2];

    fn input(allowed: &[usize], last_failed: Option<usize>) -> OrderInput<'_> {
        OrderInput {
            allowed,
            last_failed,
        }
    }

    #[test]
    fn ordered_tries_the_next_routes_then_the_failed_one_last() {
        assert_eq!(Ordered.order(input(ALL, None)), [0, 1, 2]);
        assert_eq!(Ordered.order(input(ALL, Some(0))), [1, 2, 0]);
        assert_eq!(Ordered.order(input(ALL, Some(1))), [2, 0, 1]);
        assert_eq!(Ordered.order(input(&[0], Some(0))), [0]);
        assert!(Ordered.order(input(&[], None)).is_empty());
    }

    #[test]
    fn a_skill_s_routes_keep_their_own_order_for_failover() {
        assert_eq!(Ordered.order(input(&[2, 0], None)), [2, 0]);
        assert_eq!(Ordered.order(input(&[2, 0], Some(2))), [0, 2]);
        assert_eq!(Ordered.order(input(&[2, 0], Some(0))), [2, 0]);
    }

    #[test]
    fn open_routes_are_passed_over_and_their_reopen_time_is_known() {
        let t0 = Instant::now();
        let cfg = BreakerSettings::default();
        let b = LocalBreakers::new(3, cfg, t0);
        for _ in 0..5 {
            b.record(0, t0, Outcome::Timeout, false);
        }
        b.record(1, t0, Outcome::Auth, false);
        let picker = RoutePicker::default();
        assert_eq!(
            picker.pick(&b, input(ALL, None), t0),
            Pick::Route {
                route: 2,
                passed_over: vec![0, 1],
                preferred_reopen: Some(t0 + cfg.open_for),
                spill: vec![],
            }
        );
        b.record(2, t0, Outcome::InvalidModel, false);
        assert_eq!(
            picker.pick(&b, input(ALL, None), t0),
            Pick::NoneAdmits {
                reopen: Some(t0 + cfg.open_for),
                resume: None,
            }
        );
        // After openFor, the open route admits a probe again.
        let later = t0 + cfg.open_for + Duration::from_secs(1);
        assert!(matches!(
            picker.pick(&b, input(ALL, None), later),
            Pick::Route { route: 0, .. }
        ));
    }
}
