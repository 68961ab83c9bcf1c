//! Bulkheads (docs/design.md rule 7): each route has its own permits, so one slow route cannot
//! hold permits another route needs. A permit is taken before an attempt and released
//! when it is dropped (tower's concurrency limit). [`Bulkhead`] is the permit source;
//! [`LocalBulkhead`] keeps semaphores in this process, another source could share
//! permits across processes. [`wait_for_permit`] waits for one while watching for a
//! reason to choose again (a breaker changed, a preferred route half-opens).

use futures_util::future::BoxFuture;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;

/// A held permit; dropping it gives it back.
pub struct Permit(#[allow(dead_code)] Box<dyn Send + Sync>);

impl Permit {
    /// Wraps whatever releases the permit when dropped.
    pub fn new(held: impl Send + Sync + 'static) -> Self {
        Permit(Box::new(held))
    }
}

/// Where attempts get their route's permit.
pub trait Bulkhead: Send + Sync {
    /// Waits for one of `route`'s permits.
    fn acquire(&self, route: usize) -> BoxFuture<'_, Permit>;
    /// One of `route`'s permits if one is free now (spillover asks before it waits).
    fn try_acquire(&self, route: usize) -> Option<Permit>;
    /// Waits for a permit for a unit that has not started. Units already started (a
    /// retry or failover, their hunk budget running) go first: by default there is no
    /// distinction.
    fn acquire_new(&self, route: usize) -> BoxFuture<'_, Permit> {
        self.acquire(route)
    }
    /// The route's cap.
    fn cap(&self, route: usize) -> usize;
    /// Sets how many of `route`'s permits may be held at once: its effective limit
    /// (docs/design.md section 13), at least 1 and at most the cap. Permits held above a lower
    /// limit are not taken back; they are not given out again when they return. By
    /// default the source has only its cap.
    fn set_limit(&self, route: usize, limit: usize) {
        let _ = (route, limit);
    }
    /// The most permits of the route held at once so far.
    fn peak(&self, route: usize) -> usize;
}

/// A permit source shared by several engines: `warden eval` runs many reviews at once,
/// each with its own engine, and one route's cap must hold across all of them.
impl<B: Bulkhead + ?Sized> Bulkhead for Arc<B> {
    fn acquire(&self, route: usize) -> BoxFuture<'_, Permit> {
        (**self).acquire(route)
    }
    fn try_acquire(&self, route: usize) -> Option<Permit> {
        (**self).try_acquire(route)
    }
    fn acquire_new(&self, route: usize) -> BoxFuture<'_, Permit> {
        (**self).acquire_new(route)
    }
    fn cap(&self, route: usize) -> usize {
        (**self).cap(route)
    }
    fn set_limit(&self, route: usize, limit: usize) {
        (**self).set_limit(route, limit)
    }
    fn peak(&self, route: usize) -> usize {
        (**self).peak(route)
    }
}

struct LocalRoute {
    permits: Arc<Semaphore>,
    /// The effective limit's bookkeeping over `permits`.
    gate: Arc<std::sync::Mutex<Gate>>,
    /// Units not started queue here (in order) and only the first of them waits among
    /// the permits' waiters, so a started unit's failover is never behind a queue of new
    /// units whose hunk budgets have not begun.
    lobby: tokio::sync::Mutex<()>,
    cap: usize,
    held: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
}

/// Per-route semaphores in this process.
pub struct LocalBulkhead(Vec<LocalRoute>);

impl LocalBulkhead {
    /// One bulkhead per cap (a cap of 0 counts as 1).
    pub fn new(caps: impl IntoIterator<Item = usize>) -> Self {
        LocalBulkhead(
            caps.into_iter()
                .map(|cap| LocalRoute {
                    permits: Arc::new(Semaphore::new(cap.max(1))),
                    gate: Arc::new(std::sync::Mutex::new(Gate {
                        issued: cap.max(1),
                        debt: 0,
                    })),
                    lobby: tokio::sync::Mutex::new(()),
                    cap: cap.max(1),
                    held: Arc::default(),
                    peak: Arc::default(),
                })
                .collect(),
        )
    }
}

