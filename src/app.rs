//! The commands: turn parsed arguments into a target and settings, run, and write output.
//! `main.rs` only parses arguments and maps the result to an exit code.

use crate::cli::{
    Cli, ColorChoice, Command, InitArgs, PlanArgs, PlanFormat, Selection, SkillsArgs, Ui,
};
use crate::config::{self, Settings};
use crate::diff::content::NoContent;
use crate::diff::target::PatchSource;
use crate::diff::{self, Target};
use crate::error::{Error, Result};
use crate::plan::{self, Plan};
use crate::skills::{self, SkillOrigin};
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

/// Runs the command line; returns the process exit code.
pub fn run(cli: Cli) -> Result<i32> {
    match cli.command {
        Some(Command::Plan(args)) => plan_cmd(&args),
        Some(Command::Skills(args)) => skills_cmd(&args),
        Some(Command::Init(args)) => init_cmd(&args),
        Some(Command::Review(args)) => crate::review_cmd(&args),
        None => crate::review_cmd(&cli.review),
    }
}

/// Sets colour output for stdout from `--color` and `NO_COLOR`.
pub(crate) fn setup_color(ui: &Ui, to_file: bool) {
    let on = match ui.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            !to_file
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stdout().is_terminal()
        }
    };
    console::set_colors_enabled(on);
    let err_on = match ui.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stderr().is_terminal()
        }
    };
    console::set_colors_enabled_stderr(err_on);
}

/// Writes `text` to `-o FILE` or stdout. A closed stdout (`warden --json | head`) is not
/// an error: warden stops writing and exits quietly, as ripgrep does.
pub(crate) fn emit(output: Option<&Path>, text: &str) -> Result<()> {
    if let Some(path) = output {
        return std::fs::write(path, text).map_err(|e| Error::io(path, e));
    }
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Error::io("<stdout>", e)),
        Ok(()) => Ok(()),
    }
}

pub(crate) fn warn(ui: &Ui, settings: &Settings) {
    if ui.quiet {
        return;
    }
    let origin = settings
        .config_path
        .as_ref()
        .map(|p| format!("{}: ", p.display()))
        .unwrap_or_default();
    for w in &settings.warnings {
        eprintln!(
            "{} {}",
            console::style("warning:").yellow().for_stderr(),
            crate::report::escape::block(&format!("{origin}{w}"))
        );
    }
}

/// Everything a run needs before any model is called.
pub(crate) struct Prepared {
    pub settings: Settings,
    pub plan: Plan,
    pub active: Vec<skills::ActiveSkill>,
}

fn start_dir(dir: Option<&Path>) -> Result<PathBuf> {
    match dir {
        Some(d) if !d.is_dir() => Err(Error::Usage(format!(
            "-C {}: no such directory",
            d.display()
        ))),
        Some(d) => Ok(d.to_path_buf()),
        None => std::env::current_dir().map_err(|e| Error::io(".", e)),
    }
}

/// Selects the diff, loads config and skills, and builds the plan.
pub(crate) fn prepare(sel: &Selection) -> Result<Prepared> {
    let target = Target::from_args(
        sel.target.as_deref(),
        sel.base.as_deref(),
        sel.head.as_deref(),
        sel.staged,
        sel.diff.as_deref(),
    )?;
    let dir = start_dir(sel.dir.as_deref())?;
    if let Target::Patch(source) = &target {
        // A patch needs no repository, but one around it still supplies config and skills.
        let root = git2::Repository::discover(&dir)
            .ok()
            .and_then(|r| r.workdir().map(Path::to_path_buf));
        let (bytes, name) = read_patch(source, &dir)?;
        let diff = diff::patch_text::parse(&bytes, &name)?;
        let settings = config::load(sel.config.as_deref(), root.as_deref())?;
        let catalog = skills::discover(root.as_deref())?;
        let active = skills::select(&catalog, &settings, &sel.skills)?;
        let plan = plan::build(&diff, &NoContent, &settings, &active);
        return Ok(Prepared {
            settings,
            plan,
            active,
        });
    }
    let repo = diff::git::open_repo(&dir)?;
    let root = repo.workdir().map(Path::to_path_buf);
    let settings = config::load(sel.config.as_deref(), root.as_deref())?;
    let catalog = skills::discover(root.as_deref())?;
    let active = skills::select(&catalog, &settings, &sel.skills)?;
    let selection = diff::git::select(&repo, &target, settings.default_branch.as_deref())?;
    let plan = plan::build(&selection.diff, &selection.content, &settings, &active);
    Ok(Prepared {
        settings,
        plan,
        active,
    })
}

