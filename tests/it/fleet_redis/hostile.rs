//! A hostile or broken Redis (the fake of `support/resp.rs`) behind `[fleet]`: whatever it
//! answers to the breaker scripts (wrong types, absurd numbers, unknown states, a drip, an
//! endless bulk string, a connection closed mid-reply), the review has the outcome it has
//! without `[fleet]`, with one warning, within its budget, and without a panic.

use super::faults::{answering, baseline, one_warning, outcome};
use super::*;
use crate::support::resp::{FakeRedis, Misbehave};

/// The misbehaviours, each with what its one warning must say.
fn cases() -> Vec<(Misbehave, &'static str)> {
    use Misbehave::*;
    let slow = Duration::from_millis(100);
    vec![
        (
            Reply("*3\r\n$4\r\nopen\r\n:-5\r\n:0\r\n"),
            "failed asking a breaker",
        ),
        (
            Reply("*3\r\n$6\r\nclosed\r\n$3\r\nNaN\r\n:0\r\n"),
            "failed asking a breaker",
        ),
        (Reply("*1\r\n$6\r\nclosed\r\n"), "failed asking a breaker"),
        (Reply("$5\r\nhello\r\n"), "failed asking a breaker"),
        (Reply(":99999999999999999\r\n"), "failed asking a breaker"),
        (Reply("-ERR boom\r\n"), "failed asking a breaker"),
        (
            Reply("*3\r\n$8\r\nbananas!\r\n:0\r\n:0\r\n"),
            "answered an unknown breaker state `bananas!`",
        ),
        (
            Reply("*3\r\n$9\r\nhalf_open\r\n:0\r\n:7\r\n"),
            "answered 7 probe leases granted",
        ),
        // Open with no wait: the script says half_open once the open period is over, so
        // this is no warden's answer (and taken as it is, the engine asks again at once,
        // in a loop, until the budget is spent).
        (
            Reply("*3\r\n$4\r\nopen\r\n:0\r\n:0\r\n"),
            "answered open for 0ms",
        ),
        (
            Reply("*3\r\n$4\r\nopen\r\n:9223372036854775807\r\n:0\r\n"),
            "longer than this process's breakers ever stay open",
        ),
        (
            Drip("*3\r\n$6\r\nclosed\r\n:0\r\n:0\r\n", slow),
            "did not answer asking a breaker within 250ms",
        ),
        (
            EndlessBulk,
            "failed asking a breaker: redis sent more than its replies can be",
        ),
        (
            CloseMidReply("*3\r\n$6\r\nclosed\r\n:0\r\n:0\r\n"),
            "asking a breaker",
        ),
    ]
}

#[test]
fn whatever_a_hostile_redis_answers_the_review_is_the_one_without_fleet() {
    let run = FleetRun::new(3);
    answering(&run, 0);
    let want = baseline(&run, "");
    for (how, says) in cases() {
        let fake = FakeRedis::start(how.clone());
        run.config(Some(&fake.url()), &[("reviewBudget", "6s")], "");
        let before = run.fake.requests_for("primary").len();
        let t = Instant::now();
        let (code, v, err) = run.review();
        let took = t.elapsed();
        assert_eq!(outcome(code, &v), want, "{how:?}: {err}");
        one_warning(&err);
        // Each attempt asks Redis more than once (its breaker, the shared back-pressure,
        // the shared rate-limit windows), and on a loaded machine any of those calls may be
        // the one the hostile reply lands on: the reason must be the same.
        let calls = [
            "asking a breaker",
            "reading shared back-pressure",
            "looking up shared rate-limit windows",
        ];
        assert!(
            calls
                .iter()
                .any(|call| err.contains(&says.replace(calls[0], call))),
            "{how:?}: {err}"
        );
        assert!(fake.scripts() >= 1, "{how:?}: the fleet was asked");
        assert_eq!(
            run.fake.requests_for("primary").len() - before,
            3,
            "{how:?}: every unit went to the primary: {err}"
        );
        assert!(
            took < Duration::from_secs(7),
            "{how:?}: a 6 s review took {took:?}"
        );
        eprintln!(
            "{how:?}: {} bytes sent by the fake, review took {took:?}",
            fake.sent()
        );
        if matches!(how, Misbehave::EndlessBulk) {
            // The breaker calls in flight (16 KiB each) and the sockets' buffers; before the
            // cap, whatever loopback carried in 250 ms (286 MB measured).
            assert!(fake.sent() < SENT_BOUND, "{} bytes sent", fake.sent());
        }
    }
}

