//! Issue 27, point 6 (docs/design.md §14): reports never write through links the change
//! planted. Run in the checkout as the action runs it, a link committed at an `-o` or
//! `--trace` path is replaced by the report and the file it points to is untouched; a
//! path through a committed folder link is refused (exit 2) before any request.

use crate::support::Toml;
use crate::support::fake_provider::{Behavior, FakeProvider, findings_answer};
use crate::support::*;
use std::path::Path;

const KEY_VAR: &str = "WARDEN_LINKS_KEY";

/// A repository whose change commits the given links, a config outside it, a fake that
/// answers clean.
fn checkout_with_links(links: &[(&str, &Path)]) -> (Repo, tempfile::TempDir, FakeProvider) {
    let fake = FakeProvider::start();
    fake.default_behavior(Behavior::Answer(findings_answer(serde_json::json!([]))));
    let r = Repo::new();
    r.write("src/app.py", "def f():\n    return 1\n")
        .commit_all("base");
    r.write("src/app.py", "def f():\n    return 2\n");
    for (at, target) in links {
        std::os::unix::fs::symlink(target, r.path().join(at)).unwrap();
    }
    r.commit_all("change with links");
    r.write("src/app.py", "def f():\n    return 3\n");
    let cfg = tempfile::tempdir().unwrap();
    std::fs::write(
        cfg.path().join("warden.toml"),
        Toml::new()
            .exec(&[("reviewBudget", "20s")])
            .fake_routes(&fake.base_url(), KEY_VAR, 2)
            .build(),
    )
    .unwrap();
    (r, cfg, fake)
}

fn review(r: &Repo, cfg: &tempfile::TempDir, args: &[&str]) -> std::process::Output {
    let config = cfg.path().join("warden.toml");
    r.warden(&[
        "review",
        "--skill",
        "code-review",
        "-c",
        config.to_str().unwrap(),
    ])
    .args(args)
    .env(KEY_VAR, "sk-links-0123456789abcdef")
    .output()
    .unwrap()
}

#[test]
fn a_committed_link_at_an_output_path_leaves_its_target_untouched() {
    let outside = tempfile::tempdir().unwrap();
    let victims: Vec<_> = ["sarif", "md", "trace", "summary"]
        .iter()
        .map(|n| {
            let p = outside.path().join(format!("precious.{n}"));
            std::fs::write(&p, "precious\n").unwrap();
            p
        })
        .collect();
    let (r, cfg, fake) = checkout_with_links(&[
        ("warden.sarif", &victims[0]),
        ("report.md", &victims[1]),
        ("trace.jsonl", &victims[2]),
    ]);
    let summary = r.path().join("summary.md");
    std::os::unix::fs::symlink(&victims[3], &summary).unwrap();
    let out = review(
        &r,
        &cfg,
        &[
            "-o",
            "sarif=warden.sarif",
            "-o",
            "markdown=report.md",
            "--trace",
            "trace.jsonl",
            "--format",
            "github",
        ],
    );
    let _ = &fake;
    assert_exit(&out, 0);
    for v in &victims[..3] {
        assert_eq!(
            std::fs::read_to_string(v).unwrap(),
            "precious\n",
            "{}",
            v.display()
        );
    }
    for (name, needle) in [
        ("warden.sarif", "\"runs\""),
        ("report.md", "review"),
        ("trace.jsonl", "{"),
    ] {
        let p = r.path().join(name);
        assert!(
            !std::fs::symlink_metadata(&p).unwrap().is_symlink(),
            "{name} is still a link"
        );
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.to_lowercase().contains(needle), "{name}: {text}");
    }
    // No temporary is left beside them.
    let leftovers: Vec<_> = std::fs::read_dir(r.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".warden-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_step_summary_that_is_a_link_is_replaced_with_its_content_kept() {
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("precious");
    std::fs::write(&victim, "earlier step\n").unwrap();
    let (r, cfg, _fake) = checkout_with_links(&[]);
    let summary = r.path().join("summary.md");
    std::os::unix::fs::symlink(&victim, &summary).unwrap();
    let config = cfg.path().join("warden.toml");
    let out = r
        .warden(&[
            "review",
            "--skill",
            "code-review",
            "--format",
            "github",
            "-c",
        ])
        .arg(&config)
        .env(KEY_VAR, "sk-links-0123456789abcdef")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "earlier step\n");
    let text = std::fs::read_to_string(&summary).unwrap();
    assert!(
        text.starts_with("earlier step\n"),
        "appended after what was there: {text}"
    );
    assert!(text.len() > "earlier step\n".len());
}

#[test]
fn an_output_path_through_a_committed_folder_link_is_refused_before_any_request() {
    let outside = tempfile::tempdir().unwrap();
    let (r, cfg, fake) = checkout_with_links(&[("reports", outside.path())]);
    for args in [
        vec!["-o", "sarif=reports/warden.sarif"],
        vec!["--trace", "reports/trace.jsonl"],
    ] {
        let out = review(&r, &cfg, &args);
        let stderr = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("reports") && stderr.contains("symbolic link"),
            "{stderr}"
        );
        assert!(fake.requests().is_empty(), "{args:?}: a request was sent");
    }
    // `warden plan -o` too.
    let out = r
        .warden(&["plan", "-o", "reports/plan.txt"])
        .output()
        .unwrap();
    assert_exit(&out, 2);
    assert_eq!(
        std::fs::read_dir(outside.path()).unwrap().count(),
        0,
        "nothing was created outside"
    );
}
