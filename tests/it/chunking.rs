//! Split, coalesce and context on real files.

use crate::support::*;

fn lines(n: usize) -> Vec<String> {
    (1..=n)
        .map(|i| format!("    let v{i} = step({i});"))
        .collect()
}

fn join(v: &[String]) -> String {
    v.iter().map(|l| format!("{l}\n")).collect()
}

#[test]
fn near_hunks_coalesce_and_far_hunks_stay_apart() {
    let r = Repo::new();
    let mut v = lines(300);
    r.write("src/a.rs", join(&v)).commit_all("base");
    v[49] = "    changed_a();".into(); // line 50
    v[69] = "    changed_b();".into(); // line 70: 19 unchanged lines between (< 30)
    v[249] = "    changed_c();".into(); // line 250: far away
    r.write("src/a.rs", join(&v));
    let plan = r.plan(&[]);
    let chunks = planned(&plan, "src/a.rs").unwrap()["chunks"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(chunks.len(), 2, "{chunks:?}");
    assert_eq!(chunks[0]["hunks"], 2);
    assert!(chunks[0]["startLine"].as_u64().unwrap() <= 50);
    assert!(chunks[0]["endLine"].as_u64().unwrap() >= 70);
    assert_eq!(chunks[1]["hunks"], 1);
    assert!(
        chunks[1]["startLine"].as_u64().unwrap() <= 250
            && chunks[1]["endLine"].as_u64().unwrap() >= 250
    );

    // With coalescing off, every hunk is its own chunk.
    r.config("version = 1\n[defaults.chunking.coalesce]\nenabled = false\n");
    let plan = r.plan(&[]);
    assert_eq!(
        planned(&plan, "src/a.rs").unwrap()["chunks"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
}

#[test]
fn a_large_hunk_is_split_and_no_line_is_lost() {
    let r = Repo::new();
    r.write("README.md", "x\n").commit_all("base");
    let mut body = String::new();
    for f in 0..60 {
        body.push_str(&format!("fn f{f}() {{\n"));
        for i in 0..8 {
            body.push_str(&format!(
                "    let value_{i} = compute_something({i}, {f});\n"
            ));
        }
        body.push_str("}\n\n");
    }
    r.write("src/big.rs", &body);
    let plan = r.plan(&[]);
    let file = planned(&plan, "src/big.rs").unwrap();
    let chunks = file["chunks"].as_array().unwrap();
    assert!(chunks.len() >= 3, "{}", chunks.len());
    assert!(chunks.iter().all(|c| c["split"] == true));
    let added: u64 = chunks.iter().map(|c| c["added"].as_u64().unwrap()).sum();
    assert_eq!(added, body.lines().count() as u64);
    // Chunks tile the file without overlap.
    for w in chunks.windows(2) {
        assert!(w[0]["endLine"].as_u64() < w[1]["startLine"].as_u64());
    }
    assert_accounts(&plan, None);
}

#[test]
fn context_lines_come_from_the_new_side_and_reach_the_prompt() {
    let r = Repo::new();
    let mut v = lines(100);
    r.write("src/a.rs", join(&v)).commit_all("base");
    v[49] = "    changed();".into();
    r.write("src/a.rs", join(&v));
    let with_context = r.plan(&[]);
    r.config("version = 1\n[defaults.chunking]\ncontextLines = 0\n");
    let without = r.plan(&[]);
    let chars = |p: &serde_json::Value| p["units"][0]["promptChars"].as_u64().unwrap();
    // 2 × 17 extra lines of about 30 characters each beyond git's 3 lines of context.
    assert!(chars(&with_context) > chars(&without) + 2 * 17 * 25);
}

#[test]
fn whole_file_mode_makes_one_chunk() {
    let r = Repo::new();
    let mut v = lines(200);
    r.write("src/a.rs", join(&v)).commit_all("base");
    v[10] = "    a();".into();
    v[150] = "    b();".into();
    r.write("src/a.rs", join(&v));
    r.config("version = 1\n[defaults.chunking]\nfilePatterns = [{ pattern = \"src/*.rs\", mode = \"whole-file\" }]\n");
    let plan = r.plan(&[]);
    let f = planned(&plan, "src/a.rs").unwrap();
    assert_eq!(f["mode"], "whole-file");
    assert_eq!(f["chunks"].as_array().unwrap().len(), 1);
}

#[test]
fn deletion_only_chunks_are_optional_units_after_required_ones() {
    let r = Repo::new();
    let mut v = lines(200);
    r.write("src/a.rs", join(&v)).commit_all("base");
    v[10] = "    a();".into();
    v.drain(150..160);
    r.write("src/a.rs", join(&v));
    let plan = r.plan(&["--skill", "code-review"]);
    let units = plan["units"].as_array().unwrap();
    assert_eq!(units.len(), 2);
    assert_eq!(units[0]["optional"], false);
    assert_eq!(units[1]["optional"], true);
    assert_accounts(&plan, None);
}
