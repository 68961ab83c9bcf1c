//! The report `warden publish` is given is untrusted input: in the split workflow for
//! forks, the job that wrote it ran the pull request's code. It is read under a size cap,
//! checked against the report schema this warden writes, parsed into the report model, and
//! must name the repository and head of the event; its links are replaced by the event's.
//! Every string in it stays data: what is posted escapes it (see `render.rs`).

use super::context::Context;
use crate::error::Error;
use crate::report::Report;
use std::path::Path;
use std::sync::OnceLock;

/// The largest report read (a 300-finding report with its units is a few MiB).
pub(crate) const MAX_REPORT_BYTES: u64 = 32 << 20;
/// Findings accepted in one report.
pub(crate) const MAX_FINDINGS: usize = 5_000;

const SCHEMA: &str = include_str!("../../schemas/report-v1.schema.json");

fn validator() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| {
        let schema: serde_json::Value =
            serde_json::from_str(SCHEMA).expect("the report schema is JSON");
        jsonschema::validator_for(&schema).expect("the report schema compiles")
    })
}

fn refuse(path: &Path, why: impl std::fmt::Display) -> Error {
    Error::Publish(format!("{}: {why}", path.display()))
}

/// Why `warden publish` refuses a report (after the report's file name).
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// Not JSON.
    #[error("not a JSON report ({0}): give the output of `warden review --json`")]
    NotJson(serde_json::Error),
    /// JSON the schema refuses (reason and place escaped, the reason cut to 300 characters).
    #[error("not a warden report: {why} at `{at}`")]
    Schema {
        /// The schema's reason.
        why: String,
        /// The JSON pointer of the value.
        at: String,
    },
    /// Schema-valid JSON the report model does not read.
    #[error("not a warden report ({0})")]
    Model(serde_json::Error),
    /// Over [`MAX_FINDINGS`].
    #[error("{0} findings is over the {max} a report may publish", max = MAX_FINDINGS)]
    TooMany(usize),
    /// No `vcs`.
    #[error(
        "the report names no repository or revision (its `vcs`): review in the repository's checkout"
    )]
    NoVcs,
    /// Another head.
    #[error(
        "the report is of revision `{report}`, the pull request's head is `{head}`: publish only the report of the head this event names"
    )]
    Revision {
        /// The report's (escaped).
        report: String,
        /// The event's.
        head: String,
    },
    /// Another repository.
    #[error("the report is of repository `{report}`, the event's is `{event}`")]
    Repository {
        /// The report's (escaped).
        report: String,
        /// The event's.
        event: String,
    },
}

/// Reads and checks the report at `path` (size, JSON, schema, the model).
pub fn read(path: &Path) -> Result<Report, Error> {
    let bytes = crate::capped_read::read(path, MAX_REPORT_BYTES)
        .map_err(|e| refuse(path, super::context::refused(e)))?;
    parse(&bytes).map_err(|why| refuse(path, why))
}

/// Checks report bytes: JSON, the schema, the model, the caps.
pub fn parse(bytes: &[u8]) -> Result<Report, Refused> {
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(Refused::NotJson)?;
    if let Some(err) = validator().iter_errors(&value).next() {
        let at = err.instance_path().to_string();
        return Err(Refused::Schema {
            why: crate::text::escape::inline(&err.to_string())
                .chars()
                .take(300)
                .collect(),
            at: crate::text::escape::inline(if at.is_empty() { "/" } else { &at }),
        });
    }
    let report: Report = serde_json::from_value(value).map_err(Refused::Model)?;
    if report.findings.len() > MAX_FINDINGS {
        return Err(Refused::TooMany(report.findings.len()));
    }
    Ok(report)
}

/// The report must be of the event's repository and head; its links become the event's.
pub(crate) fn check_against(report: &mut Report, ctx: &Context) -> Result<(), Refused> {
    let vcs = report.vcs.as_ref().ok_or(Refused::NoVcs)?;
    let revision = vcs.revision.as_deref().unwrap_or("").to_ascii_lowercase();
    if revision != ctx.head {
        return Err(Refused::Revision {
            report: crate::text::escape::inline(&revision),
            head: ctx.head.clone(),
        });
    }
    let named = vcs
        .repository_uri
        .as_deref()
        .or(vcs.web_url.as_deref())
        .and_then(repo_of)
        .unwrap_or_default();
    let want = if ctx.name.is_empty() {
        ctx.owner.to_ascii_lowercase()
    } else {
        format!("{}/{}", ctx.owner, ctx.name).to_ascii_lowercase()
    };
    if named != want {
        return Err(Refused::Repository {
            report: crate::text::escape::inline(&named),
            event: want,
        });
    }
    let vcs = report.vcs.as_mut().expect("checked above");
    vcs.web_url = ctx.web_url.clone();
    vcs.repository_uri = ctx.web_url.clone();
    report.plan_command = None;
    Ok(())
}

/// The repository path (lowercase) of an address: `owner/name` on GitHub: `https://host/owner/name(.git)`,
/// `git@host:owner/name.git`, `ssh://git@host/owner/name`.
fn repo_of(uri: &str) -> Option<String> {
    let uri = uri.trim().trim_end_matches('/');
    let uri = uri.strip_suffix(".git").unwrap_or(uri);
    let tail = match uri.split_once("://") {
        Some((_, rest)) => rest.split_once('/')?.1,
        None => uri.split_once(':')?.1,
    };
    // The whole path: GitHub's owner/name, GitLab's group/subgroup/project.
    let path = tail.trim_matches('/');
    path.contains('/').then(|| path.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_addresses_of_every_shape_name_owner_and_name() {
        for uri in [
            "https://github.com/Acme/App",
            "https://github.com/acme/app.git",
            "git@github.com:acme/app.git",
            "ssh://git@github.com/acme/app",
            "https://ghe.example.com/acme/app/",
        ] {
            assert_eq!(repo_of(uri).as_deref(), Some("acme/app"), "{uri}");
        }
        assert_eq!(repo_of("app"), None);
        assert_eq!(
            repo_of("https://gitlab.example.com/group/sub/proj.git").as_deref(),
            Some("group/sub/proj")
        );
    }

    #[test]
    fn what_is_not_a_report_is_refused_with_a_reason() {
        assert!(
            parse(b"not json")
                .unwrap_err()
                .to_string()
                .contains("not a JSON report")
        );
        let err = parse(br#"{"schemaVersion": 1}"#).unwrap_err().to_string();
        assert!(err.contains("not a warden report"), "{err}");
    }
}
