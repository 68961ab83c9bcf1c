//! The README is a front door and `docs/` holds the rest: every section the long README
//! had lives on under a heading of a page, no user page points at files users lack or at
//! internal numbering, and the commands CI runs from the README are still in it.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The user pages: the README and every Markdown page under `docs/`.
fn user_pages() -> Vec<(PathBuf, String)> {
    let mut pages = vec![root().join("README.md")];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    pages.into_iter().map(|p| (p.clone(), read(&p))).collect()
}

fn headings(text: &str) -> Vec<String> {
    let mut in_fence = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        }
        if !in_fence && line.starts_with('#') {
            out.push(line.trim_start_matches('#').trim().to_string());
        }
    }
    out
}

/// Each heading of the README before it became a front door, and the page and heading that
/// carry its content now (its text moved whole; see the report of the change for the
/// sentence-by-sentence check).
const MOVED: &[(&str, &str, &str)] = &[
    ("First two commands", "README.md", "First two commands"),
    (
        "First two commands",
        "docs/development.md",
        "First two commands",
    ),
    ("Install", "docs/install.md", "Install"),
    ("Usage", "docs/usage.md", "Usage"),
    ("Reports", "docs/usage.md", "Reports"),
    (
        "In CI: the GitHub Action and examples",
        "docs/ci.md",
        "In CI: the GitHub Action and examples",
    ),
    (
        "One review sharded over a CI matrix",
        "docs/ci.md",
        "One review sharded over a CI matrix",
    ),
    ("Exit codes", "docs/usage.md", "Exit codes"),
    (
        "Execution policy",
        "docs/execution-policy.md",
        "Execution policy",
    ),
    (
        "Routing, cost budget and gateways",
        "docs/routing.md",
        "Routing, cost budget and gateways",
    ),
    (
        "`warden simulate`",
        "docs/simulator.md",
        "`warden simulate`",
    ),
    (
        "Verification pass",
        "docs/execution-policy.md",
        "Verification pass",
    ),
    ("Result cache", "docs/cache.md", "Result cache: using it"),
    (
        "Fleet mode: breakers and permits shared through Redis",
        "docs/fleet.md",
        "Fleet mode: breakers and permits shared through Redis",
    ),
    ("Simulator", "docs/simulator.md", "Simulator"),
    ("Telemetry", "docs/telemetry.md", "Telemetry"),
    (
        "What gets reviewed",
        "docs/selection.md",
        "What gets reviewed",
    ),
    (
        "What is skipped, and why",
        "docs/selection.md",
        "What is skipped, and why",
    ),
    ("Chunks", "docs/selection.md", "Chunks"),
    ("Skills", "docs/skills.md", "Skills"),
    ("Configuration", "docs/configuration.md", "Configuration"),
    (
        "TLS and proxies",
        "docs/configuration.md",
        "TLS and proxies",
    ),
    ("Security", "docs/security.md", "Security"),
    (
        "What is bounded, and by how much",
        "docs/security.md",
        "What is bounded, and by how much",
    ),
    ("Development", "docs/development.md", "Development"),
    (
        "(figures: build and test times)",
        "docs/benchmarks.md",
        "Build and test times",
    ),
    (
        "(figures: back-pressure)",
        "docs/benchmarks.md",
        "Back-pressure: a route's ceiling against a provider's limits",
    ),
    (
        "(figures: routing)",
        "docs/benchmarks.md",
        "Routing policies on a slow-tail primary",
    ),
    (
        "(figures: fleet)",
        "docs/benchmarks.md",
        "Fleet: shared back-pressure",
    ),
    (
        "(figures: fleet)",
        "docs/benchmarks.md",
        "Fleet: shared rate-limit windows",
    ),
    (
        "(figures: fleet)",
        "docs/benchmarks.md",
        "Fleet: shared breakers on a hanging primary",
    ),
];

