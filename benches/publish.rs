//! Publishing 300 findings onto a pull request that already holds 1,000 review threads and
//! 1,000 comments (read page by page): the requests `warden publish` makes and its wall
//! time, first run (everything new) and second run (everything already posted), against
//! the fake GitHub of the test suite on 127.0.0.1 with its oracles off (they would time
//! themselves, not warden). Run: `cargo bench --bench publish`.

#[path = "../tests/it/support/fake_github.rs"]
#[allow(dead_code)]
mod fake_github;
#[path = "../tests/it/support/github_oracle.rs"]
#[allow(dead_code)]
mod github_oracle;

use fake_github::{FakeGithub, NAME, NUMBER, OWNER, TOKEN};
use serde_json::{Value, json};
use std::time::Instant;

const HEAD: &str = "1111111111111111111111111111111111111111";
const FILE: &str = "src/big.rs";
const FINDINGS: u32 = 300;
const INLINE: u32 = 250;

fn patch() -> String {
    let mut p = format!("@@ -0,0 +1,{INLINE} @@\n");
    for i in 1..=INLINE {
        p.push_str(&format!("+    let v{i} = compute({i});\n"));
    }
    p
}

fn report() -> Value {
    let snap = include_str!("../tests/it/snapshots/it__report_formats__json.snap");
    let mut r: Value = serde_json::from_str(&snap[snap[4..].find("---").unwrap() + 7..]).unwrap();
    let template = r["findings"][0].clone();
    let findings: Vec<Value> = (1..=FINDINGS)
        .map(|i| {
            let mut f = template.clone();
            f["id"] = json!(format!("W{:016x}", 0xabc0_0000_u64 + u64::from(i)));
            f["path"] = json!(FILE);
            f["startLine"] = json!(i);
            f["endLine"] = json!(i);
            f["title"] = json!(format!("finding {i}"));
            f.as_object_mut().unwrap().remove("context");
            f
        })
        .collect();
    let mut unit = r["units"][0].clone();
    unit["path"] = json!(FILE);
    unit["status"] = json!("reviewed");
    unit["findings"] = json!([]);
    r["units"] = json!([unit]);
    r["findings"] = json!(findings);
    r["skippedFiles"] = json!([]);
    r["outcome"] = json!("complete");
    r["summary"]["units"] = json!(1);
    r["summary"]["reviewed"] = json!(1);
    r["summary"]["timedOut"] = json!(0);
    r["summary"]["skipped"] = json!(0);
    r["summary"]["findings"] = json!(FINDINGS);
    r["vcs"] =
        json!({"repositoryUri": format!("https://github.com/{OWNER}/{NAME}"), "revision": HEAD});
    r
}

fn run(gh: &FakeGithub, path: &std::path::Path) -> (f64, usize, Value) {
    let before = gh.log().len();
    let t = Instant::now();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_warden"))
        .args([
            "publish",
            path.to_str().unwrap(),
            "--to",
            "github",
            "--json",
        ])
        .args([
            "--repo",
            &format!("{OWNER}/{NAME}"),
            "--pr",
            &NUMBER.to_string(),
            "--head",
            HEAD,
        ])
        .args(["--api-url", &gh.api_url()])
        .env("GITHUB_TOKEN", TOKEN)
        .env_remove("GITHUB_EVENT_PATH")
        .env_remove("GITHUB_STEP_SUMMARY")
        .current_dir(path.parent().unwrap())
        .output()
        .expect("warden runs");
    let secs = t.elapsed().as_secs_f64();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (secs, gh.log().len() - before, v["publish"].clone())
}

fn main() {
    let patch = patch();
    let gh = FakeGithub::start(HEAD, &[(FILE, &patch)]);
    gh.state.lock().unwrap().oracles = false;
    gh.add_people_threads(1000, FILE, 1);
    gh.add_issue_comments(1000, "octocat");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.json");
    std::fs::write(&path, serde_json::to_string(&report()).unwrap()).unwrap();
    println!(
        "publish: {FINDINGS} findings ({INLINE} on diff lines), a pull request with 1000 review threads and 1000 comments"
    );
    for label in ["first run (all new)", "second run (all already posted)"] {
        let (secs, requests, p) = run(&gh, &path);
        let by = |m: &str| {
            gh.log()
                .iter()
                .rev()
                .take(requests)
                .filter(|l| l.method == m)
                .count()
        };
        println!(
            "  {label}: {requests} requests ({} GET, {} POST, {} PATCH, {} DELETE) in {secs:.2} s; posted {}, already posted {}, moved to body {}, failed {}",
            by("GET"),
            by("POST"),
            by("PATCH"),
            by("DELETE"),
            p["posted"],
            p["alreadyPosted"],
            p["movedToBody"],
            p["failed"]
        );
        if let Some(notes) = p["notes"].as_array() {
            for n in notes {
                println!("    {n}");
            }
        }
    }
}
