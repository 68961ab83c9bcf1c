//! A range (or CI) reads warden.toml from the base of the change: when the base has none
//! and the change has one, the run says which side it read, why, and the ways out, instead
//! of "no routes are configured" next to a file that is right there.

use crate::support::Repo;
use crate::support::Toml;
use crate::support::{stderr_of, stdout_of};

fn run(mut cmd: assert_cmd::Command) -> (i32, String, String) {
    let out = cmd.output().unwrap();
    (out.status.code().unwrap(), stdout_of(&out), stderr_of(&out))
}

/// main without a config; a branch that adds the starter (`warden init`) and some code.
fn branch_adding_the_config() -> Repo {
    let r = Repo::new();
    r.write("src/lib.rs", "pub fn a() {}\n").commit_all("base");
    r.git(&["checkout", "-q", "-b", "feat"]);
    r.write(
        "src/db.rs",
        "fn q(id: &str) { run(\"SELECT * FROM t WHERE id=\" + id).unwrap(); }\n",
    );
    let (code, _, err) = run(r.warden(&["init"]));
    assert_eq!(code, 0, "{err}");
    r.commit_all("add warden");
    r
}

#[test]
fn a_range_whose_base_lacks_the_config_says_which_side_it_read_and_the_ways_out() {
    let r = branch_adding_the_config();
    let (code, _, err) = run(r.warden(&["review", "main...HEAD"]));
    assert_eq!(code, 2, "{err}");
    for said in [
        "warden.toml was read from the base of the change",
        "because a commit range is reviewed",
        "the base has no warden.toml",
        "the change adds one",
        "--trust-head-config",
        "commit warden.toml to the base branch",
    ] {
        assert!(err.contains(said), "{said:?} in {err}");
    }
    assert!(!err.contains("warden init"), "the config exists: {err}");
    // The first way out works: the branch's own config, its simulated route, a review.
    let (code, out, err) = run(r.warden(&["review", "main...HEAD", "--trust-head-config"]));
    assert_eq!(
        code, 1,
        "the SQL built by concatenation is high: {out}{err}"
    );
    assert!(out.contains("src/db.rs"), "{out}");
    // The second: once the base has it, the range reads it there.
    r.git(&["checkout", "-q", "main"]);
    r.git(&["checkout", "-q", "feat", "--", "warden.toml"]);
    r.commit_all("config on main");
    r.git(&["checkout", "-q", "feat"]);
    r.git(&["merge", "-q", "--no-edit", "main"]);
    let (code, out, err) = run(r.warden(&["review", "main...HEAD"]));
    assert_eq!(code, 1, "{out}{err}");
}

/// The decision for CI (docs/configuration.md): the pull request that adds warden.toml is
/// reviewed with what its base gives; with no route there, exit 2 with the CI form of the
/// message, never a quiet pass.
#[test]
fn in_ci_the_pull_request_adding_the_config_exits_2_saying_so() {
    let r = branch_adding_the_config();
    let mut cmd = r.warden(&["review"]);
    cmd.env("CI", "true");
    let (code, out, err) = run(cmd);
    assert_eq!(code, 2, "{out}{err}");
    for said in [
        "because CI is set",
        "this change adds one, which is not used for its own review",
        "merge warden.toml first",
        "never in CI",
    ] {
        assert!(err.contains(said), "{said:?} in {err}");
    }
    // With a route from outside the change, it reviews with the defaults and says the
    // change's warden.toml is not used.
    let outside = tempfile::tempdir().unwrap();
    let cfg = outside.path().join("org.toml");
    std::fs::write(
        &cfg,
        Toml::new()
            .route("sim", "sim", &[("profile", "healthy")])
            .build(),
    )
    .unwrap();
    let mut cmd = r.warden(&["review", "-c", cfg.to_str().unwrap()]);
    cmd.env("CI", "true");
    let (code, out, err) = run(cmd);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("edits warden.toml") && err.contains("reviewed as code"),
        "{err}"
    );
}
