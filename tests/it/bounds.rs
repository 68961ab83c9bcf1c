//! Issue 20 ("bounded whatever arrives, round 2"), points 1 and 3: an answer costs what it
//! is allowed to, and inputs are size-checked before they are read. Each test is an
//! attack that broke a bound before (docs/design.md §13, "Bounds").

use crate::support::cpu_hungry;
use crate::support::fake_provider::{Behavior, FakeProvider};
use crate::support::review::*;
use crate::support::{assert_exit, assert_success, stderr_of, stdout_of};
use serde_json::{Value, json};

/// An answer of `n` distinct high findings on the two added lines (11 and 12), compact so
/// that 100,000 of them stay under the 8 MiB body cap (about 4.5 MB, as in the attack).
fn flood_answer(n: usize) -> String {
    let list: Vec<Value> = (0..n)
        .map(|i| json!({"severity": "high", "title": format!("f{i}"), "line": 11 + (i % 2)}))
        .collect();
    json!({ "findings": list }).to_string()
}

// ---- point 1: answers cost what they are allowed to ---------------------------------

#[test]
fn a_provider_answering_100000_findings_per_unit_keeps_100_and_counts_the_rest() {
    let _alone = cpu_hungry();
    let fake = FakeProvider::start();
    fake.default_behavior(Behavior::Answer(flood_answer(100_000)));
    let review = Review::new(3);
    review.config(
        &[("reviewBudget", "20s"), ("hunkBudget", "20s")],
        &[route_cfg("flood", "openai", fake.base_url(), false)],
    );
    let text = review.cfg.path().join("report.txt");
    let sarif = review.cfg.path().join("report.sarif");
    let (code, v, stderr, _) = review.json(&[
        "-o",
        &format!("text={}", text.display()),
        "-o",
        &format!("sarif={}", sarif.display()),
    ]);
    // Honest: complete, and high findings fail the run.
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(v["outcome"], "complete", "{stderr}");
    for u in units(&v) {
        assert_eq!(u["status"], "reviewed", "{u}");
        assert_eq!(u["findings"].as_array().unwrap().len(), 100);
        assert_eq!(u["findingsCut"], 99_900);
    }
    assert_eq!(v["summary"]["findingsCut"], 3 * 99_900);
    assert_eq!(v["summary"]["findings"], 300);
    assert_eq!(v["findings"].as_array().unwrap().len(), 300);
    let text = std::fs::read_to_string(text).unwrap();
    assert!(text.contains("299700 findings cut"), "{text}");
    let sarif: Value = serde_json::from_str(&std::fs::read_to_string(sarif).unwrap()).unwrap();
    assert_eq!(sarif["runs"][0]["results"].as_array().unwrap().len(), 300);
}