/// A route's effective limit over its semaphore: `issued` permits exist (free or held),
/// and `debt` of them are to be forgotten as they come back, so the permits that can be
/// held are `issued - debt` (tokio's semaphore cannot take back a held permit).
struct Gate {
    issued: usize,
    debt: usize,
}

impl Gate {
    /// Moves the limit to `limit`: gives permits (cancelling debt first) or takes free
    /// ones and owes the rest.
    fn set(&mut self, permits: &Semaphore, limit: usize) {
        let now = self.issued - self.debt;
        if limit > now {
            let give = limit - now;
            let cancel = give.min(self.debt);
            self.debt -= cancel;
            permits.add_permits(give - cancel);
            self.issued += give - cancel;
        } else if limit < now {
            let take = now - limit;
            let forgot = permits.forget_permits(take);
            self.issued -= forgot;
            self.debt += take - forgot;
        }
    }
}

/// Counts the permit as held while it lives; gives it back, or forgets it while the
/// limit is lower than the permits issued.
struct Held {
    permit: Option<OwnedSemaphorePermit>,
    held: Arc<AtomicUsize>,
    gate: Arc<std::sync::Mutex<Gate>>,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.held.fetch_sub(1, Ordering::SeqCst);
        let mut gate = self.gate.lock().expect("gate lock");
        if gate.debt > 0
            && let Some(p) = self.permit.take()
        {
            p.forget();
            gate.debt -= 1;
            gate.issued -= 1;
        }
        // Otherwise the permit goes back (dropped with `self`), under the gate's lock so a
        // concurrent `set` sees it.
        drop(self.permit.take());
    }
}

impl LocalRoute {
    fn held(&self, permit: OwnedSemaphorePermit) -> Permit {
        let now = self.held.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        Permit::new(Held {
            permit: Some(permit),
            held: self.held.clone(),
            gate: self.gate.clone(),
        })
    }
}

impl Bulkhead for LocalBulkhead {
    fn acquire(&self, route: usize) -> BoxFuture<'_, Permit> {
        let r = &self.0[route];
        Box::pin(async move {
            let permit = r
                .permits
                .clone()
                .acquire_owned()
                .await
                .expect("semaphores are never closed");
            r.held(permit)
        })
    }

    fn try_acquire(&self, route: usize) -> Option<Permit> {
        let r = &self.0[route];
        r.permits
            .clone()
            .try_acquire_owned()
            .ok()
            .map(|p| r.held(p))
    }

    fn acquire_new(&self, route: usize) -> BoxFuture<'_, Permit> {
        let r = &self.0[route];
        Box::pin(async move {
            let _first_in_line = r.lobby.lock().await;
            self.acquire(route).await
        })
    }

    fn cap(&self, route: usize) -> usize {
        self.0[route].cap
    }

    fn set_limit(&self, route: usize, limit: usize) {
        let r = &self.0[route];
        let limit = limit.clamp(1, r.cap);
        r.gate.lock().expect("gate lock").set(&r.permits, limit);
    }

    fn peak(&self, route: usize) -> usize {
        self.0[route].peak.load(Ordering::SeqCst)
    }
}

/// How a wait for a permit ended.
pub enum Waited {
    /// The permit.
    Permit(Permit),
    /// Something changed (a breaker, a preferred route half-opened, cancellation):
    /// choose the route again.
    Rechoose,
    /// The wait's deadline passed.
    Expired,
}

/// What else a wait for a permit watches.
pub struct Wake<'a, 'n> {
    /// Breaker transitions (enabled before the route was chosen, so none is missed).
    pub changed: std::pin::Pin<&'a mut tokio::sync::futures::Notified<'n>>,
    /// The soonest a route preferred to this one half-opens.
    pub preferred_reopen: Option<Instant>,
    /// The end of the wait (hunk or review budget).
    pub until: Instant,
    /// Budget expiry or a signal.
    pub cancel: &'a CancellationToken,
}

