//! The floor's rule on tokio's paused clock, with the fleet's answers scripted (what
//! `FleetBreakers` gets from Redis; the Redis side is tested in `tests/it/fleet_redis`).

use super::*;
use crate::config::BreakerSettings;
use BreakerState::{Closed, ForcedOpen, HalfOpen, Open};
use std::time::Duration;
use tokio::time::advance;

const OPEN_FOR: Duration = Duration::from_secs(30);

/// Two attempts in the window open it; 30 s open; one probe.
fn floor() -> Floor {
    let cfg = BreakerSettings {
        window: Duration::from_secs(120),
        min_calls: 2,
        failure_rate: 0.5,
        open_for: OPEN_FOR,
        half_open_probes: 1,
    };
    Floor::new(LocalBreakers::new(1, cfg, Instant::now()), 1)
}

fn fleet(admission: Admission, lease: Option<u64>) -> Option<FleetAnswer> {
    Some(FleetAnswer {
        admission,
        lease,
        transition: None,
    })
}

/// The fleet's answer "closed" (it always says so: the hostile or broken case).
fn closed() -> Option<FleetAnswer> {
    fleet(Admission::Yes, None)
}

/// The fleet's view going from `from` to closed with this answer.
fn reclosed(from: BreakerState) -> Option<FleetAnswer> {
    Some(FleetAnswer {
        admission: Admission::Yes,
        lease: None,
        transition: Some(Transition {
            from,
            to: Closed,
            reason: "closed by the fleet (a probe succeeded)".into(),
        }),
    })
}

/// One whole admission: local's take, then (unless local refused) the fleet's answer.
fn admit(f: &Floor, answer: Option<FleetAnswer>) -> (Admission, Hold) {
    let now = Instant::now();
    let take = f.take(0, now);
    let answer = if take.refused() { None } else { answer };
    let (a, hold, _) = f.admit(0, now, take, answer);
    (a, hold)
}

fn record(f: &Floor, outcome: Outcome, hold: Hold) {
    f.record(0, Instant::now(), outcome, hold);
}

/// Opens the local breaker with two timeouts of plain calls.
fn open_locally(f: &Floor) {
    record(f, Outcome::Timeout, Hold::default());
    record(f, Outcome::Timeout, Hold::default());
    assert_eq!(f.local.state(0), Open);
}

const LOCAL_PROBE: Hold = Hold {
    local_probe: true,
    lease: None,
};

/// Not admitted, nothing held.
const REFUSED: (Admission, Hold) = (
    Admission::No,
    Hold {
        local_probe: false,
        lease: None,
    },
);

/// A fleet probe (lease `n`) that holds no local slot.
fn fleet_only(n: u64) -> Hold {
    Hold {
        local_probe: false,
        lease: Some(n),
    }
}

/// Opens local, lets `openFor` pass, and has the fleet (open) refuse the first probe.
async fn half_open_after_a_fleet_no(f: &Floor) {
    open_locally(f);
    advance(OPEN_FOR).await;
    assert_eq!(admit(f, fleet(Admission::No, None)), REFUSED);
}

#[tokio::test(start_paused = true)]
async fn a_locally_open_route_is_not_admitted_while_the_fleet_says_closed() {
    let f = floor();
    assert_eq!(admit(&f, closed()), (Admission::Yes, Hold::default()));
    open_locally(&f);
    advance(OPEN_FOR - Duration::from_millis(1)).await;
    assert!(!f.would_admit(0, Instant::now()));
    assert_eq!(admit(&f, closed()), REFUSED);
    assert_eq!(f.state(0, Some(Closed)), Open, "the more closed-off level");
    // Nor does the fleet re-closing shorten the open period.
    assert!(
        f.fleet_said(
            0,
            Instant::now(),
            reclosed(Open).unwrap().transition.as_ref()
        )
        .is_none()
    );
    assert_eq!(admit(&f, reclosed(Open)), REFUSED);
}

