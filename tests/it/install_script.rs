//! Shipping: `scripts/install.sh` run for real (`sh`, curl) against a release server on
//! 127.0.0.1 that serves archives made by `scripts/package` (what the release workflow
//! uploads): a good archive is checked and installed and runs; a bad checksum, a malformed
//! checksum file or a cut-short download installs nothing; a missing asset (404) builds with
//! `cargo install --locked` instead (the cargo is a recording stand-in: the assertion is that
//! the script chose the fallback, and with what). Then the GitHub Action's install step, and
//! the release workflow and the binstall metadata against GitHub's schema and the archive
//! names.

use crate::ci_config::{assert_shell_parses, load_yaml, repo_file, run_steps, to_json};
use crate::report_formats::{assert_valid, repo_schema};
use crate::support::{assert_exit, stderr_of, stdout_of};
use serde_json::Value;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use yaml_rust2::Yaml;

const VERSION: &str = "1.2.3";
const LINUX_X86: &str = "x86_64-unknown-linux-musl";
/// What the packaged stand-in binary prints.
const RELEASED: &str = "warden 1.2.3 from the release archive";
/// What the binary the recording cargo "builds" prints.
const BUILT: &str = "warden built by cargo install";

/// One answer of the release server.
#[derive(Clone)]
struct Reply {
    status: u16,
    body: Vec<u8>,
    /// Send only this many bytes of the body (the Content-Length still says all of it).
    cut: Option<usize>,
}

/// A release server on 127.0.0.1: paths it knows, 404 for the rest; every request path kept.
struct Server {
    port: u16,
    routes: Arc<Mutex<HashMap<String, Reply>>>,
    hits: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let routes: Arc<Mutex<HashMap<String, Reply>>> = Arc::default();
        let hits: Arc<Mutex<Vec<String>>> = Arc::default();
        let (r, h) = (routes.clone(), hits.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                serve(conn, &r, &h);
            }
        });
        Server { port, routes, hits }
    }

    fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn put(&self, path: &str, status: u16, body: &[u8], cut: Option<usize>) {
        self.routes.lock().unwrap().insert(
            path.to_string(),
            Reply {
                status,
                body: body.to_vec(),
                cut,
            },
        );
    }

    /// Serves a packaged release asset and its SHA-256 file under `/vVERSION/`.
    fn release(&self, asset: &Asset) {
        self.put(&asset.path(), 200, &asset.archive, None);
        self.put(&format!("{}.sha256", asset.path()), 200, &asset.sum, None);
    }

    fn hits(&self) -> Vec<String> {
        self.hits.lock().unwrap().clone()
    }
}

fn serve(conn: TcpStream, routes: &Mutex<HashMap<String, Reply>>, hits: &Mutex<Vec<String>>) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    loop {
        let mut header = String::new();
        match reader.read_line(&mut header) {
            Ok(0) | Err(_) => break,
            Ok(_) if header == "\r\n" => break,
            Ok(_) => {}
        }
    }
    hits.lock().unwrap().push(path.clone());
    let reply = routes.lock().unwrap().get(&path).cloned().unwrap_or(Reply {
        status: 404,
        body: b"Not Found".to_vec(),
        cut: None,
    });
    let mut conn = conn;
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n",
        reply.status,
        if reply.status == 200 {
            "OK"
        } else {
            "Not Found"
        },
        reply.body.len()
    );
    let sent = reply.cut.unwrap_or(reply.body.len());
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(&reply.body[..sent]);
    let _ = conn.flush();
    let _ = conn.shutdown(std::net::Shutdown::Both);
}

/// A release asset as `scripts/package` makes it, around a stand-in binary.
struct Asset {
    name: String,
    archive: Vec<u8>,
    sum: Vec<u8>,
}

impl Asset {
    fn path(&self) -> String {
        format!("/v{VERSION}/{}", self.name)
    }
}

fn packaged(target: &str) -> Asset {
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("warden");
    std::fs::write(&bin, format!("#!/bin/sh\necho \"{RELEASED}\"\n")).unwrap();
    let out = tmp.path().join("dist");
    let run = Command::new("bash")
        .arg(repo_file("scripts/package"))
        .args([target, VERSION])
        .arg(&bin)
        .arg(&out)
        .output()
        .unwrap();
    assert_exit(&run, 0);
    let path = PathBuf::from(stdout_of(&run).trim());
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let ext = if target.contains("windows") {
        "zip"
    } else {
        "tar.gz"
    };
    assert_eq!(name, format!("warden-v{VERSION}-{target}.{ext}"));
    let sum = std::fs::read(out.join(format!("{name}.sha256"))).unwrap();
    Asset {
        name,
        archive: std::fs::read(&path).unwrap(),
        sum,
    }
}

