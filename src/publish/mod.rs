//! `warden publish`: a finished review written onto its pull request, and kept there across
//! pushes (docs/design.md §15). The report is untrusted input (`intake`); where it goes comes
//! from the CI environment (`context`); what is written is decided before any write, as
//! pure policy (`plan`, over `marker` identities and the diff's `diff_lines`); `render`
//! escapes everything posted; `github` and `http` talk to the forge under the publish
//! budget. Nothing is written when the pull request's head moved past the reviewed one.

pub mod context;
pub mod diff_lines;
pub mod github;
pub mod gitlab;
pub mod http;
pub(crate) mod intake;
pub mod marker;
pub mod plan;
pub mod render;

use crate::config::{PublishSettings, Resolve};
use crate::provider::secret::ApiKey;
use crate::report::published::Published;
use crate::report::{Finding, Report};
use context::Context;
use github::{Github, ReviewComment};
use http::{Api, ApiError};
use std::time::Duration;

/// The publish budget when none is given.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(60);

/// One publishing run.
pub struct Request {
    /// The checked report.
    pub report: Report,
    /// Where it goes.
    pub ctx: Context,
    /// `[publish]`.
    pub settings: PublishSettings,
    /// List the writes instead of making them.
    pub dry_run: bool,
    /// All requests, waits included, fit in this.
    pub budget: Duration,
    /// The token (None: read-only, for `--dry-run` on a public repository).
    pub token: Option<ApiKey>,
}

/// What a run did, and the requests it took.
pub struct Outcome {
    /// The counts.
    pub published: Published,
    /// Requests sent.
    pub requests: usize,
    /// Time waited on rate limits.
    pub waited: Duration,
}

/// The outcome when no HTTP client could be built: one failure, named, nothing sent.
fn no_client(mut out: Published, e: &str) -> Outcome {
    out.failed += 1;
    out.notes.push(format!(
        "no HTTP client: {}",
        crate::text::escape::inline(e)
    ));
    Outcome {
        published: out,
        requests: 0,
        waited: Duration::ZERO,
    }
}

/// Publishes to GitHub.
pub async fn github(req: Request) -> Outcome {
    let mut out = Published {
        to: "github".into(),
        dry_run: req.dry_run,
        ..Default::default()
    };
    let api = match Api::new(
        &req.ctx.api_url,
        req.token.clone(),
        "Authorization",
        req.budget,
    ) {
        Ok(a) => a,
        Err(e) => return no_client(out, &e.to_string()),
    };
    let mut gh = Github::new(api, &req.ctx);
    if let Err(e) = run(&mut gh, &req, &mut out).await {
        out.failed += 1;
        out.notes.push(e.to_string());
    }
    Outcome {
        published: out,
        requests: gh.api.requests,
        waited: gh.api.waited,
    }
}

async fn run(gh: &mut Github<'_>, req: &Request, out: &mut Published) -> Result<(), ApiError> {
    let r = &req.report;
    let diff = gh.diff().await?;
    let threads = gh.threads().await?;
    let sticky = gh.sticky().await?;
    let listed = sticky
        .as_ref()
        .map(|(_, b)| marker::body_list(b))
        .unwrap_or_default();
    let p = plan::plan(&plan::Input {
        report: r,
        diff: &diff,
        threads: &threads,
        in_bodies: &listed,
        resolve: req.settings.resolve,
        max_resolve: req.settings.max_resolve,
    });
    out.already_posted = p.already_posted;
    out.suppressed = p.suppressed;
    let resolving = req.settings.resolve == Resolve::Yes && !req.dry_run;
    out.resolvable = p.resolve_over_cap + if resolving { 0 } else { p.resolve.len() };
    if req.dry_run {
        list_dry_run(r, &p, out);
        return Ok(());
    }
    // Head freshness, right before the first write.
    let head = gh.head().await?;
    if head != req.ctx.head {
        out.head_moved = true;
        out.notes.push(format!(
            "the pull request's head is {head}, the report is of {}: nothing written",
            req.ctx.head
        ));
        return Ok(());
    }
    let (inline, mut body) = split(r, &p);
    if !inline.is_empty() || !body.is_empty() {
        body = post_review(gh, req, inline, body, out).await?;
    }
    if resolving {
        for id in &p.resolve {
            match gh.resolve(id).await {
                Ok(()) => out.resolved += 1,
                Err(e) => {
                    out.failed += 1;
                    out.notes.push(format!("resolving a thread: {e}"));
                }
            }
        }
    }
    let mut rows: Vec<String> = listed
        .iter()
        .map(|(m, p)| format!("id={} skill={} anchor={} path={p}", m.id, m.skill, m.anchor))
        .collect();
    for n in p.new.iter().filter(|n| body.contains(&n.finding)) {
        rows.push(n.marker.row(&r.findings[n.finding].path));
    }
    let existing = sticky.map(|(id, _)| id);
    if let Err(e) = gh.upsert_sticky(existing, &render::sticky(r, &rows)).await {
        out.failed += 1;
        out.notes.push(format!("the summary comment: {e}"));
    }
    Ok(())
}

