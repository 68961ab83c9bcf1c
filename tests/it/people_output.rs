//! What people read (issue 31, "output for people"): breaker states in words, one duration
//! format, a Markdown verdict whose icon follows the exit code and that lists the files
//! skipped before review, and the JSON documents of `plan` and `skills` versioned. The
//! report cases run on the shared fixture (built through `report::build`); the commands
//! through the real binary, one of them in a pseudo-terminal of 80 columns (the live
//! progress bar draws only on a terminal).

use crate::report_formats::fixture;
use crate::support::{Repo, repo_adding};
use crate::support::{stderr_of, stdout_of};
use serde_json::Value;
use warden::engine::BreakerState;
use warden::render::{self, Layout, markdown, summary_md};
use warden::report::ReviewOutcome;

/// The Markdown verdict line (the line after the sticky marker).
fn verdict(body: &str) -> &str {
    body.lines().nth(1).unwrap_or("")
}

#[test]
fn the_markdown_verdict_s_icon_follows_the_exit_code() {
    // Complete, and the high finding reaches failOn: the run exits 1.
    let mut failing = fixture();
    failing.outcome = ReviewOutcome::Complete;
    assert_eq!(failing.exit_code(), 1);
    let body = markdown::render(&failing);
    let line = verdict(&body);
    assert!(!line.contains('✅'), "exit 1 but: {line}");
    assert!(line.starts_with('❌'), "{line}");
    assert!(line.contains("1 at `failOn`: the run fails"), "{line}");
    let step = summary_md::render(&failing);
    assert!(!step.contains('✅'), "exit 1 but: {step}");

    // Complete without a finding at failOn: exit 0, and only then ✅.
    let mut clean = fixture();
    clean.outcome = ReviewOutcome::Complete;
    for f in &mut clean.findings {
        f.fails_run = false;
    }
    assert_eq!(clean.exit_code(), 0);
    assert!(verdict(&markdown::render(&clean)).starts_with('✅'));
    assert!(summary_md::render(&clean).contains("✅ complete"));

    // Partial without failing findings: exit 3, a warning.
    let mut partial = fixture();
    for f in &mut partial.findings {
        f.fails_run = false;
    }
    assert_eq!(partial.exit_code(), 3);
    assert!(verdict(&markdown::render(&partial)).starts_with("⚠️"));
}

#[test]
fn the_markdown_comment_lists_files_skipped_before_review_with_their_rule() {
    let mut r = fixture();
    r.plan_command = Some("warden plan main...HEAD".into());
    let body = markdown::render(&r);
    let section = body
        .split("<details><summary>1 file skipped before review</summary>")
        .nth(1)
        .unwrap_or_else(|| panic!("no skipped-files section:\n{body}"));
    let section = section.split("</details>").next().unwrap();
    let skipped = &r.skipped_files[0];
    assert_eq!(skipped.path.to_string(), "package-lock.json");
    assert!(section.contains("- `package-lock.json`: "), "{section}");
    assert_eq!(skipped.rule, "built-in `package-lock.json`");
    assert!(
        section.contains("(rule: `` built-in `package-lock.json` ``)"),
        "{section}"
    );
    assert!(
        section.contains("`warden plan main...HEAD` says why"),
        "{section}"
    );
}

#[test]
fn breaker_states_read_as_words_for_people_and_as_enum_values_in_json() {
    console::set_colors_enabled(false);
    for (state, words) in [
        (BreakerState::Closed, "healthy"),
        (BreakerState::Open, "failing"),
        (BreakerState::HalfOpen, "probing"),
        (BreakerState::ForcedOpen, "failing for the run"),
    ] {
        let mut r = fixture();
        r.routes.get_mut("primary").unwrap().breaker.state = state;
        let text = render::text::render_with(&r, Layout::at(200, false));
        let step = summary_md::render(&r);
        for (what, out) in [("text", &text), ("step summary", &step)] {
            assert!(out.contains(words), "{what}: {out}");
            assert!(!out.contains(state.as_str()), "{what}: {out}");
        }
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(
            json["routes"]["primary"]["breaker"]["state"],
            state.as_str()
        );
    }
}