#[test]
fn every_section_of_the_old_readme_has_a_heading_in_the_docs() {
    for (old, page, heading) in MOVED {
        let text = read(&root().join(page));
        assert!(
            headings(&text).iter().any(|h| h == heading),
            "`{old}` should live on under `{heading}` in {page}; its headings: {:?}",
            headings(&text)
        );
        // A heading with nothing under it would be a section lost in the move.
        let at = text.find(&format!(" {heading}\n")).unwrap();
        let body: String = text[at..].lines().skip(1).take(6).collect();
        assert!(
            body.trim().len() > 40,
            "{page}: `{heading}` has no text under it"
        );
    }
}

#[test]
fn the_readme_is_a_front_door() {
    let readme = read(&root().join("README.md"));
    let lines = readme.lines().count();
    assert!(
        lines <= 200,
        "README.md has {lines} lines: keep it a front door"
    );
    for must in [
        "## Install",
        "## Quick start",
        "warden review --sim --demo",
        "warden init",
        "provider = \"openai\"",
        "provider = \"anthropic\"",
        "provider = \"openrouter\"",
        "provider = \"litellm\"",
        "uses: warden-review/warden@v1",
        "## First two commands",
        // `.ci/run` runs the README's first command and its test command.
        "cargo run --release -- review --sim --diff fixtures/demo.diff",
        "scripts/test",
        "LICENSE-MIT",
        "LICENSE-APACHE",
    ] {
        assert!(readme.contains(must), "README.md should contain `{must}`");
    }
    let ci = read(&root().join(".ci/run"));
    assert!(
        ci.contains("review --sim --diff fixtures/demo.diff"),
        ".ci/run runs the README's first command"
    );
    assert!(
        ci.contains("scripts/test"),
        ".ci/run runs the README's test command"
    );
}

#[test]
fn no_user_page_points_at_internal_documents_or_numbering() {
    let internal = ["DESIGN.md", "§", "rule 8", "section 13"]; // cite-check: not a citation
    // docs/design.md is the contributors' contract: numbered so that the code can cite it.
    for (path, text) in user_pages()
        .into_iter()
        .filter(|(p, _)| !p.ends_with("docs/design.md"))
    {
        for word in internal {
            assert!(
                !text.contains(word),
                "{} mentions `{word}`: say the rule itself",
                path.display()
            );
        }
        // `rule N` / `issue N` in any number.
        for (i, _) in text
            .match_indices("rule ")
            .chain(text.match_indices("issue "))
        {
            let next = text[i..].split_whitespace().nth(1).unwrap_or("");
            assert!(
                !next.starts_with(|c: char| c.is_ascii_digit()),
                "{}: `{}` names internal numbering",
                path.display(),
                &text[i..(i + 12).min(text.len())]
            );
        }
    }
}

#[test]
fn every_relative_link_of_a_user_page_resolves() {
    for (path, text) in user_pages() {
        let dir = path.parent().unwrap();
        for (i, _) in text.match_indices("](") {
            let rest = &text[i + 2..];
            let target = &rest[..rest.find(')').unwrap_or(rest.len())];
            if target.contains("://") || target.starts_with('#') || target.starts_with("mailto:") {
                continue;
            }
            let file = target.split('#').next().unwrap();
            assert!(
                dir.join(file).exists(),
                "{}: link `{target}` points at nothing",
                path.display()
            );
        }
    }
}

#[test]
fn both_licenses_ship_and_the_manifest_names_them() {
    let mit = read(&root().join("LICENSE-MIT"));
    assert!(mit.contains("Permission is hereby granted, free of charge"));
    let apache = read(&root().join("LICENSE-APACHE"));
    assert!(apache.contains("Apache License") && apache.contains("Version 2.0, January 2004"));
    let manifest = read(&root().join("Cargo.toml"));
    for key in [
        "license = \"MIT OR Apache-2.0\"",
        "repository = ",
        "homepage = ",
        "keywords = ",
        "categories = ",
    ] {
        assert!(manifest.contains(key), "Cargo.toml should have `{key}`");
    }
}