/// `--dry-run`: what would be posted, and where.
fn list_dry_run(r: &Report, p: &plan::Plan, out: &mut Published) {
    out.posted = p.new.len();
    for n in &p.new {
        let f = &r.findings[n.finding];
        out.notes.push(format!(
            "would post {}:{} {}",
            crate::text::escape::inline(&f.path),
            f.start_line,
            where_(&n.place)
        ));
    }
}

/// The new findings as inline comments (with their finding's index) and body findings.
fn split(r: &Report, p: &plan::Plan) -> (Vec<(usize, ReviewComment)>, Vec<usize>) {
    let mut inline = Vec::new();
    let mut body = Vec::new();
    for n in &p.new {
        let f = &r.findings[n.finding];
        match n.place {
            plan::Place::Inline { line, start, exact } => inline.push((
                n.finding,
                ReviewComment {
                    path: f.path.clone(),
                    line,
                    start_line: start,
                    body: render::comment(f, &n.marker, exact),
                },
            )),
            plan::Place::Body => body.push(n.finding),
        }
    }
    (inline, body)
}

fn where_(p: &plan::Place) -> &'static str {
    match p {
        plan::Place::Inline { .. } => "inline",
        plan::Place::Body => "in the review body",
    }
}

/// The one review of the run. A 422 means GitHub refused a comment's position: the
/// refused comments are found (each tried in a pending review, deleted after), moved to
/// the body, and the rest posted.
async fn post_review(
    gh: &mut Github<'_>,
    req: &Request,
    mut inline: Vec<(usize, ReviewComment)>,
    mut body: Vec<usize>,
    out: &mut Published,
) -> Result<Vec<usize>, ApiError> {
    let r = &req.report;
    let event = if req.settings.request_changes && r.findings.iter().any(|f| f.fails_run) {
        "REQUEST_CHANGES"
    } else {
        "COMMENT"
    };
    let web = req.ctx.web_url.as_deref();
    let text = |body: &[usize], moved: usize| {
        let fs: Vec<&Finding> = body.iter().map(|i| &r.findings[*i]).collect();
        render::review_body(r, &req.ctx.head, web, &fs, moved)
    };
    let comments: Vec<ReviewComment> = inline.iter().map(|(_, c)| c.clone()).collect();
    match gh
        .post_review(&req.ctx.head, &text(&body, 0), event, &comments)
        .await
    {
        Ok(()) => {
            out.posted += inline.len() + body.len();
            return Ok(body);
        }
        Err(ApiError::Status(422, msg)) if !inline.is_empty() => {
            out.notes.push(format!(
                "GitHub refused a comment's position ({msg}): finding which"
            ));
        }
        Err(e) => {
            out.failed += inline.len() + body.len();
            return Err(e);
        }
    }
    let mut groups = vec![(0..inline.len()).collect::<Vec<usize>>()];
    let mut bad: Vec<usize> = Vec::new();
    while let Some(g) = groups.pop() {
        let cs: Vec<ReviewComment> = g.iter().map(|i| inline[*i].1.clone()).collect();
        if gh.positions_ok(&req.ctx.head, &cs).await? {
            continue;
        }
        if g.len() == 1 {
            bad.push(g[0]);
        } else {
            let (a, b) = g.split_at(g.len() / 2);
            groups.push(b.to_vec());
            groups.push(a.to_vec());
        }
    }
    bad.sort_unstable();
    for i in bad.iter().rev() {
        let (finding, _) = inline.remove(*i);
        body.push(finding);
    }
    out.moved_to_body = bad.len();
    let comments: Vec<ReviewComment> = inline.iter().map(|(_, c)| c.clone()).collect();
    match gh
        .post_review(&req.ctx.head, &text(&body, bad.len()), event, &comments)
        .await
    {
        Ok(()) => {
            out.posted += inline.len() + body.len();
            Ok(body)
        }
        Err(e) => {
            out.failed += inline.len() + body.len();
            Err(e)
        }
    }
}