/// What an endless reply may put on the wire before warden stops it: the grants of the calls
/// in flight plus the two sockets' buffers (a few MiB on loopback at most).
const SENT_BOUND: u64 = 16 << 20;

/// A script call through the handle, granted `grant` bytes of reply.
async fn script_call(fleet: &Fleet, grant: u64) -> Result<::redis::Value, FleetError> {
    fleet
        .call_sized("asking a script", grant, |mut c| async move {
            ::redis::Script::new("return 1")
                .prepare_invoke()
                .invoke_async(&mut c)
                .await
        })
        .await
}

#[test]
fn an_endless_bulk_string_is_read_no_further_than_the_calls_in_flight_can_be_answered_with() {
    let rt = runtime();
    // One call granted a breaker's 16 KiB, one a cache read's 1 MiB, two at once (additive).
    for (grants, cap) in [
        (vec![16 << 10], 16 << 10),
        (vec![1 << 20], 1 << 20),
        (vec![16 << 10, 16 << 10], 32 << 10),
    ] {
        let fake = FakeRedis::start(Misbehave::EndlessBulk);
        let (warn, seen) = warnings();
        rt.block_on(async {
            let fleet = Fleet::connect(target(&fake.url(), None, None), warn)
                .await
                .expect("connects");
            let calls = grants.iter().map(|g| script_call(&fleet, *g));
            let answers = futures_util::future::join_all(calls).await;
            let says = format!("the calls in flight are answered in at most {cap} bytes");
            for a in answers {
                let e = a.unwrap_err();
                assert!(
                    matches!(e, FleetError::Redis { .. }) && e.to_string().contains(&says),
                    "{grants:?}: {e}"
                );
            }
            assert!(!fleet.is_on());
            // Warden closed the connection while the handle is still alive: the fake's writes
            // fail. Before the cap it read on until the handle was dropped.
            let t = Instant::now();
            while fake.ended() == 0 && t.elapsed() < Duration::from_secs(5) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            assert_eq!(fake.ended(), 1, "{grants:?}: the connection is still read");
            let sent = fake.sent();
            eprintln!("{grants:?}: the fake wrote {sent} bytes before warden closed");
            assert!(sent < cap + SENT_BOUND, "{grants:?}: {sent} bytes sent");
            drop(fleet);
        });
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert!(
            seen[0].contains("failed asking a script: redis sent more"),
            "{seen:?}"
        );
    }
}

#[test]
fn a_password_in_the_url_is_never_shown_even_when_the_server_echoes_it() {
    let run = FleetRun::new(2);
    answering(&run, 0);
    let want = baseline(&run, "");
    run.config(None, &[], "");
    let trace = run.cfg.path().join("trace.jsonl");
    for accept in [false, true] {
        let fake = FakeRedis::start(Misbehave::EchoPassword { accept });
        // Percent-encoded in the URL, sent decoded in AUTH: neither form may show.
        let url = fake.url().replace("//", "//:pa%24%24-horse-battery@");
        let mut cmd = run.command();
        cmd.env("WARDEN_REDIS_URL", &url)
            .arg("-v")
            .arg("--trace")
            .arg(&trace);
        let out = cmd.output().unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(outcome(out.status.code().unwrap(), &v), want, "{stderr}");
        one_warning(&stderr);
        let says = if accept {
            "failed asking a breaker: \"WRONGPASS\": not '***'"
        } else {
            "cannot connect"
        };
        assert!(stderr.contains(says), "{stderr}");
        // The report keeps the warning (redacted like everything else on stdout).
        let kept = v["warnings"][0]["message"].as_str().unwrap_or_default();
        assert!(kept.contains(says), "{:#?}", v["warnings"]);
        let traced = std::fs::read_to_string(&trace).unwrap();
        for text in [&*stdout, &*stderr, &traced] {
            for secret in ["pa$$-horse-battery", "pa%24%24-horse-battery", "horse"] {
                assert!(
                    !text.contains(secret),
                    "accept {accept}: {secret} in {text}"
                );
            }
        }
    }
}