#[test]
fn every_human_output_prints_durations_one_way() {
    console::set_colors_enabled(false);
    let r = fixture();
    // The review took its whole 900 s budget.
    let text = render::text::render_with(&r, Layout::at(120, true));
    assert!(
        text.contains("2 findings in 15m (budget 15m); budget ran out"),
        "{text}"
    );
    // Route latencies: 90 s and 120.1 s are 1m30s and 2m, 0.9 s is 900ms.
    assert!(text.contains("1m30s") && text.contains("900ms"), "{text}");
    for out in [&text, &summary_md::render(&r), &markdown::render(&r)] {
        assert!(!out.contains("900s") && !out.contains("900.0s"), "{out}");
        assert!(!out.contains("90.0s") && !out.contains("0.9s"), "{out}");
    }
    assert!(summary_md::render(&r).contains("15m of a 15m budget"));
}

fn run(repo: &Repo, args: &[&str]) -> (i32, String, String) {
    let out = repo.warden(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        stdout_of(&out),
        stderr_of(&out),
    )
}

#[test]
fn plan_and_skills_json_carry_a_schema_version() {
    let repo = Repo::new();
    repo.write("a.py", "x = 1\n").commit_all("init");
    let (code, out, err) = run(&repo, &["plan", "--json", "--demo"]);
    assert_eq!(code, 0, "{err}");
    let plan: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(plan["schemaVersion"], 1, "{out}");
    assert!(
        out.trim_start().starts_with("{\n  \"schemaVersion\": 1,"),
        "{out}"
    );
    assert!(plan["units"].as_array().is_some_and(|u| !u.is_empty()));
    let (code, out, err) = run(&repo, &["skills", "--json"]);
    assert_eq!(code, 0, "{err}");
    let skills: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(skills["schemaVersion"], 1, "{out}");
    let names: Vec<&str> = skills["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"code-review"), "{names:?}");
}

#[test]
fn cache_stats_print_the_kept_age_in_the_duration_format() {
    let repo = Repo::new();
    repo.write("a.py", "x = 1\n").commit_all("init");
    let (code, out, err) = run(&repo, &["cache", "stats"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("kept for 30d (maxAge)"), "{out}");
}

#[test]
fn long_finding_lines_wrap_at_words_under_a_hanging_indent() {
    console::set_colors_enabled(false);
    let mut r = fixture();
    let title = "The session token is compared with a non-constant-time equality check";
    let description = "An attacker who can time responses recovers the token byte by byte; compare with hmac.compare_digest over the whole value instead of ==.";
    r.findings[0].title = title.into();
    r.findings[0].description = description.into();
    let text = render::text::render_with(&r, Layout::at(80, false));
    let block: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.contains("HIGH"))
        .take_while(|l| !l.is_empty())
        .collect();
    for l in &block {
        assert!(l.chars().count() <= 80, "{l:?}");
    }
    // The title's continuation hangs under the title (column 20), the description's two
    // columns in from its first line (column 13).
    assert!(
        block[0].starts_with("       18  HIGH     The session token"),
        "{block:#?}"
    );
    assert!(block[1].starts_with(&" ".repeat(20)) && !block[1].starts_with(&" ".repeat(21)));
    let body = block
        .iter()
        .position(|l| l.starts_with("           An attacker"))
        .unwrap();
    assert!(block[body + 1].starts_with(&" ".repeat(13)), "{block:#?}");
    // Words whole and in order: the block's words are the title's, the tag's and the
    // description's.
    let got: Vec<&str> = block.iter().flat_map(|l| l.split_whitespace()).collect();
    let want: Vec<&str> = ["18", "HIGH"]
        .into_iter()
        .chain(title.split_whitespace())
        .chain("[security-review, high confidence]".split_whitespace())
        .chain(description.split_whitespace())
        .collect();
    assert_eq!(got, want);
    // Today's binary wrote the finding as one 150-column line.
    assert!(render::text::render(&r).lines().any(|l| l.len() > 120));
}

/// `-v` progress on a route where nothing listens (the real binary, plain lines because
/// stderr is a pipe): units are named by file:lines and skill, the status line says what
/// the waiting units wait for (the breaker, the address it could not connect to), and
/// no two consecutive status lines say the same thing.
#[test]
fn progress_names_units_and_what_waiting_units_wait_for() {
    // Open for 8 s: the status line at 5 s falls inside the open period.
    let (review, port) = crate::dead_routes::dead_route_review(12, "8s");
    let (code, _, stderr, _) = review.json(&["-v"]);
    assert_eq!(code, 3, "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    // Units by name, never by index.
    let named = lines
        .iter()
        .filter(|l| l.contains(" (code-review) unavailable: "))
        .count();
    assert!(named >= 12, "{stderr}");
    assert!(!lines.iter().any(|l| l.contains("] unit ")), "{stderr}");
    // What the waiting units wait for, with the address.
    let address = format!("127.0.0.1:{port}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("units wait: route `dead` failing since +")
                && l.contains(&format!("failed connections to {address}"))),
        "{stderr}"
    );
    // No two consecutive status lines alike (their clocks aside).
    let status: Vec<String> = lines
        .iter()
        .filter(|l| l.contains(" units done "))
        .map(|l| {
            let l = l.split_once("] ").map_or(*l, |(_, rest)| rest);
            l.split(" · budget left ").next().unwrap().to_string()
                + l.split_once(" · budget left ").map_or("", |(_, r)| {
                    r.split_once(' ').map_or("", |(_, after)| after)
                })
        })
        .collect();
    assert!(status.len() >= 2, "{stderr}");
    for pair in status.windows(2) {
        assert_ne!(pair[0], pair[1], "{stderr}");
    }
}

/// The binary reads the width from `COLUMNS`: the demo review's text at 80 columns has
/// no line past 80 and the compact route table; with no width (a pipe) every line is
/// whole and the table complete.
#[test]
fn the_binary_wraps_its_text_report_to_columns() {
    let repo = Repo::new();
    repo.write("a.py", "x = 1\n").commit_all("init");
    let review = |columns: Option<&str>| {
        let mut cmd = repo.warden(&["review", "--sim", "--demo", "-q"]);
        if let Some(c) = columns {
            cmd.env("COLUMNS", c);
        }
        let out = cmd.output().unwrap();
        stdout_of(&out)
    };
    let narrow = review(Some("80"));
    assert!(narrow.contains("Review complete"), "{narrow}");
    for line in narrow.lines() {
        let plain = console::strip_ansi_codes(line);
        assert!(plain.chars().count() <= 80, "{plain:?}");
    }
    assert!(narrow.contains(" not ok "), "{narrow}");
    let whole = review(None);
    assert!(whole.contains("unavailable rate-ltd"), "{whole}");
    assert!(whole.lines().any(|l| l.chars().count() > 80), "{whole}");
}

/// At 80 columns (COLUMNS; stderr a pipe, as the suite runs) every line of the first
/// screen fits: the progress line is cut to the width instead of running past it, the
/// plan and an error are wrapped (before: the progress line ran past 100 columns, the plan
/// and errors ignored the width).
#[test]
fn progress_plan_and_errors_fit_80_columns() {
    let r = repo_adding("src/db.rs");
    let run = |args: &[&str]| {
        let out = r.warden(args).env("COLUMNS", "80").output().unwrap();
        (out.status.code().unwrap(), stdout_of(&out), stderr_of(&out))
    };
    let fits = |what: &str, text: &str| {
        for l in text.lines() {
            assert!(
                l.chars().count() <= 80,
                "{what}: {} columns: {l}",
                l.chars().count()
            );
        }
    };
    let (code, out, err) = run(&["review", "--sim"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("units done"), "progress was shown: {err}");
    fits("progress", &err);
    fits("report", &out);
    let (code, out, err) = run(&["plan"]);
    assert_eq!(code, 0, "{err}");
    fits("plan", &out);
    r.write("warden.toml", "version = 1\n").commit_all("config");
    let (code, _, err) = run(&["review", "main...HEAD"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--trust-head-config"), "{err}");
    fits("error", &err);
}

/// Runs warden with `args` in `dir` with stdout and stderr on a pseudo-terminal of `cols`
/// columns (as in a person's terminal: progress draws live bars there, not plain lines).
/// Returns the exit code and everything the terminal received.
fn in_a_terminal(dir: &std::path::Path, args: &[&str], cols: u16) -> (i32, String) {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::time::{Duration, Instant};
    let size = libc::winsize {
        ws_row: 24,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: out-pointers to two ints and a winsize that outlive the call.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: two new descriptors that nothing else owns. Close-on-exec: the processes
    // other tests spawn meanwhile must not keep this terminal open.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    for fd in [&master, &slave] {
        assert_ne!(
            unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) },
            -1
        );
    }
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("warden"));
    for var in ["NO_COLOR", "COLUMNS", "LINES", "CI", "GITHUB_STEP_SUMMARY"] {
        cmd.env_remove(var);
    }
    cmd.args(args)
        .current_dir(dir)
        .env_remove("WARDEN_REDIS_URL")
        .env("TERM", "xterm-256color")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("WARDEN_CACHE_DIR", crate::support::fresh_cache_dir())
        .stdin(std::process::Stdio::null())
        .stdout(slave.try_clone().unwrap())
        .stderr(slave);
    let mut child = cmd.spawn().unwrap();
    // The parent's copies of the terminal's far side go: the child holds the only ones.
    drop(cmd);
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    let mut exited = None;
    loop {
        let mut pfd = libc::pollfd {
            fd: master.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // Once the child is gone, only what the terminal still holds is read.
        let wait = if exited.is_some() { 0 } else { 100 };
        // SAFETY: one pollfd that lives through the call.
        let ready = unsafe { libc::poll(&mut pfd, 1, wait) };
        if ready > 0 {
            // SAFETY: reads into a buffer of the length given.
            let n = unsafe { libc::read(master.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n > 0 {
                seen.extend_from_slice(&buf[..n as usize]);
                continue;
            }
            // 0 or EIO: every copy of the far side is closed.
        }
        if exited.is_some() || ready > 0 {
            break;
        }
        exited = child.try_wait().unwrap();
        if exited.is_none() && Instant::now() > deadline {
            child.kill().unwrap();
            panic!(
                "warden {args:?} ran past 120 s in a terminal: {}",
                String::from_utf8_lossy(&seen)
            );
        }
    }
    let status = match exited {
        Some(s) => s,
        None => child.wait().unwrap(),
    };
    (
        status.code().unwrap(),
        String::from_utf8_lossy(&seen).into_owned(),
    )
}

/// In a real 80-column terminal (a pseudo-terminal, COLUMNS unset: the width comes from
/// the terminal), nothing warden draws is wider than the terminal: not the live progress
/// bar at any refresh, not the report. A line one column too wide wraps, and every redraw
/// of the bar would then scroll instead of replacing the line.
#[test]
fn a_review_in_an_80_column_terminal_draws_no_line_wider_than_80() {
    let r = repo_adding("src/db.rs");
    let (code, seen) = in_a_terminal(r.path(), &["review", "--sim"], 80);
    let text = console::strip_ansi_codes(&seen);
    assert_eq!(code, 1, "the SQL built by concatenation is high: {text}");
    assert!(text.contains("Review complete"), "{text}");
    assert!(
        text.contains("/2 units  (0 reviewed") && text.contains("2/2 units  (2 reviewed"),
        "the live bar was drawn and redrawn: {text:?}"
    );
    // What a terminal shows: each piece between carriage returns and newlines is a line
    // drawn from the first column (the bar's redraws are `\r` + clear line).
    for line in text.split(['\r', '\n']) {
        let w = console::measure_text_width(line);
        assert!(w <= 80, "{w} columns in an 80-column terminal: {line:?}");
    }
}