/// A place to install into, with the recording cargo the fallback runs.
struct Machine {
    dir: tempfile::TempDir,
}

impl Machine {
    fn new() -> Machine {
        let m = Machine {
            dir: tempfile::tempdir().unwrap(),
        };
        let cargo = m.cargo();
        std::fs::write(
            &cargo,
            format!(
                "#!/bin/sh\n\
                 printf '%s\\n' \"$@\" > \"{log}\"\n\
                 root=\n\
                 while [ $# -gt 0 ]; do [ \"$1\" = --root ] && root=$2; shift; done\n\
                 mkdir -p \"$root/bin\"\n\
                 printf '#!/bin/sh\\necho \"{BUILT}\"\\n' > \"$root/bin/warden\"\n\
                 chmod 755 \"$root/bin/warden\"\n",
                log = m.cargo_log().display()
            ),
        )
        .unwrap();
        make_executable(&cargo);
        m
    }

    fn cargo(&self) -> PathBuf {
        self.dir.path().join("cargo-stand-in")
    }

    fn cargo_log(&self) -> PathBuf {
        self.dir.path().join("cargo.log")
    }

    /// The arguments cargo was called with, if it was.
    fn cargo_args(&self) -> Option<Vec<String>> {
        let text = std::fs::read_to_string(self.cargo_log()).ok()?;
        Some(text.lines().map(str::to_string).collect())
    }

    fn bin_dir(&self) -> PathBuf {
        self.dir.path().join("bin")
    }

    fn installed(&self) -> PathBuf {
        self.bin_dir().join("warden")
    }

