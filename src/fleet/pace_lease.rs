//! Leases under an upstream's fleet total (docs/design.md section 13): while back-pressure has
//! lowered the upstream's limit for the fleet (`pace.rs`), each attempt also holds one of
//! that total's leases, so the fleet's attempts in flight stay under the total whatever
//! each process's own limit is and however many processes resume at once.
//!
//! A lease is a zset member whose score is its expiry on Redis's own clock (TIME inside
//! `lua/pace_lease.lua`), renewed while its attempt runs and given back when it ends: a
//! process that dies loses its leases within [`LEASE`]. Only taken while a total is set,
//! so a fleet that sees no back-pressure pays no round trip for it.
//!
//! The total grows back as the engine's own limit does above its known-good level: one
//! more after [`PROBE_AFTER`] × total × wait leases granted at it, the wait doubling (to
//! [`MOST_PROBE_WAIT`]) each time back-pressure lowers it again. Without that the total
//! would hold until it ran out and then every process would come back at its own limit at
//! once (measured: a burst of 429 every [`SHARE_TTL`]).

use super::{Fleet, ms};
use crate::engine::limit::PROBE_AFTER;
use std::sync::LazyLock;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

static TAKE: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("lua/pace_lease.lua")));
static RENEW: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("lua/permit_renew.lua")));

/// How long a fleet total lowered by back-pressure holds the fleet: long enough for the
/// processes to meet it, short enough that a provider that recovered is used again.
pub(crate) const SHARE_TTL: Duration = Duration::from_secs(10);

/// How long a lease lives without renewal (renewed every third of it): short, since a
/// lease a dead process leaves holds part of a total that may be 1 or 2.
pub(crate) const LEASE: Duration = Duration::from_secs(3);

/// How often a process waiting for a lease asks again (plus up to as much jitter, so the
/// fleet's waiters do not ask together).
pub(crate) const POLL: Duration = Duration::from_millis(50);

/// Where an upstream's leases and total live.
#[derive(Clone)]
pub(crate) struct LeaseKeys {
    pub(crate) leases: String,
    pub(crate) total: String,
    /// Leases granted at the total, the probe wait, when it was last lowered.
    pub(crate) growth: String,
}

/// The largest total (a larger one is no cap at all: 64 processes at the largest cap).
pub(crate) const MOST_TOTAL: usize = 1024;
/// The most the wait before a probe above the total doubles to.
pub(crate) const MOST_PROBE_WAIT: u32 = 16;

/// What one try at a lease found.
#[derive(Debug, PartialEq)]
enum Taken {
    Yes,
    /// The fleet holds the whole total.
    Full,
    /// No total is set (or the fleet is off): no lease is needed.
    NotNeeded,
}

/// Waits for a lease under the upstream's fleet total. None when no total is set or the
/// fleet is off: the attempt goes without one. Dropping this future gives up the wait; a
/// lease its script took meanwhile is given back.
pub(crate) async fn take(fleet: &Fleet, keys: &LeaseKeys, id: String) -> Option<Lease> {
    loop {
        match try_take(fleet, keys, &id).await {
            Taken::Yes => return Some(Lease::held(fleet.clone(), keys.leases.clone(), id)),
            Taken::NotNeeded => return None,
            Taken::Full => {
                let jitter = POLL.mul_f64(rand::random::<f64>());
                tokio::time::sleep(POLL + jitter).await;
            }
        }
    }
}

/// One try. The script runs in its own task: a call dropped on the wire would leave its
/// reply to arrive with no read grant (which fails the connection), and a lease it took
/// would be held by no one until it ran out.
async fn try_take(fleet: &Fleet, keys: &LeaseKeys, id: &str) -> Taken {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let (f, k, id) = (fleet.clone(), keys.clone(), id.to_string());
    tokio::spawn(async move {
        let what = "taking a lease under the fleet's lowered limit";
        let mut inv = TAKE.prepare_invoke();
        inv.key(&k.leases)
            .key(&k.total)
            .key(&k.growth)
            .arg(ms(LEASE))
            .arg(&id)
            .arg(PROBE_AFTER)
            .arg(ms(SHARE_TTL))
            .arg(MOST_TOTAL)
            .arg(MOST_PROBE_WAIT);
        let answer: Result<i64, _> = f
            .call(what, |mut c| async move { inv.invoke_async(&mut c).await })
            .await;
        let taken = match answer {
            Ok(1) => Taken::Yes,
            Ok(0) => Taken::Full,
            Ok(2) | Err(_) => Taken::NotNeeded,
            Ok(n) => {
                let why = format!("answered {n} to a lease script that returns 0, 1 or 2");
                f.distrust(what, &why);
                Taken::NotNeeded
            }
        };
        if let Err(Taken::Yes) = tx.send(taken) {
            give_back(f, k.leases, id).await;
        }
    });
    rx.await.unwrap_or(Taken::NotNeeded)
}

async fn give_back(fleet: Fleet, key: String, id: String) {
    let _ = fleet
        .query::<i64>(
            "giving back a lease under the fleet's lowered limit",
            redis::cmd("ZREM").arg(key).arg(id).clone(),
        )
        .await;
}

/// A held lease; dropping it gives it back.
pub(crate) struct Lease {
    fleet: Fleet,
    key: String,
    id: String,
    /// Stops the renewer between calls (aborting it could drop a call on the wire).
    stop: CancellationToken,
}

impl Lease {
    fn held(fleet: Fleet, key: String, id: String) -> Lease {
        let stop = CancellationToken::new();
        tokio::spawn(renew(fleet.clone(), key.clone(), id.clone(), stop.clone()));
        Lease {
            fleet,
            key,
            id,
            stop,
        }
    }
}

/// Renews a lease every third of [`LEASE`] while its attempt runs; stops when told to (a
/// call under way is finished first), when the lease is gone (it ran out: the process was
/// stalled longer than a lease) or when the fleet is off.
async fn renew(fleet: Fleet, key: String, id: String, stop: CancellationToken) {
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(LEASE / 3) => {}
        }
        let (key, id) = (key.clone(), id.clone());
        let renewed = fleet
            .call(
                "renewing a lease under the fleet's lowered limit",
                |mut c| async move {
                    RENEW
                        .key(key)
                        .arg(ms(LEASE))
                        .arg(id)
                        .invoke_async::<i64>(&mut c)
                        .await
                },
            )
            .await;
        if !matches!(renewed, Ok(1)) {
            return;
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.stop.cancel();
        let key = std::mem::take(&mut self.key);
        let id = std::mem::take(&mut self.id);
        // Outside a runtime (shutting down) the lease simply runs out.
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(give_back(self.fleet.clone(), key, id));
        }
    }
}
