//! Skill discovery from the repository folders, override of built-ins, and selection.

use crate::support::*;

fn skill(name: &str, body: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: {name} from the repo\nallowed-tools: Read Grep\n---\n{body}\n"
    )
}

#[test]
fn repo_skills_are_found_in_every_folder_and_override_built_ins() {
    let r = Repo::new();
    r.write("README.md", "x\n").commit_all("base");
    r.write(
        ".warden/skills/code-review/SKILL.md",
        skill("code-review", "Our own review rules."),
    )
    .write(
        ".agents/skills/perf/SKILL.md",
        skill("perf", "Look for slow code."),
    )
    .write(".claude/skills/style.md", skill("style", "Check style."))
    .write(
        ".claude/skills/code-review.md",
        skill("code-review", "Shadowed by .warden."),
    );
    let out = r.warden(&["skills", "--json"]).output().unwrap();
    assert_exit(&out, 0);
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list["schemaVersion"], 1);
    let find = |n: &str| {
        list["skills"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == n)
            .cloned()
            .unwrap()
    };
    let cr = find("code-review");
    assert_eq!(cr["source"], ".warden/skills/code-review/SKILL.md");
    assert_eq!(cr["active"], true);
    let overrides = cr["overrides"].to_string();
    assert!(
        overrides.contains(".claude/skills/code-review.md") && overrides.contains("built-in"),
        "{overrides}"
    );
    assert_eq!(find("perf")["source"], ".agents/skills/perf/SKILL.md");
    assert_eq!(find("style")["source"], ".claude/skills/style.md");
    assert_eq!(
        find("style")["allowedTools"],
        serde_json::json!(["Read", "Grep"])
    );
    assert_eq!(find("security-review")["source"], "built-in");
    assert_eq!(find("dos-review")["active"], false);

    let text = r.warden(&["skills", "--color", "never"]).output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("(overrides"), "{text}");
}

#[test]
fn skill_flag_selects_and_unknown_skill_is_a_clear_error() {
    let r = Repo::new();
    r.write("README.md", "x\n").commit_all("base");
    r.write(
        ".warden/skills/perf.md",
        skill("perf", "Look for slow code."),
    );
    r.write("src/a.rs", source_lines(3, "a"));
    let plan = r.plan(&["--skill", "perf", "--skill", "dos-review"]);
    assert_eq!(plan["skills"], serde_json::json!(["perf", "dos-review"]));
    let out = r.warden(&["plan", "--skill", "nope"]).output().unwrap();
    let err = assert_exit(&out, 2);
    assert!(
        err.contains("unknown skill `nope`") && err.contains("perf"),
        "{err}"
    );
}

#[test]
fn an_unknown_skill_in_the_config_is_reported_at_its_file_line_and_column() {
    let r = Repo::new();
    r.write("README.md", "x\n").commit_all("base");
    r.write("src/a.rs", source_lines(3, "a"));
    let file = r.path().join("warden.toml");
    for (toml, at) in [
        (
            "version = 1\n\n[[skills]]\nname = \"code-reveiw\"\n",
            ":4:8: unknown skill `code-reveiw`",
        ),
        (
            "version = 1\n\n[[triggers]]\nname = \"review\"\n  skill = \"sec-review\"\n",
            ":5:11: unknown skill `sec-review`",
        ),
    ] {
        r.config(toml);
        for cmd in [vec!["plan"], vec!["review", "--sim"], vec!["skills"]] {
            let out = r.warden(&cmd).output().unwrap();
            let err = stderr_of(&out);
            assert_eq!(out.status.code(), Some(2), "{cmd:?}: {err}");
            assert!(
                err.starts_with(&format!("error: {}{at}", file.display())),
                "{cmd:?}: {err}"
            );
        }
    }
}