    /// `sh scripts/install.sh ARGS --bin-dir BIN` against `server`.
    fn install(&self, server: &Server, args: &[&str]) -> Output {
        Command::new("sh")
            .arg(repo_file("scripts/install.sh"))
            .args(args)
            .arg("--bin-dir")
            .arg(self.bin_dir())
            .env("WARDEN_INSTALL_BASE_URL", server.base_url())
            .env("WARDEN_INSTALL_CARGO", self.cargo())
            .env("HOME", self.dir.path())
            .output()
            .unwrap()
    }
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn run_installed(path: &Path) -> String {
    let out = Command::new(path).output().unwrap();
    assert_exit(&out, 0);
    stdout_of(&out).trim().to_string()
}

/// This machine's target as the release names it.
fn this_target() -> String {
    let os = match std::env::consts::OS {
        "linux" => "unknown-linux-musl",
        "macos" => "apple-darwin",
        other => panic!("no release target for {other}"),
    };
    format!("{}-{os}", std::env::consts::ARCH)
}

#[test]
fn a_good_archive_is_checked_installed_and_runs() {
    let server = Server::start();
    let m = Machine::new();
    let asset = packaged(LINUX_X86);
    server.release(&asset);
    let out = m.install(
        &server,
        &["--version", &format!("v{VERSION}"), "--target", LINUX_X86],
    );
    assert_exit(&out, 0);
    assert_eq!(run_installed(&m.installed()), RELEASED);
    assert_eq!(
        server.hits(),
        [format!("{}.sha256", asset.path()), asset.path()],
        "the checksum file, then the archive"
    );
    assert_eq!(m.cargo_args(), None, "no build");
    // Without --target: this machine's, named as the release names it.
    let server = Server::start();
    let mine = packaged(&this_target());
    server.release(&mine);
    let m = Machine::new();
    let out = m.install(&server, &["--version", VERSION]);
    assert_exit(&out, 0);
    assert_eq!(server.hits()[1], mine.path());
    assert_eq!(run_installed(&m.installed()), RELEASED);
}

#[test]
fn a_bad_checksum_is_refused_and_nothing_is_installed() {
    let server = Server::start();
    let m = Machine::new();
    std::fs::create_dir_all(m.bin_dir()).unwrap();
    std::fs::write(m.installed(), "#!/bin/sh\necho old\n").unwrap();
    make_executable(&m.installed());
    let mut asset = packaged(LINUX_X86);
    // The archive altered after its checksum was taken (one byte of the gzip trailer).
    let last = asset.archive.len() - 1;
    asset.archive[last] ^= 0x55;
    server.release(&asset);
    let out = m.install(&server, &["--version", VERSION, "--target", LINUX_X86]);
    assert_exit(&out, 1);
    assert!(
        stderr_of(&out).contains("checksum mismatch"),
        "{}",
        stderr_of(&out)
    );
    assert!(
        stderr_of(&out).contains("nothing installed"),
        "{}",
        stderr_of(&out)
    );
    assert_eq!(run_installed(&m.installed()), "old", "the old binary stays");
    assert_eq!(
        std::fs::read_dir(m.bin_dir()).unwrap().count(),
        1,
        "no partial file left"
    );
    assert_eq!(m.cargo_args(), None, "a bad checksum is no reason to build");
    // A checksum file that holds no SHA-256 is refused too.
    let good = packaged(LINUX_X86);
    server.put(&good.path(), 200, &good.archive, None);
    server.put(
        &format!("{}.sha256", good.path()),
        200,
        b"<html>moved</html>\n",
        None,
    );
    let out = m.install(&server, &["--version", VERSION, "--target", LINUX_X86]);
    assert_exit(&out, 1);
    assert!(
        stderr_of(&out).contains("holds no SHA-256"),
        "{}",
        stderr_of(&out)
    );
    assert_eq!(run_installed(&m.installed()), "old");
}

#[test]
fn a_truncated_download_is_refused_and_nothing_is_installed() {
    let server = Server::start();
    let m = Machine::new();
    let asset = packaged(LINUX_X86);
    server.release(&asset);
    server.put(
        &asset.path(),
        200,
        &asset.archive,
        Some(asset.archive.len() / 2),
    );
    let out = m.install(&server, &["--version", VERSION, "--target", LINUX_X86]);
    assert_exit(&out, 1);
    assert!(stderr_of(&out).contains("cut short"), "{}", stderr_of(&out));
    assert!(!m.installed().exists());
    assert!(!m.bin_dir().exists() || std::fs::read_dir(m.bin_dir()).unwrap().count() == 0);
    assert_eq!(m.cargo_args(), None);
}

#[test]
fn a_missing_asset_builds_with_cargo_install_locked_instead() {
    let server = Server::start();
    // From a checkout (what the action passes): cargo install --locked --path.
    let m = Machine::new();
    let source = tempfile::tempdir().unwrap();
    let src = source.path().to_str().unwrap();
    let out = m.install(
        &server,
        &["--version", VERSION, "--target", LINUX_X86, "--source", src],
    );
    assert_exit(&out, 0);
    assert!(
        stderr_of(&out).contains("no release asset"),
        "{}",
        stderr_of(&out)
    );
    let args = m.cargo_args().expect("the fallback ran cargo");
    assert_eq!(args[..4], ["install", "--locked", "--path", src]);
    assert_eq!(args[4], "--root");
    assert_eq!(run_installed(&m.installed()), BUILT);
    assert_eq!(
        server.hits(),
        [format!(
            "/v{VERSION}/warden-v{VERSION}-{LINUX_X86}.tar.gz.sha256"
        )]
    );
    // Without a checkout: the release's git tag.
    let m = Machine::new();
    let out = m.install(&server, &["--version", VERSION, "--target", LINUX_X86]);
    assert_exit(&out, 0);
    let args = m.cargo_args().expect("the fallback ran cargo");
    assert_eq!(args[..2], ["install", "--locked"]);
    assert_eq!(args[3], "https://github.com/warden-review/warden");
    assert_eq!(args[4..6], ["--tag", &format!("v{VERSION}")]);
    // The checksum file there but the archive missing: a build too.
    let asset = packaged(LINUX_X86);
    server.put(&format!("{}.sha256", asset.path()), 200, &asset.sum, None);
    let m = Machine::new();
    let out = m.install(&server, &["--version", VERSION, "--target", LINUX_X86]);
    assert_exit(&out, 0);
    assert!(m.cargo_args().is_some());
    // --no-fallback: refused, nothing built or installed.
    let m = Machine::new();
    let out = m.install(
        &server,
        &["--version", "9.9.9", "--target", LINUX_X86, "--no-fallback"],
    );
    assert_exit(&out, 1);
    assert_eq!(m.cargo_args(), None);
    assert!(!m.installed().exists());
}

#[test]
fn bad_arguments_are_refused_before_any_download() {
    let server = Server::start();
    let m = Machine::new();
    for (args, says) in [
        (&["--target", LINUX_X86][..], "--version is required"),
        (&["--version", "1.2.3;rm"][..], "is not a version"),
        (
            &["--version", VERSION, "--target", "../x"][..],
            "not a target",
        ),
        (
            &["--version", VERSION, "--frobnicate"][..],
            "unknown argument",
        ),
        (&["--version"][..], "--version needs a value"),
    ] {
        let out = m.install(&server, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr_of(&out));
        assert!(
            stderr_of(&out).contains(says),
            "{args:?}: {}",
            stderr_of(&out)
        );
    }
    assert!(server.hits().is_empty());
    assert_eq!(m.cargo_args(), None);
}

/// The action's install step, run as the runner would, with the action checked out at
/// `checkout` (its Cargo.toml says VERSION) and the action ref `action_ref`.
fn action_install_step(m: &Machine, server: &Server, checkout: &Path, action_ref: &str) -> Output {
    let action = to_json(&load_yaml(&repo_file("action.yml")));
    let step = action["runs"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "Install warden")
        .expect("an Install warden step");
    assert_eq!(step["env"]["WARDEN_ACTION_REF"], "${{ github.action_ref }}");
    Command::new("bash")
        .args(["-c", step["run"].as_str().unwrap()])
        .env("GITHUB_ACTION_PATH", checkout)
        .env("HOME", m.dir.path())
        .env("WARDEN_ACTION_REF", action_ref)
        .env("WARDEN_ACTION_REPOSITORY", "")
        .env("WARDEN_INSTALL_BASE_URL", server.base_url())
        .env("WARDEN_INSTALL_CARGO", m.cargo())
        .output()
        .unwrap()
}

#[test]
fn the_actions_install_step_takes_the_release_binary_for_a_tag_and_builds_a_branch() {
    let server = Server::start();
    let mine = packaged(&this_target());
    server.release(&mine);
    let checkout = tempfile::tempdir().unwrap();
    std::fs::write(
        checkout.path().join("Cargo.toml"),
        format!("[package]\nname = \"warden\"\nversion = \"{VERSION}\"\n"),
    )
    .unwrap();
    std::fs::create_dir(checkout.path().join("scripts")).unwrap();
    std::fs::copy(
        repo_file("scripts/install.sh"),
        checkout.path().join("scripts/install.sh"),
    )
    .unwrap();
    let installed = |m: &Machine| m.dir.path().join(".cache/warden-action/bin/warden");
    // A release tag (the major one, as the docs use): the prebuilt binary of the
    // checkout's version.
    let m = Machine::new();
    let out = action_install_step(&m, &server, checkout.path(), "v1");
    assert_exit(&out, 0);
    assert_eq!(run_installed(&installed(&m)), RELEASED);
    assert_eq!(m.cargo_args(), None);
    assert!(server.hits().contains(&mine.path()));
    // A branch: its own code, built from the checkout; nothing downloaded.
    let before = server.hits().len();
    let m = Machine::new();
    let out = action_install_step(&m, &server, checkout.path(), "main");
    assert_exit(&out, 0);
    assert_eq!(run_installed(&installed(&m)), BUILT);
    let args = m.cargo_args().unwrap();
    assert_eq!(
        args[..4],
        [
            "install",
            "--locked",
            "--path",
            checkout.path().to_str().unwrap()
        ]
    );
    assert_eq!(server.hits().len(), before);
}

fn workflow() -> (Yaml, Value) {
    let yaml = load_yaml(&repo_file(".github/workflows/release.yml"));
    let json = to_json(&yaml);
    (yaml, json)
}

#[test]
fn the_release_workflow_and_the_action_validate_and_build_the_five_targets() {
    let (yaml, wf) = workflow();
    let Yaml::Hash(top) = &yaml else {
        panic!("release.yml: not a mapping")
    };
    assert!(
        top.contains_key(&Yaml::String("on".into())),
        "`on` as a string"
    );
    assert_valid(&repo_schema("github-workflow.json"), &wf);
    assert_valid(
        &repo_schema("github-action.json"),
        &to_json(&load_yaml(&repo_file("action.yml"))),
    );
    // Runs on version tags only.
    assert!(
        wf["on"]["push"]["tags"][0]
            .as_str()
            .unwrap()
            .starts_with("v")
    );
    assert!(wf["on"]["push"].get("branches").is_none());
    let build = &wf["jobs"]["build"];
    let mut targets: Vec<&str> = build["strategy"]["matrix"]["include"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["target"].as_str().unwrap())
        .collect();
    targets.sort_unstable();
    assert_eq!(
        targets,
        [
            "aarch64-apple-darwin",
            "aarch64-unknown-linux-musl",
            "x86_64-apple-darwin",
            "x86_64-pc-windows-msvc",
            "x86_64-unknown-linux-musl",
        ]
    );
    let steps = build["steps"].as_array().unwrap();
    let runs = |needle: &str| {
        steps
            .iter()
            .any(|s| s["run"].as_str().is_some_and(|r| r.contains(needle)))
    };
    assert!(runs("cargo build --release --locked --target"));
    assert!(
        runs("scripts/package"),
        "archives made as install.sh reads them"
    );
    let release = &wf["jobs"]["release"];
    assert_eq!(release["needs"], "build");
    assert_eq!(release["permissions"]["contents"], "write");
    assert_eq!(
        wf["permissions"]["contents"], "read",
        "write only where needed"
    );
    let release_runs: Vec<&str> = release["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["run"].as_str())
        .collect();
    assert!(release_runs.iter().any(|r| r.contains("sha256sum --check")));
    assert!(release_runs.iter().any(|r| r.contains("gh release upload")));
    let mut scripts = Vec::new();
    run_steps(&wf, &mut scripts);
    for (shell, script) in &scripts {
        assert!(
            !script.contains("${{"),
            "an expression inside a script:\n{script}"
        );
        assert_shell_parses(shell, script, "release.yml");
    }
}

#[test]
fn binstall_metadata_names_the_archives_scripts_package_makes() {
    let manifest: toml::Table = std::fs::read_to_string(repo_file("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let b = &manifest["package"]["metadata"]["binstall"];
    for target in [LINUX_X86, "x86_64-pc-windows-msvc"] {
        let windows = target.contains("windows");
        let fmt = b
            .get("overrides")
            .and_then(|o| o.get(target))
            .and_then(|o| o.get("pkg-fmt"))
            .unwrap_or(&b["pkg-fmt"])
            .as_str()
            .unwrap();
        let suffix = match fmt {
            "tgz" => ".tar.gz",
            "zip" => ".zip",
            other => panic!("pkg-fmt {other}"),
        };
        let fill = |t: &str| {
            t.replace("{ version }", VERSION)
                .replace("{ name }", "warden")
                .replace("{ target }", target)
                .replace("{ archive-suffix }", suffix)
                .replace("{ bin }", "warden")
                .replace("{ binary-ext }", if windows { ".exe" } else { "" })
        };
        let url = fill(b["pkg-url"].as_str().unwrap());
        let asset = packaged(target);
        assert_eq!(
            url,
            format!(
                "https://github.com/warden-review/warden/releases/download{}",
                asset.path()
            )
        );
        // The binary's path inside the archive, as binstall will look for it.
        let inside = fill(b["bin-dir"].as_str().unwrap());
        let listing = if windows {
            zip_listing(&asset.archive)
        } else {
            tar_listing(&asset.archive)
        };
        assert!(
            listing.iter().any(|l| l == &inside),
            "{inside} in {listing:?}"
        );
    }
}

fn tar_listing(archive: &[u8]) -> Vec<String> {
    listing("tar", &["-tzf"], archive, "a.tar.gz")
}

fn zip_listing(archive: &[u8]) -> Vec<String> {
    listing("unzip", &["-Z1"], archive, "a.zip")
}

fn listing(tool: &str, args: &[&str], archive: &[u8], name: &str) -> Vec<String> {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join(name);
    std::fs::write(&file, archive).unwrap();
    let out = Command::new(tool).args(args).arg(&file).output().unwrap();
    assert!(out.status.success(), "{tool}: {}", stderr_of(&out));
    stdout_of(&out).lines().map(str::to_string).collect()
}