#[tokio::test(start_paused = true)]
async fn half_open_locally_sends_its_probes_only_whatever_the_fleet_says() {
    let f = floor();
    open_locally(&f);
    advance(OPEN_FOR).await;
    // The fleet says closed: a local probe, a plain call for the fleet.
    assert_eq!(admit(&f, closed()), (Admission::Probe, LOCAL_PROBE));
    assert!(!f.would_admit(0, Instant::now()), "its one slot is out");
    assert_eq!(admit(&f, closed()), REFUSED);
    // The probe times out: open again, for twice as long.
    record(&f, Outcome::Timeout, LOCAL_PROBE);
    assert_eq!(f.local.state(0), Open);
    advance(2 * OPEN_FOR - Duration::from_millis(1)).await;
    assert_eq!(admit(&f, closed()), REFUSED);
    advance(Duration::from_millis(1)).await;
    assert_eq!(admit(&f, closed()), (Admission::Probe, LOCAL_PROBE));
    // A good probe of its own closes it.
    record(&f, Outcome::Ok, LOCAL_PROBE);
    assert_eq!(f.local.state(0), Closed);
    assert_eq!(admit(&f, closed()), (Admission::Yes, Hold::default()));
}

#[tokio::test(start_paused = true)]
async fn a_fleet_no_or_a_cancelled_probe_gives_the_local_slot_back() {
    let f = floor();
    // The fleet is open (others saw failures): no, and the slot is free again.
    half_open_after_a_fleet_no(&f).await;
    assert!(f.would_admit(0, Instant::now()));
    // The fleet grants a lease: a probe at both levels.
    let both = Hold {
        local_probe: true,
        lease: Some(7),
    };
    assert_eq!(
        admit(&f, fleet(Admission::Probe, Some(7))),
        (Admission::Probe, both)
    );
    assert_eq!(admit(&f, fleet(Admission::Probe, Some(8))), REFUSED);
    // Cancelled: each level gets back what it gave (here the local slot), no verdict.
    record(&f, Outcome::Cancelled, both);
    assert_eq!(f.local.state(0), HalfOpen);
    assert_eq!(admit(&f, closed()), (Admission::Probe, LOCAL_PROBE));
}

#[tokio::test(start_paused = true)]
async fn a_fleet_probe_sent_while_local_was_closed_holds_off_local_probes_until_it_ends() {
    let f = floor();
    let probe = fleet_only(3);
    assert_eq!(
        admit(&f, fleet(Admission::Probe, Some(3))),
        (Admission::Probe, probe)
    );
    // It hangs; meanwhile this process's own calls open local, and openFor passes.
    open_locally(&f);
    advance(OPEN_FOR).await;
    assert!(!f.would_admit(0, Instant::now()));
    assert_eq!(admit(&f, closed()), REFUSED);
    assert_eq!(f.local.state(0), HalfOpen, "its slot was given back");
    // Its timeout is a late result for local (no verdict), and local may probe again.
    record(&f, Outcome::Timeout, probe);
    assert_eq!(f.local.state(0), HalfOpen);
    assert_eq!(admit(&f, closed()), (Admission::Probe, LOCAL_PROBE));
}

#[tokio::test(start_paused = true)]
async fn the_fleet_reclosing_closes_a_half_open_local_breaker_keeping_its_backoff() {
    let f = floor();
    half_open_after_a_fleet_no(&f).await;
    // Another process's probe closed the fleet: local closes, gives up its slot, the
    // attempt is a plain call.
    assert_eq!(
        admit(&f, reclosed(HalfOpen)),
        (Admission::Yes, Hold::default())
    );
    assert_eq!(f.local.state(0), Closed);
    // If the route fails again, local re-opens for longer than a fresh open.
    open_locally(&f);
    let opened = Instant::now();
    assert_eq!(f.local.reopens_at(0), Some(opened + 2 * OPEN_FOR));
    // A fleet that always said closed never re-closes anything.
    advance(2 * OPEN_FOR).await;
    assert_eq!(admit(&f, closed()), (Admission::Probe, LOCAL_PROBE));
    assert_eq!(admit(&f, closed()), REFUSED);
}