/// What the command line gives `warden publish`.
pub struct Args {
    /// The report of `warden review --json`, or None when the caller holds it.
    pub report: Option<std::path::PathBuf>,
    /// The forge.
    pub forge: context::Forge,
    /// Flags over the environment.
    pub flags: context::ContextFlags,
    /// `--dry-run`.
    pub dry_run: bool,
    /// The publish budget.
    pub budget: Duration,
}

/// Where a run publishes, and with what token: checked before a review starts
/// (`warden review --publish`), so a missing token costs no model call.
pub struct Target {
    /// The pull request.
    pub ctx: Context,
    /// The token.
    pub token: Option<ApiKey>,
}

/// The context and the token (exit 2 naming what is missing).
pub fn target(
    args: &Args,
    settings: &PublishSettings,
    env: &dyn Fn(&str) -> Option<String>,
) -> crate::Result<Target> {
    let ctx = match args.forge {
        context::Forge::Github => context::github(&args.flags, env)?,
        context::Forge::Gitlab => context::gitlab(&args.flags, env)?,
    };
    let var = settings
        .token_env
        .clone()
        .unwrap_or_else(|| args.forge.default_token_env().to_string());
    let token = env(&var)
        .filter(|t| !t.trim().is_empty())
        .map(|t| ApiKey::new(t.trim()));
    if token.is_none() && !args.dry_run {
        return Err(crate::Error::Publish(format!(
            "no token in {var}: give the job `pull-requests: write` and set {var} (or name another variable in [publish] tokenEnv)"
        )));
    }
    Ok(Target { ctx, token })
}

/// A request for `report` (checked against the target: repository and head).
pub fn request(
    target: Target,
    mut report: Report,
    args: &Args,
    settings: &PublishSettings,
) -> crate::Result<Request> {
    let name = args
        .report
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "the report".into());
    intake::check_against(&mut report, &target.ctx)
        .map_err(|why| crate::Error::Publish(format!("{name}: {why}")))?;
    Ok(Request {
        report,
        ctx: target.ctx,
        settings: settings.clone(),
        dry_run: args.dry_run,
        budget: args.budget,
        token: target.token,
    })
}

/// Everything before the first request of `warden publish`: the target, the report read
/// from `args.report` and checked against it. Each refusal is an [`crate::Error`] (exit 2)
/// naming what to fix.
pub fn prepare(
    args: &Args,
    settings: &PublishSettings,
    env: &dyn Fn(&str) -> Option<String>,
) -> crate::Result<Request> {
    let t = target(args, settings, env)?;
    let Some(path) = &args.report else {
        return Err(crate::Error::Publish("no report given".into()));
    };
    let report = intake::read(path)?;
    request(t, report, args, settings)
}

/// Publishes to GitLab.
pub async fn gitlab(req: Request) -> Outcome {
    let mut out = Published {
        to: "gitlab".into(),
        dry_run: req.dry_run,
        ..Default::default()
    };
    let token = req.token.clone();
    let mut api = match Api::new(&req.ctx.api_url, token, "PRIVATE-TOKEN", req.budget) {
        Ok(a) => a,
        Err(e) => return no_client(out, &e.to_string()),
    };
    if let Err(e) = gitlab::run(&mut api, &req, &mut out).await {
        out.failed += 1;
        out.notes.push(e.to_string());
    }
    Outcome {
        published: out,
        requests: api.requests,
        waited: api.waited,
    }
}

/// Publishes to the request's forge.
pub async fn publish(req: Request) -> Outcome {
    match req.ctx.forge {
        context::Forge::Github => github(req).await,
        context::Forge::Gitlab => gitlab(req).await,
    }
}

/// Runs a publishing request to its end on a runtime of its own.
pub fn run_blocking(req: Request) -> Outcome {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(publish(req)),
        Err(e) => Outcome {
            published: Published {
                to: "github".into(),
                failed: 1,
                notes: vec![format!("no runtime: {e}")],
                ..Default::default()
            },
            requests: 0,
            waited: Duration::ZERO,
        },
    }
}