fn read_patch(source: &PatchSource, dir: &Path) -> Result<(Vec<u8>, String)> {
    match source {
        PatchSource::Stdin => {
            let mut buf = Vec::new();
            std::io::stdin()
                .read_to_end(&mut buf)
                .map_err(|e| Error::io("<stdin>", e))?;
            Ok((buf, "stdin".into()))
        }
        PatchSource::File(p) => {
            let path = if p.is_absolute() {
                p.clone()
            } else {
                dir.join(p)
            };
            let bytes = std::fs::read(&path).map_err(|e| {
                Error::Usage(format!(
                    "--diff {}: cannot read the file ({e})",
                    p.display()
                ))
            })?;
            Ok((bytes, p.display().to_string()))
        }
    }
}

fn plan_cmd(args: &PlanArgs) -> Result<i32> {
    setup_color(&args.ui, args.output.is_some());
    let prepared = prepare(&args.selection)?;
    warn(&args.ui, &prepared.settings);
    let text = if args.json || args.format == PlanFormat::Json {
        let mut s = serde_json::to_string_pretty(&prepared.plan).expect("plan serializes");
        s.push('\n');
        crate::report::escape::json_doc(&s)
    } else {
        plan::render_text(&prepared.plan)
    };
    emit(args.output.as_deref(), &text)?;
    Ok(0)
}

fn skills_cmd(args: &SkillsArgs) -> Result<i32> {
    setup_color(&args.ui, false);
    let dir = start_dir(args.dir.as_deref())?;
    let root = git2::Repository::discover(&dir)
        .ok()
        .and_then(|r| r.workdir().map(Path::to_path_buf))
        .unwrap_or(dir);
    let settings = config::load(args.config.as_deref(), Some(&root))?;
    warn(&args.ui, &settings);
    let catalog = skills::discover(Some(&root))?;
    let active: Vec<String> = skills::select(&catalog, &settings, &[])?
        .into_iter()
        .map(|a| a.skill.name)
        .collect();
    let origin = |o: &SkillOrigin| match o {
        SkillOrigin::BuiltIn => "built-in".to_string(),
        SkillOrigin::Repo(p) => p.display().to_string(),
    };
    let text = if args.json {
        let list: Vec<serde_json::Value> = catalog
            .skills
            .iter()
            .map(|s| {
                serde_json::json!({
                    "name": s.name,
                    "description": s.description,
                    "allowedTools": s.allowed_tools,
                    "source": origin(&s.origin),
                    "active": active.contains(&s.name),
                    "overrides": catalog.shadowed.iter().filter(|(h, _)| h.name == s.name).map(|(h, _)| origin(&h.origin)).collect::<Vec<_>>(),
                })
            })
            .collect();
        format!(
            "{}\n",
            serde_json::to_string_pretty(&list).expect("serializes")
        )
    } else {
        let mut out = String::new();
        let width = catalog
            .skills
            .iter()
            .map(|s| s.name.len())
            .max()
            .unwrap_or(0);
        for s in &catalog.skills {
            let mark = if active.contains(&s.name) { "*" } else { " " };
            let overrides: Vec<String> = catalog
                .shadowed
                .iter()
                .filter(|(h, _)| h.name == s.name)
                .map(|(h, _)| origin(&h.origin))
                .collect();
            let over = if overrides.is_empty() {
                String::new()
            } else {
                format!(" (overrides {})", overrides.join(", "))
            };
            out.push_str(&format!(
                "{mark} {:<width$}  {}{}\n      {}\n",
                console::style(&s.name).cyan(),
                origin(&s.origin),
                over,
                s.description,
            ));
        }
        out.push_str("\n* = runs in a review with the current config\n");
        out
    };
    emit(None, &text)?;
    Ok(0)
}

fn init_cmd(args: &InitArgs) -> Result<i32> {
    let dir = start_dir(args.dir.as_deref())?;
    let root = git2::Repository::discover(&dir)
        .ok()
        .and_then(|r| r.workdir().map(Path::to_path_buf))
        .unwrap_or(dir);
    let path = root.join(config::FILE_NAME);
    if path.exists() && !args.force {
        return Err(Error::Usage(format!(
            "{} already exists: edit it, or pass --force to overwrite it",
            path.display()
        )));
    }
    std::fs::write(&path, crate::init::STARTER).map_err(|e| Error::io(&path, e))?;
    eprintln!("wrote {}", path.display());
    Ok(0)
}