#[tokio::test(start_paused = true)]
async fn this_process_s_own_good_fleet_probe_clears_the_local_window() {
    let f = floor();
    record(&f, Outcome::Timeout, Hold::default());
    let probe = fleet_only(1);
    assert_eq!(
        admit(&f, fleet(Admission::Probe, Some(1))),
        (Admission::Probe, probe)
    );
    record(&f, Outcome::Ok, probe);
    // The timeout before it is forgotten: one more is not two of two.
    record(&f, Outcome::Timeout, Hold::default());
    assert_eq!(f.local.state(0), Closed);
    // A failed fleet probe is an ordinary failure for local.
    assert_eq!(
        admit(&f, fleet(Admission::Probe, Some(2))),
        (Admission::Probe, fleet_only(2))
    );
    record(&f, Outcome::Timeout, fleet_only(2));
    assert_eq!(f.local.state(0), Open);
}

#[tokio::test(start_paused = true)]
async fn forced_open_locally_stays_forced_open() {
    let f = floor();
    record(&f, Outcome::Auth, Hold::default());
    assert_eq!(f.local.state(0), ForcedOpen);
    advance(Duration::from_secs(3600)).await;
    assert!(
        f.fleet_said(
            0,
            Instant::now(),
            reclosed(Open).unwrap().transition.as_ref()
        )
        .is_none()
    );
    assert_eq!(admit(&f, closed()), REFUSED);
    assert_eq!(f.state(0, Some(Closed)), ForcedOpen);
    let reopen = reopen((ForcedOpen, None), (Some(Open), Some(Instant::now())));
    assert_eq!(reopen, None, "never");
}

#[tokio::test(start_paused = true)]
async fn the_engine_is_shown_the_more_closed_off_level_once_per_change() {
    assert_eq!(combine(Closed, Some(HalfOpen)), HalfOpen);
    assert_eq!(combine(HalfOpen, Some(Open)), Open);
    assert_eq!(combine(Open, Some(HalfOpen)), Open);
    assert_eq!(combine(Open, Some(ForcedOpen)), ForcedOpen);
    assert_eq!(combine(HalfOpen, None), HalfOpen);
    let t0 = Instant::now();
    let (soon, later) = (t0 + OPEN_FOR, t0 + 2 * OPEN_FOR);
    assert_eq!(
        reopen((Open, Some(soon)), (Some(Open), Some(later))),
        Some(later)
    );
    assert_eq!(
        reopen((Open, Some(later)), (Some(Closed), None)),
        Some(later)
    );
    assert_eq!(
        reopen((HalfOpen, None), (Some(Open), Some(soon))),
        Some(soon)
    );
    assert_eq!(reopen((Closed, None), (None, None)), None);

    let f = floor();
    let level = |to, reason: &str| Transition {
        from: Closed,
        to,
        reason: reason.into(),
    };
    assert_eq!(f.show(0, Some(Closed), vec![]), None);
    // The fleet opened it (its reason); then local opens too: nothing new to show.
    let t = f.show(0, Some(Open), vec![level(Open, "fleet")]).unwrap();
    assert_eq!((t.from, t.to, t.reason.as_str()), (Closed, Open, "fleet"));
    open_locally(&f);
    assert_eq!(f.show(0, Some(Open), vec![level(Open, "local")]), None);
    // The fleet closes while local stays open: still open, nothing to show.
    assert_eq!(f.show(0, Some(Closed), vec![level(Closed, "fleet")]), None);
    advance(OPEN_FOR).await;
    assert_eq!(admit(&f, closed()).0, Admission::Probe);
    let t = f.show(0, Some(Closed), vec![]).unwrap();
    assert_eq!((t.from, t.to), (Open, HalfOpen));
    assert_eq!(
        t.reason,
        "this process's breaker is half_open, the fleet's is closed"
    );
}

