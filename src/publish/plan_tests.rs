use super::*;
use crate::publish::diff_lines::DiffLines;

/// The shared fixture report (two units, findings with context), findings replaced.
fn report(findings: &[(&str, &str, u32, u32, &str)]) -> Report {
    let snap = include_str!("../../tests/it/snapshots/it__report_formats__json.snap");
    let json = &snap[snap[4..].find("---").unwrap() + 7..];
    let mut r: Report = serde_json::from_str(json).unwrap();
    let template = r.findings[0].clone();
    r.findings = findings
        .iter()
        .map(|(id, path, s, e, skill)| Finding {
            id: id.to_string(),
            path: path.to_string(),
            start_line: *s,
            end_line: *e,
            skill: skill.to_string(),
            context: None,
            ..template.clone()
        })
        .collect();
    for u in &mut r.units {
        u.path = "a.rs".into();
        u.skill = "sec".into();
        u.skills = vec!["sec".into()];
        u.status = UnitStatus::Reviewed;
        u.answer_cut = false;
    }
    r.skipped_files.clear();
    r
}

fn diff(lines: &[(u32, &str)]) -> DiffLines {
    let mut d = DiffLines::default();
    d.files.insert(
        "a.rs".into(),
        lines.iter().map(|(l, t)| (*l, t.to_string())).collect(),
    );
    d
}

fn thread(id: &str, line: Option<u32>, m: Marker) -> Thread {
    Thread {
        id: id.into(),
        resolved: false,
        resolved_by_warden: false,
        outdated: false,
        path: "a.rs".into(),
        line,
        marker: Some(m),
        replied: false,
    }
}

fn run(r: &Report, d: &DiffLines, threads: &[Thread]) -> Plan {
    plan(&Input {
        report: r,
        diff: d,
        threads,
        in_bodies: &[],
        resolve: Resolve::Yes,
        max_resolve: 50,
    })
}

#[test]
fn new_findings_go_inline_on_hunk_lines_and_to_the_body_elsewhere() {
    let r = report(&[
        ("W1", "a.rs", 2, 3, "sec"),
        ("W2", "a.rs", 3, 9, "sec"),
        ("W3", "a.rs", 40, 40, "sec"),
        ("W4", "b.rs", 1, 1, "sec"),
    ]);
    let d = diff(&[(1, "a"), (2, "b"), (3, "c")]);
    let p = run(&r, &d, &[]);
    let places: Vec<&Place> = p.new.iter().map(|n| &n.place).collect();
    assert_eq!(
        places,
        vec![
            &Place::Inline {
                line: 3,
                start: Some(2),
                exact: true
            },
            &Place::Inline {
                line: 3,
                start: None,
                exact: false
            },
            &Place::Body,
            &Place::Body,
        ]
    );
}

#[test]
fn a_shifted_reworded_finding_is_already_posted_and_a_resolved_one_suppressed() {
    let d1 = diff(&[(5, "query(term)")]);
    let posted = marker_of(&report(&[("Wold", "a.rs", 5, 5, "sec")]).findings[0], &d1);
    // Push 2: two lines inserted above, the title reworded (a new id).
    let d2 = diff(&[(1, "x"), (2, "y"), (7, "query(term)")]);
    let r2 = report(&[("Wnew", "a.rs", 7, 7, "sec")]);
    let p = run(&r2, &d2, &[thread("T1", Some(7), posted.clone())]);
    assert_eq!((p.new.len(), p.already_posted, p.suppressed), (0, 1, 0));
    let mut resolved = thread("T1", Some(7), posted.clone());
    resolved.resolved = true;
    let p = run(&r2, &d2, &[resolved]);
    assert_eq!((p.new.len(), p.already_posted, p.suppressed), (0, 0, 1));
    // Another skill on the same line is a different finding.
    let other = report(&[("Wx", "a.rs", 7, 7, "perf")]);
    assert_eq!(
        run(&other, &d2, &[thread("T1", Some(7), posted)]).new.len(),
        1
    );
}