#[test]
fn max_findings_per_answer_is_configurable_and_checked() {
    let fake = FakeProvider::start();
    fake.default_behavior(Behavior::Answer(flood_answer(10)));
    let review = Review::new(1);
    let write = |cap: &str| {
        let cfg = review.config_path();
        review.config(
            &[("reviewBudget", "20s")],
            &[route_cfg("few", "openai", fake.base_url(), false)],
        );
        let text = std::fs::read_to_string(&cfg).unwrap();
        let text = text.replacen(
            "[execution]\n",
            &format!("[execution]\nmaxFindingsPerAnswer = {cap}\n"),
            1,
        );
        std::fs::write(&cfg, text).unwrap();
    };
    write("4");
    let (code, v, stderr, _) = review.json(&[]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(units(&v)[0]["findings"].as_array().unwrap().len(), 4);
    assert_eq!(units(&v)[0]["findingsCut"], 6);
    for bad in ["0", "10001"] {
        write(bad);
        let out = review.command(&["--json"]).output().unwrap();
        let stderr = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{bad}: {stderr}");
        assert!(
            stderr.contains("warden.toml:3:") && stderr.contains("maxFindingsPerAnswer"),
            "{bad}: {stderr}"
        );
    }
    // Under the cap: nothing cut, and no findingsCut on the unit.
    write("100");
    let (_, v, _, _) = review.json(&[]);
    assert!(units(&v)[0].get("findingsCut").is_none());
    assert_eq!(v["summary"]["findingsCut"], 0);
}

// ---- point 3: inputs are size-checked before they are read ---------------------------

use crate::support::Repo;

/// `warden ARGS` in `repo`: exit code and stderr.
fn run(repo: &Repo, args: &[&str]) -> (i32, String, String) {
    let out = repo.warden(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        stdout_of(&out),
        stderr_of(&out),
    )
}

fn skill(name: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: a test skill\n---\n{body}\n")
}

#[test]
fn a_file_over_max_file_bytes_is_skipped_on_its_size_without_being_read() {
    let repo = Repo::new();
    repo.write("src/a.rs", crate::support::source_lines(5, "a"));
    repo.commit_all("base");
    // One 3 MB line, in the working tree and then in a commit (a blob).
    let big = vec![b'x'; 3_000_000];
    repo.write("data/big.txt", &big);
    repo.write("src/a.rs", crate::support::source_lines(7, "a"));
    let check = |plan: &Value, label: &str| {
        let s = plan["skippedFiles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["path"] == "data/big.txt")
            .unwrap_or_else(|| panic!("{label}: {plan}"));
        assert_eq!(s["reason"], "too-large:bytes", "{label}: {s}");
        let detail = s["detail"].as_str().unwrap();
        assert!(
            detail.starts_with("3000000 bytes > maxFileBytes 1048576")
                && detail.contains("not read"),
            "{label}: {detail}"
        );
        // Its line was never read, so it was never counted.
        assert_eq!(s["added"], 0, "{label}: {s}");
        assert!(
            plan["files"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["path"] == "src/a.rs"),
            "{label}"
        );
    };
    check(&repo.plan(&[]), "working tree");
    repo.commit_all("big");
    check(&repo.plan(&["HEAD~1..HEAD"]), "commit range");
}

/// Changes `src/a.rs` to `lines` lines and plans as CI does (steering files from the base
/// commit): the plan must be refused with exit 2; its stderr.
fn ci_plan_refused(repo: &Repo, lines: usize) -> String {
    repo.write("src/a.rs", crate::support::source_lines(lines, "a"));
    let out = repo
        .warden(&["plan", "--json"])
        .env("CI", "true")
        .output()
        .unwrap();
    assert_exit(&out, 2)
}

#[test]
fn skill_files_and_configs_over_their_caps_are_errors_naming_the_file() {
    let repo = Repo::new();
    repo.write("src/a.rs", crate::support::source_lines(5, "a"));
    let body = "x".repeat(256 * 1024);
    repo.write(".warden/skills/huge/SKILL.md", skill("huge", &body));
    let (code, _, stderr) = run(&repo, &["skills"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(".warden/skills/huge/SKILL.md") && stderr.contains("256 KiB"),
        "{stderr}"
    );
    // In CI the skill is read from the base commit: the blob's size decides.
    repo.commit_all("base");
    let stderr = ci_plan_refused(&repo, 6);
    assert!(
        stderr.contains(":.warden/skills/huge/SKILL.md") && stderr.contains("256 KiB"),
        "{stderr}"
    );
    std::fs::remove_dir_all(repo.path().join(".warden")).unwrap();
    // A config past 1 MiB: padding in a comment is still padding.
    let mut config = String::from("version = 1\n");
    config.push_str(&format!("# {}\n", "p".repeat(1024 * 1024)));
    repo.config(&config);
    let (code, _, stderr) = run(&repo, &["plan"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("warden.toml") && stderr.contains("1 MiB"),
        "{stderr}"
    );
    repo.commit_all("big config");
    let stderr = ci_plan_refused(&repo, 8);
    assert!(
        stderr.contains(":warden.toml") && stderr.contains("1 MiB"),
        "{stderr}"
    );
}

#[test]
fn a_yaml_alias_bomb_in_front_matter_is_an_error_naming_the_file() {
    let repo = Repo::new();
    repo.write("src/a.rs", crate::support::source_lines(5, "a"));
    // Six levels of ten: a million nodes when expanded, from under 600 bytes.
    let mut yaml = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
    for (name, prev) in ('b'..='f').zip('a'..='e') {
        let refs = vec![format!("*{prev}"); 10].join(", ");
        yaml.push_str(&format!("{name}: &{name} [{refs}]\n"));
    }
    let text = format!("---\n{yaml}name: bomb\ndescription: d\n---\nReview.\n");
    assert!(text.len() < 600);
    repo.write(".warden/skills/bomb/SKILL.md", &text);
    for args in [&["skills"][..], &["plan"][..]] {
        let (code, _, stderr) = run(&repo, args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(
            stderr.contains(".warden/skills/bomb/SKILL.md") && stderr.contains("alias"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn thousands_of_unknown_keys_print_ten_warnings_and_a_count() {
    let repo = Repo::new();
    repo.write("src/a.rs", crate::support::source_lines(5, "a"));
    let mut config = String::from("version = 1\n");
    for i in 0..2000 {
        config.push_str(&format!("typo{i} = 1\n"));
    }
    repo.config(&config);
    let (code, _, stderr) = run(&repo, &["plan"]);
    assert_eq!(code, 0, "{stderr}");
    let unknown = stderr
        .lines()
        .filter(|l| l.contains("unknown key `"))
        .count();
    assert_eq!(unknown, 10, "{stderr}");
    assert!(stderr.contains("… and 1990 more unknown keys"), "{stderr}");
    assert!(stderr.lines().count() < 40, "{stderr}");
}

#[test]
fn a_local_review_refuses_a_skill_linked_from_outside_the_repository() {
    let fake = FakeProvider::start();
    let review = Review::new(1);
    review.config(
        &[("reviewBudget", "20s")],
        &[route_cfg("m", "openai", fake.base_url(), false)],
    );
    let outside = tempfile::tempdir().unwrap();
    let secret = "OUTSIDE-SECRET-INSTRUCTIONS";
    std::fs::create_dir_all(outside.path().join("leak")).unwrap();
    std::fs::write(outside.path().join("leak/SKILL.md"), skill("leak", secret)).unwrap();
    let skills = review.repo.path().join(".warden/skills");
    std::fs::create_dir_all(&skills).unwrap();
    // A folder link and a file link, both out of the repository.
    std::os::unix::fs::symlink(outside.path().join("leak"), skills.join("leak")).unwrap();
    let out = review.command(&["--json"]).output().unwrap();
    let stderr = assert_exit(&out, 2);
    assert!(
        stderr.contains(".warden/skills/leak/SKILL.md")
            && stderr.contains("outside the repository"),
        "{stderr}"
    );
    std::fs::remove_file(skills.join("leak")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("leak/SKILL.md"), skills.join("leak.md"))
        .unwrap();
    let out = review.command(&["--json"]).output().unwrap();
    let stderr = assert_exit(&out, 2);
    assert!(stderr.contains(".warden/skills/leak.md"), "{stderr}");
    assert!(
        fake.requests()
            .iter()
            .all(|r| !r.body.to_string().contains(secret)),
        "the outside text reached the model"
    );
    // A link inside the repository is followed as before.
    std::fs::remove_file(skills.join("leak.md")).unwrap();
    review
        .repo
        .write("docs/inside.md", skill("inside", "Look for bugs."));
    std::os::unix::fs::symlink("../../docs/inside.md", skills.join("inside.md")).unwrap();
    let out = review.repo.warden(&["skills"]).output().unwrap();
    let (stdout, _) = assert_success(&out);
    assert!(stdout.contains("inside"), "{stdout}");
}

// ---- point 1: a signal while the reports are written acts within 1 s ------------------

#[test]
fn sigterm_while_writing_to_a_stdout_nobody_reads_exits_143_within_1s() {
    let fake = FakeProvider::start();
    // 100 findings per unit: a JSON report far larger than a pipe's buffer.
    fake.default_behavior(Behavior::Answer(flood_answer(100)));
    let review = Review::new(3);
    review.config(
        &[("reviewBudget", "30s"), ("hunkBudget", "30s")],
        &[route_cfg("w", "openai", fake.base_url(), false)],
    );
    // stdout is a pipe this test never reads: writing the report blocks once it is full.
    let mut child = review
        .command(&["--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while fake.requests().len() < 3 && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(fake.requests().len(), 3, "the review never ran");
    // Give it time to reach the write and block there.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "it did not block on the pipe"
    );
    let sent = std::time::Instant::now();
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    // The budget: the contract's 1 s, plus the scheduling slack the fault matrix allows.
    let within = std::time::Duration::from_millis(1000 + 250);
    let give_up = sent + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > give_up {
            let _ = child.kill();
            panic!("still blocked writing 20 s after SIGTERM");
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    let took = sent.elapsed();
    assert!(took <= within, "SIGTERM while writing took {took:?}");
    assert_eq!(status.code(), Some(143));
}