/// One step of a run, as the engine and a fleet (honest, broken or hostile) could take it.
#[derive(Debug, Clone)]
enum Step {
    /// An admission with this fleet answer (0: the fleet off, 1: no, 2: closed, 3: a
    /// lease, 4: closed after being open, 5: closed after being half-open).
    Admit(u8),
    /// The outcome of the attempt in flight at this index (modulo), each once.
    Record(usize, Outcome),
    /// Time passes.
    Advance(u64),
    /// A record's answer: the fleet went from open to closed (another process's probe).
    FleetCloses,
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    let outcome = prop_oneof![
        4 => Just(Outcome::Ok),
        4 => Just(Outcome::Timeout),
        2 => Just(Outcome::Unavailable),
        2 => Just(Outcome::Cancelled),
        1 => Just(Outcome::Auth),
    ];
    prop_oneof![
        (0u8..6).prop_map(Step::Admit),
        (any::<usize>(), outcome).prop_map(|(i, o)| Step::Record(i, o)),
        (0u64..90).prop_map(Step::Advance),
        Just(Step::FleetCloses),
    ]
}

fn answer(kind: u8, lease: u64) -> Option<FleetAnswer> {
    match kind {
        0 => None,
        1 => fleet(Admission::No, None),
        2 => closed(),
        3 => fleet(Admission::Probe, Some(lease)),
        4 => reclosed(Open),
        _ => reclosed(HalfOpen),
    }
}

proptest::proptest! {
    /// Whatever the fleet answers and in whatever order attempts end: after local refused,
    /// would_admit says no (else the engine asks in a loop); while this process's
    /// breaker is half-open, at most `halfOpenProbes` probes are out; and once every
    /// attempt has ended and the open periods are over, the route admits again, exactly
    /// `halfOpenProbes` probes if half-open (no slot or lease was lost).
    #[test]
    fn any_interleaving_keeps_the_probe_bound_and_gives_every_slot_back(
        probes in 1u32..4,
        steps in proptest::collection::vec(step(), 1..80),
    ) {
        let cfg = BreakerSettings {
            window: Duration::from_secs(120),
            min_calls: 2,
            failure_rate: 0.5,
            open_for: OPEN_FOR,
            half_open_probes: probes,
        };
        let t0 = Instant::now();
        let f = Floor::new(LocalBreakers::new(1, cfg, t0), 1);
        let mut now = t0;
        let mut out: Vec<Hold> = Vec::new();
        for (n, s) in steps.into_iter().enumerate() {
            match s {
                Step::Admit(kind) => {
                    let take = f.take(0, now);
                    proptest::prop_assert!(
                        !(take.refused() && f.would_admit(0, now)),
                        "refused, yet would_admit says yes (the engine asks again at once)"
                    );
                    let fleet = if take.refused() { None } else { answer(kind, n as u64) };
                    let (a, hold, _) = f.admit(0, now, take, fleet);
                    if a == Admission::No {
                        proptest::prop_assert_eq!(hold, Hold::default(), "nothing held");
                    }
                    if a != Admission::No {
                        out.push(hold);
                    }
                    if a != Admission::No && f.local.state(0) == HalfOpen {
                        let probing = out.iter().filter(|h| h.probe()).count() as u32;
                        proptest::prop_assert!(probing <= probes, "{} probes out", probing);
                    }
                }
                Step::Record(i, o) if !out.is_empty() => {
                    let hold = out.remove(i % out.len());
                    f.record(0, now, o, hold);
                }
                Step::Record(..) => {}
                Step::Advance(s) => now += Duration::from_secs(s),
                Step::FleetCloses => {
                    let t = reclosed(Open).and_then(|a| a.transition);
                    f.fleet_said(0, now, t.as_ref());
                }
            }
        }
        for hold in out.drain(..) {
            f.record(0, now, Outcome::Cancelled, hold);
        }
        now += OPEN_FOR * 8 * 2;
        let state = f.local.state(0);
        if state == ForcedOpen {
            return Ok(());
        }
        proptest::prop_assert!(f.would_admit(0, now), "{:?} route lost", state);
        let expect = if state == Closed { (Admission::Yes, 1) } else { (Admission::Probe, probes) };
        let admit = || {
            let take = f.take(0, now);
            let fleet = if take.refused() { None } else { closed() };
            f.admit(0, now, take, fleet).0
        };
        for _ in 0..expect.1 {
            proptest::prop_assert_eq!(admit(), expect.0);
        }
        if state != Closed {
            proptest::prop_assert_eq!(admit(), Admission::No);
        }
    }
}
