//! `warden eval`: load the corpus (and a baseline), set up the routes, run every case
//! review with progress on stderr, render the report, map the exit code: 0, or 3 when
//! anything was not reviewed (as a partial review), 130/143 after a signal.

use super::cli::{EvalArgs, EvalFormat};
use super::signals::Signals;
use super::{cache_warn, emit, setup_color, warn};
use std::path::Path;
use warden::error::{Error, Result};
use warden::eval::{self, EvalReport, Options, history};
use warden::progress::Mode;
use warden::text::escape;

pub(super) fn eval_cmd(args: &EvalArgs) -> Result<i32> {
    setup_color(&args.ui, args.output.is_some());
    let dir = warden::prepare::start_dir(args.dir.as_deref())?;
    check_output(args.output.as_deref())?;
    // Everything that can be wrong with the input is found before the first request.
    let corpus = load_corpus(args, &dir)?;
    let baseline = args
        .baseline
        .as_ref()
        .map(|p| eval::baseline::load(p))
        .transpose()?;
    let mut opts = Options {
        dir,
        config: args.config.clone(),
        skills: args.skills.clone(),
        overrides: args.overrides(),
        budget: args.budget,
        runs: args.runs,
        line_window: args.line_window,
        judge: args.judge.clone(),
        cache: args.cache.then(|| args.cache_dir.clone()),
        warn: cache_warn(&args.ui),
        strict_config: args.strict_config,
    };
    let setup = eval::setup(&mut opts)?;
    warn(&args.ui, &setup.settings);
    let runtime = warden::session::runtime()?;
    let total = corpus.cases.len() * args.runs as usize;
    let progress = eval::progress::Progress::new(Mode::detect(args.ui.quiet), total);
    let signals = Signals::default();
    let mut report = runtime.block_on(async {
        signals.listen();
        let done = |r: &eval::outcome::CaseRun| progress.case_done(r);
        eval::run(&corpus, &opts, &setup, &done, signals.token.clone()).await
    });
    signals.writing();
    progress.finish();
    if let (Some(base), Some(path)) = (&baseline, &args.baseline) {
        report.baseline = Some(eval::baseline::compare(path, base, &report));
    }
    emit(args.output.as_deref(), &render(args, &report))?;
    runtime.shutdown_background();
    if let Some(setup) = &report.setup_failure {
        // A bad key or model: a setup error, as `warden review` says it (exit 2).
        return Err(Error::Usage(format!(
            "every case review reviewed nothing: {setup}"
        )));
    }
    let incomplete = report.overall.not_reviewed > 0
        || report.finished.not_run + report.finished.failed > 0
        || report.not_reviewed.iter().any(|n| n.kind != "reference");
    Ok(signals.code().unwrap_or(if incomplete { 3 } else { 0 }))
}

/// `-o FILE` in a folder that does not exist fails before any review costs money.
fn check_output(output: Option<&Path>) -> Result<()> {
    let Some(out) = output else { return Ok(()) };
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty());
    if parent.is_some_and(|p| !p.is_dir()) {
        return Err(Error::Usage(format!(
            "-o {}: its directory does not exist: create it or choose another path",
            out.display()
        )));
    }
    Ok(())
}

/// The corpus the flags name: the repository's history, or a JSONL file or case folders
/// (shown as the user wrote its path).
fn load_corpus(args: &EvalArgs, dir: &Path) -> Result<eval::Corpus> {
    match (args.from_history, &args.corpus) {
        (Some(n), _) => {
            let filter = history::Filter {
                pattern: args.fix_pattern.clone(),
                max_lines: args.max_fix_lines,
            };
            history::load(dir, n as usize, &filter)
        }
        (None, Some(path)) => {
            let repos = args.repos.as_deref().map(|r| dir.join(r));
            let mut corpus = eval::load(&dir.join(path), repos.as_deref(), dir)?;
            corpus.source = path.display().to_string();
            Ok(corpus)
        }
        (None, None) => Err(Error::Usage(
            "warden eval needs a CORPUS (a JSONL file or case folders) or --from-history N".into(),
        )),
    }
}

/// The report in the format asked for.
fn render(args: &EvalArgs, report: &EvalReport) -> String {
    match args.format() {
        EvalFormat::Text => {
            let width = args
                .output
                .is_none()
                .then(warden::text::wrap::stdout_columns)
                .flatten();
            warden::text::wrap::block(&eval::render::text(report), 4, width)
        }
        EvalFormat::Markdown => eval::render::markdown(report),
        EvalFormat::Json => {
            let mut s = serde_json::to_string_pretty(report).expect("eval report serializes");
            s.push('\n');
            escape::json_doc(&s)
        }
    }
}
