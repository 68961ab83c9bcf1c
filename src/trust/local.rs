//! A local review: config and skills from the working tree, as given. The steering files
//! the change touches are listed for the report only (best effort: if the sides cannot be
//! resolved, diff selection reports why right after).

use super::paths::{Steering, under};
use super::{ConfigFrom, Loaded, Request, TrustReport, base};
use crate::config;
use crate::diff::Target;
use crate::error::Result;
use crate::skills;
use git2::Repository;

pub(super) fn load(
    repo: &Repository,
    req: &Request,
    steering: &Steering,
    reason: String,
) -> Result<Loaded> {
    let root = repo.workdir();
    let mut settings = config::load(req.explicit_config, root)?;
    settings.guidance = config::Guidance::load(
        &settings.instructions,
        "the working tree".into(),
        &|p: &str| read_working_file(root?, p),
    );
    let catalog = skills::discover(root)?;
    let changed = if matches!(req.target, Target::Patch(_)) {
        under(req.patch_paths, &steering.specs)
    } else {
        base::locate(
            repo,
            req.target,
            settings.default_branch.as_deref(),
            &steering.specs,
        )
        .map(|l| l.changed)
        .unwrap_or_default()
    };
    let config_file = settings.config_path.as_ref().map(|p| {
        root.and_then(|r| p.strip_prefix(r).ok())
            .unwrap_or(p)
            .display()
            .to_string()
    });
    Ok(Loaded {
        settings,
        catalog,
        trust: TrustReport {
            config_from: ConfigFrom::WorkingTree,
            commit: None,
            reason,
            config_file,
            changed_by_review: changed,
        },
    })
}

/// A guidance file of the working tree: a regular file (not a link, a pipe or a device),
/// read after its size check, no more than 1 MiB of it (the prompt carries at most
/// [`config::GUIDANCE_CAP`]).
fn read_working_file(root: &std::path::Path, rel: &str) -> Option<Vec<u8>> {
    use std::io::Read;
    let path = root.join(rel);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.file_type().is_file() {
        return None;
    }
    let mut out = Vec::new();
    std::fs::File::open(&path)
        .ok()?
        .take(1 << 20)
        .read_to_end(&mut out)
        .ok()?;
    Some(out)
}