/// Waits for a permit of `route`, or for a reason to choose again, within `wake.until`.
pub async fn wait_for_permit(bulkhead: &dyn Bulkhead, route: usize, wake: Wake<'_, '_>) -> Waited {
    match wait_for_any_permit(bulkhead, &[route], false, wake).await {
        AnyWaited::Permit(_, p) => Waited::Permit(p),
        AnyWaited::Rechoose => Waited::Rechoose,
        AnyWaited::Expired => Waited::Expired,
    }
}

/// How a wait for a permit of one of several routes ended.
pub enum AnyWaited {
    /// A permit of this route.
    Permit(usize, Permit),
    /// Choose the route again.
    Rechoose,
    /// The wait's deadline passed.
    Expired,
}

/// Spillover's wait: the first free permit of `routes` (in their order) if one is free
/// now, else whichever of them frees first, or a reason to choose again. So no permit
/// of these routes sits free while this unit waits. `fresh`: the unit has not started
/// (started units are served first).
pub async fn wait_for_any_permit(
    bulkhead: &dyn Bulkhead,
    routes: &[usize],
    fresh: bool,
    wake: Wake<'_, '_>,
) -> AnyWaited {
    for r in routes {
        if let Some(p) = bulkhead.try_acquire(*r) {
            return AnyWaited::Permit(*r, p);
        }
    }
    let reopen = wake.preferred_reopen.filter(|t| *t < wake.until);
    let any = futures_util::future::select_all(routes.iter().map(|r| {
        let r = *r;
        Box::pin(async move {
            let p = if fresh {
                bulkhead.acquire_new(r).await
            } else {
                bulkhead.acquire(r).await
            };
            (r, p)
        }) as BoxFuture<'_, _>
    }));
    tokio::select! {
        biased;
        _ = wake.cancel.cancelled() => AnyWaited::Rechoose,
        ((r, p), _, _) = any => AnyWaited::Permit(r, p),
        _ = wake.changed => AnyWaited::Rechoose,
        _ = sleep_until(reopen.unwrap_or(wake.until)), if reopen.is_some() => AnyWaited::Rechoose,
        _ = sleep_until(wake.until) => AnyWaited::Expired,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::sync::Notify;

    #[tokio::test(start_paused = true)]
    async fn a_started_unit_goes_before_units_that_have_not_started() {
        let b = Arc::new(LocalBulkhead::new([1]));
        let held = b.acquire(0).await;
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for i in 0..3 {
            let (b, order) = (b.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                let p = b.acquire_new(0).await;
                order.lock().unwrap().push(format!("new{i}"));
                tokio::time::sleep(Duration::from_secs(1)).await;
                drop(p);
            }));
            tokio::task::yield_now().await;
        }
        let (b2, order2) = (b.clone(), order.clone());
        tasks.push(tokio::spawn(async move {
            let p = b2.acquire(0).await;
            order2.lock().unwrap().push("failover".to_string());
            drop(p);
        }));
        tokio::task::yield_now().await;
        drop(held);
        for t in tasks {
            t.await.unwrap();
        }
        let order = order.lock().unwrap().clone();
        // The first new unit was already waiting among the permits' waiters; the
        // failover comes right after it, before the other new units.
        assert_eq!(order, ["new0", "failover", "new1", "new2"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_for_several_routes_takes_the_first_free_then_the_first_freed() {
        let b = LocalBulkhead::new([1, 1]);
        let notify = Notify::new();
        let cancel = CancellationToken::new();
        let until = Instant::now() + Duration::from_secs(100);
        let wake = |changed| Wake {
            changed,
            preferred_reopen: None,
            until,
            cancel: &cancel,
        };
        let changed = notify.notified();
        tokio::pin!(changed);
        let AnyWaited::Permit(r0, p0) = wait_for_any_permit(&b, &[0, 1], true, wake(changed)).await
        else {
            panic!("route 0 is free");
        };
        assert_eq!(r0, 0, "config order first");
        let changed = notify.notified();
        tokio::pin!(changed);
        let AnyWaited::Permit(r1, _p1) =
            wait_for_any_permit(&b, &[0, 1], true, wake(changed)).await
        else {
            panic!("route 1 is free");
        };
        assert_eq!(r1, 1, "a busy route does not hold the unit back");
        let start = Instant::now();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(7)).await;
            drop(p0);
        });
        let changed = notify.notified();
        tokio::pin!(changed);
        let AnyWaited::Permit(r, _p) = wait_for_any_permit(&b, &[0, 1], true, wake(changed)).await
        else {
            panic!("route 0 frees at 7 s");
        };
        assert_eq!((r, start.elapsed()), (0, Duration::from_secs(7)));
    }

    #[tokio::test(start_paused = true)]
    async fn permits_are_capped_counted_and_released_on_drop() {
        let b = LocalBulkhead::new([2, 0]);
        assert_eq!((b.cap(0), b.cap(1)), (2, 1));
        let p1 = b.acquire(0).await;
        let _p2 = b.acquire(0).await;
        let third = tokio::time::timeout(Duration::from_secs(1), b.acquire(0)).await;
        assert!(third.is_err(), "a third permit waits");
        drop(p1);
        let _p3 = tokio::time::timeout(Duration::from_secs(1), b.acquire(0))
            .await
            .expect("a dropped permit is given back");
        assert_eq!(b.peak(0), 2);
        assert_eq!(b.peak(1), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn the_effective_limit_gates_permits_under_the_cap_and_never_takes_held_ones() {
        let b = LocalBulkhead::new([4]);
        let mut held: Vec<Permit> = (0..4).map(|_| b.try_acquire(0).unwrap()).collect();
        b.set_limit(0, 2);
        assert!(b.try_acquire(0).is_none());
        held.pop();
        held.pop();
        assert!(
            b.try_acquire(0).is_none(),
            "returned above the limit: forgotten"
        );
        held.pop();
        let p = b.try_acquire(0).expect("one under the limit of 2");
        assert!(b.try_acquire(0).is_none(), "two held");
        // Raising it cancels what is still owed first; never above the cap.
        b.set_limit(0, 100);
        let more: Vec<Permit> = std::iter::from_fn(|| b.try_acquire(0)).collect();
        assert_eq!(more.len(), 2, "cap 4, two held");
        drop((p, held, more));
        b.set_limit(0, 0);
        let one = b.try_acquire(0).expect("never below 1");
        assert!(b.try_acquire(0).is_none());
        drop(one);
        b.set_limit(0, 3);
        let all: Vec<Permit> = std::iter::from_fn(|| b.try_acquire(0)).collect();
        assert_eq!(all.len(), 3);
        assert_eq!(b.peak(0), 4);
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_wakes_when_a_preferred_route_half_opens() {
        let b = LocalBulkhead::new([1]);
        let _busy = b.acquire(0).await;
        let notify = Notify::new();
        let cancel = CancellationToken::new();
        let start = Instant::now();
        let changed = notify.notified();
        tokio::pin!(changed);
        let w = wait_for_permit(
            &b,
            0,
            Wake {
                changed,
                preferred_reopen: Some(start + Duration::from_secs(30)),
                until: start + Duration::from_secs(100),
                cancel: &cancel,
            },
        )
        .await;
        assert!(matches!(w, Waited::Rechoose));
        assert_eq!(start.elapsed(), Duration::from_secs(30));
        let changed = notify.notified();
        tokio::pin!(changed);
        let w = wait_for_permit(
            &b,
            0,
            Wake {
                changed,
                preferred_reopen: None,
                until: start + Duration::from_secs(100),
                cancel: &cancel,
            },
        )
        .await;
        assert!(matches!(w, Waited::Expired));
        assert_eq!(start.elapsed(), Duration::from_secs(100));
    }
}