#[test]
fn a_fixed_finding_resolves_only_when_every_rule_holds() {
    let d1 = diff(&[(5, "query(term)")]);
    let posted = marker_of(&report(&[("W1", "a.rs", 5, 5, "sec")]).findings[0], &d1);
    let fixed = diff(&[(5, "query(?, term)")]);
    let clean = report(&[]);
    assert_eq!(
        run(&clean, &fixed, &[thread("T1", Some(5), posted.clone())]).resolve,
        vec!["T1"]
    );
    // Outdated with no line: changed too.
    let mut out = thread("T1", None, posted.clone());
    out.outdated = true;
    assert_eq!(run(&clean, &fixed, &[out]).resolve, vec!["T1"]);
    // The line did not change: the model just did not say it this time.
    assert!(
        run(&clean, &d1, &[thread("T1", Some(5), posted.clone())])
            .resolve
            .is_empty()
    );
    // A person replied.
    let mut replied = thread("T1", Some(5), posted.clone());
    replied.replied = true;
    assert!(run(&clean, &fixed, &[replied]).resolve.is_empty());
    // The file was not completely reviewed with that skill.
    let mut partial = report(&[]);
    partial.units[0].status = UnitStatus::TimedOut;
    assert!(
        run(&partial, &fixed, &[thread("T1", Some(5), posted.clone())])
            .resolve
            .is_empty()
    );
    let mut cut = report(&[]);
    cut.units[0].answer_cut = true;
    assert!(
        run(&cut, &fixed, &[thread("T1", Some(5), posted.clone())])
            .resolve
            .is_empty()
    );
    // A person's own thread is never warden's to resolve.
    let mut theirs = thread("T2", Some(5), posted.clone());
    theirs.marker = None;
    assert!(run(&clean, &fixed, &[theirs]).resolve.is_empty());
    // The cap, and "report" / false.
    let many: Vec<Thread> = (0..5)
        .map(|i| thread(&format!("T{i}"), Some(5), posted.clone()))
        .collect();
    let p = plan(&Input {
        report: &clean,
        diff: &fixed,
        threads: &many,
        in_bodies: &[],
        resolve: Resolve::Report,
        max_resolve: 2,
    });
    assert_eq!((p.resolve.len(), p.resolve_over_cap), (2, 3));
    let p = plan(&Input {
        report: &clean,
        diff: &fixed,
        threads: &many,
        in_bodies: &[],
        resolve: Resolve::No,
        max_resolve: 2,
    });
    assert!(p.resolve.is_empty());
}

#[test]
fn a_finding_in_an_earlier_body_or_twice_in_the_report_is_posted_once() {
    let d = diff(&[]);
    let r = report(&[("W1", "a.rs", 50, 50, "sec"), ("W1", "a.rs", 50, 50, "sec")]);
    let p = run(&r, &d, &[]);
    assert_eq!((p.new.len(), p.already_posted), (1, 1));
    let m = marker_of(&r.findings[0], &d);
    let listed = [(m, path_hash("a.rs"))];
    let p = plan(&Input {
        report: &r,
        diff: &d,
        threads: &[],
        in_bodies: &listed,
        resolve: Resolve::Yes,
        max_resolve: 50,
    });
    assert_eq!((p.new.len(), p.already_posted), (0, 2));
}

#[test]
fn a_finding_warden_resolved_that_comes_back_is_posted_again() {
    let d = diff(&[(5, "query(term)")]);
    let r = report(&[("W1", "a.rs", 5, 5, "sec")]);
    let mut t = thread("T1", Some(5), marker_of(&r.findings[0], &d));
    t.resolved = true;
    t.resolved_by_warden = true;
    let p = run(&r, &d, &[t.clone()]);
    assert_eq!((p.new.len(), p.suppressed), (1, 0));
    t.resolved_by_warden = false;
    let p = run(&r, &d, &[t]);
    assert_eq!((p.new.len(), p.suppressed), (0, 1));
}