#[test]
fn an_endless_answer_to_the_handshake_is_cut_off_and_the_run_is_local() {
    let fake = FakeRedis::start(Misbehave::EndlessPong);
    let rt = runtime();
    let (warn, seen) = warnings();
    rt.block_on(async {
        let fleet = Fleet::connect(target(&fake.url(), None, None), warn).await;
        assert!(fleet.is_none());
    });
    let t = Instant::now();
    while fake.ended() == 0 && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(fake.ended(), 1, "the connection was closed");
    assert!(
        fake.sent() < (64 << 10) + SENT_BOUND,
        "{} bytes",
        fake.sent()
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(
        seen[0].contains("cannot connect to redis")
            && seen[0].contains("the calls in flight are answered in at most 65536 bytes"),
        "{seen:?}"
    );
}

#[test]
fn a_shared_cache_read_with_the_wrong_number_of_values_is_one_warning_and_a_local_review() {
    let run = FleetRun::new(2);
    answering(&run, 0);
    let want = baseline(&run, "");
    // Every script call (the cache's read comes first) answers an empty list.
    let fake = FakeRedis::start(Misbehave::Reply("*0\r\n"));
    run.config(Some(&fake.url()), &[], "");
    let path = run.cfg.path().join("warden.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("[fleet]\n", "[fleet]\ncache = true\n")).unwrap();
    let (code, v, err) = run.review();
    assert_eq!(outcome(code, &v), want, "{err}");
    one_warning(&err);
    assert!(
        err.contains("failed reading the shared cache: answered 0 values for "),
        "{err}"
    );
}

#[test]
fn a_scan_whose_cursor_never_ends_is_cut_off_with_one_warning() {
    let fake = FakeRedis::start(Misbehave::Reply("-ERR unused\r\n"));
    let rt = runtime();
    let (warn, seen) = warnings();
    rt.block_on(async {
        // Calls bounded by 100 ms: the walk may take 240 of them (24 s). A shorter bound
        // made a loaded machine's slow answer a timeout instead of the cut-off tested here.
        let bound = Duration::from_millis(100);
        let fleet = Fleet::connect_with(target(&fake.url(), None, None), warn, bound)
            .await
            .expect("connects");
        let level = warden::cache::redis::RedisLevel(fleet.clone());
        let counted = tokio::time::timeout(Duration::from_secs(40), level.count()).await;
        let e = counted.expect("the walk ends").unwrap_err();
        assert!(
            e.to_string()
                .contains("SCAN did not come back to cursor 0 within 24s"),
            "{e}"
        );
        assert!(!fleet.is_on());
    });
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "{seen:?}");
}

#[test]
fn a_permit_script_answering_neither_0_nor_1_is_one_warning_and_local_permits() {
    let run = FleetRun::new(3);
    answering(&run, 0);
    let want = baseline(&run, "fleetMaxConcurrency = 1");
    let fake = FakeRedis::start(Misbehave::Reply(":7\r\n"));
    run.config(Some(&fake.url()), &[], "fleetMaxConcurrency = 1");
    let (code, v, err) = run.review();
    assert_eq!(outcome(code, &v), want, "{err}");
    one_warning(&err);
    assert!(
        err.contains("answered 7 to a permit script that returns 0 or 1"),
        "{err}"
    );
}
