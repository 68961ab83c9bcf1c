//! `warden publish --to gitlab` over a merge request's life, against the stateful fake
//! GitLab (tests/it/support/fake_gitlab.rs): discussions with text positions posted once
//! and recognised after lines shift and titles change, a person's resolution suppresses, a
//! fix resolves (`resolved=true`), a reply vetoes, a moved head writes nothing, a refused
//! position goes to the run's note, the sticky note is edited in place, and a report of
//! another project is refused.

use crate::publish_github::{
    FAR, FILE, FIND, H1, H2, H4, PATCH1, PATCH2, PATCH4, SLOW, SQL, c, counts, report,
};
use crate::support::fake_gitlab::{FakeGitlab, IID, PROJECT, PROJECT_ID, TOKEN};
use crate::support::{stderr_of, stdout_of};
use assert_cmd::Command;
use serde_json::{Value, json};
use std::path::Path;

fn gl_report(head: &str, findings: &[crate::publish_github::F], status: &str) -> Value {
    let mut r = report(head, findings, status);
    r["vcs"] = json!({"repositoryUri": format!("https://gitlab.example.com/{PROJECT}.git"), "revision": head});
    r
}

/// `warden publish --to gitlab` with a merge request pipeline's environment.
fn publish(gl: &FakeGitlab, dir: &Path, report: &Value, head: &str) -> (i32, String, String) {
    let path = dir.join("report.json");
    std::fs::write(&path, serde_json::to_string(report).unwrap()).unwrap();
    let out = Command::cargo_bin("warden")
        .unwrap()
        .current_dir(dir)
        .args([
            "publish",
            path.to_str().unwrap(),
            "--to",
            "gitlab",
            "--json",
        ])
        .env("CI_API_V4_URL", gl.api_url())
        .env("CI_PROJECT_ID", PROJECT_ID.to_string())
        .env("CI_PROJECT_PATH", PROJECT)
        .env("CI_MERGE_REQUEST_IID", IID.to_string())
        .env("CI_COMMIT_SHA", head)
        .env("GITLAB_TOKEN", TOKEN)
        .env_remove("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        stdout_of(&out),
        stderr_of(&out),
    )
}

#[test]
fn a_merge_request_s_life_on_gitlab() {
    let gl = FakeGitlab::start(H1, &[(FILE, PATCH1)]);
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = publish(
        &gl,
        dir.path(),
        &gl_report(H1, &[SQL, SLOW, FIND, FAR], "reviewed"),
        H1,
    );
    assert_eq!(code, 0, "{out}{err}");
    let p = counts(&out);
    assert_eq!((c(&p, "posted"), c(&p, "failed")), (4, 0), "{p}");
    let threads = gl.threads();
    assert_eq!(threads.len(), 3);
    let pos = threads[0].notes[0].position.clone().unwrap();
    assert_eq!(
        (pos["position_type"].as_str(), pos["head_sha"].as_str()),
        (Some("text"), Some(H1))
    );
    let notes = gl.discussions().len() - threads.len();
    assert_eq!(
        notes, 2,
        "the run's note (the finding outside the diff) and the sticky note"
    );

    // Push 2: shifted and reworded: nothing new.
    gl.push(H2, &[(FILE, PATCH2)]);
    let moved = |f: crate::publish_github::F<'static>,
                 id: &'static str|
     -> crate::publish_github::F<'static> {
        (id, f.1, f.2 + 2, f.3 + 2, "reworded", f.5)
    };
    let r2 = gl_report(
        H2,
        &[
            moved(SQL, "Wsql2"),
            moved(SLOW, "Wslow2"),
            moved(FIND, "Wfind2"),
            FAR,
        ],
        "reviewed",
    );
    let (_, out, _) = publish(&gl, dir.path(), &r2, H2);
    let p = counts(&out);
    assert_eq!((c(&p, "posted"), c(&p, "alreadyPosted")), (0, 4), "{p}");
    assert_eq!(
        gl.discussions().len(),
        5,
        "no new discussion, the sticky note edited"
    );

    // A person resolves SLOW's discussion and replies on FIND's; then the fix.
    let id_of = |title: &str| {
        gl.threads()
            .into_iter()
            .find(|d| d.notes[0].body.contains(title))
            .unwrap()
            .id
    };
    gl.person_resolves(&id_of("Loads every row"));
    gl.person_replies(&id_of("find is untyped"), "Intended.");
    gl.push(H4, &[(FILE, PATCH4)]);
    let (code, out, err) = publish(
        &gl,
        dir.path(),
        &gl_report(H4, &[moved(SLOW, "Wslow3"), FAR], "reviewed"),
        H4,
    );
    assert_eq!(code, 0, "{out}{err}");
    let p = counts(&out);
    assert_eq!(
        (c(&p, "posted"), c(&p, "suppressed"), c(&p, "resolved")),
        (0, 1, 1),
        "{p}"
    );
    let resolved = |title: &str| {
        gl.threads()
            .into_iter()
            .find(|d| d.notes[0].body.contains(title))
            .unwrap()
            .notes[0]
            .resolved
    };
    assert!(
        resolved("SQL injection via term"),
        "the fixed finding's discussion"
    );
    assert!(
        !resolved("find is untyped"),
        "a discussion with a reply stays open"
    );
    gl.assert_clean();
}

#[test]
fn on_gitlab_a_moved_head_writes_nothing_a_refused_position_goes_to_the_note_and_another_project_is_refused()
 {
    let gl = FakeGitlab::start(H1, &[(FILE, PATCH1)]);
    let dir = tempfile::tempdir().unwrap();
    // The pipeline's commit is not the merge request's head any more.
    let (code, out, _) = publish(&gl, dir.path(), &gl_report(H2, &[SQL], "reviewed"), H2);
    assert_eq!(code, 0, "{out}");
    assert!(
        c(&counts(&out), "posted") == 0 && counts(&out)["headMoved"] == true,
        "{out}"
    );
    assert!(gl.writes().is_empty());
    // GitLab refuses line 3's position: that finding goes to the run's note.
    gl.state
        .lock()
        .unwrap()
        .refused_lines
        .push((FILE.into(), 3));
    let (code, out, err) = publish(
        &gl,
        dir.path(),
        &gl_report(H1, &[SQL, SLOW], "reviewed"),
        H1,
    );
    assert_eq!(code, 0, "{out}{err}");
    let p = counts(&out);
    assert_eq!((c(&p, "posted"), c(&p, "movedToBody")), (2, 1), "{p}");
    assert!(gl.discussions().iter().any(
        |d| d.notes[0].position.is_none() && d.notes[0].body.contains("SQL injection via term")
    ));
    // A report of another project: exit 2, nothing sent.
    let before = gl.log().len();
    let mut other = gl_report(H1, &[SQL], "reviewed");
    other["vcs"]["repositoryUri"] = json!("https://gitlab.example.com/evil/shop.git");
    let (code, _, err) = publish(&gl, dir.path(), &other, H1);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("evil/shop"), "{err}");
    assert_eq!(gl.log().len(), before);
    gl.assert_clean();
}
