//! A real LiteLLM proxy on 127.0.0.1 in front of the fake provider, for the gateway tests.
//!
//! The proxy comes from `WARDEN_LITELLM_BIN` (the `litellm` executable of a virtualenv
//! with `litellm[proxy]`); without it, the harness makes its own virtualenv under
//! `target/litellm-venv` once (`python3 -m venv` + pip). It runs with the local model cost
//! map and its telemetry off, and talks only to the fake on loopback. One proxy serves
//! the whole test process; a watchdog ends it when the process exits.

use super::fake_provider::FakeProvider;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The pinned LiteLLM version the tests were written against.
pub const VERSION: &str = "1.108.7";
/// The proxy's master key: what a warden route sends as its API key.
pub const MASTER_KEY: &str = "sk-warden-test-0f9e8d7c6b5a49382716f5e4d3c2b1a0";

pub struct Proxy {
    pub fake: FakeProvider,
    port: u16,
    _child: Mutex<Child>,
    _dir: tempfile::TempDir,
}

impl Proxy {
    /// `http://127.0.0.1:PORT/v1`, for a route's `baseUrl`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }
}

/// The shared proxy, started on first use. The models it serves are the fake's model
/// names listed here, each forwarded as `openai/NAME` to the fake.
pub fn proxy() -> &'static Proxy {
    static PROXY: OnceLock<Proxy> = OnceLock::new();
    PROXY.get_or_init(start)
}

/// Models the proxy forwards to the fake (tests script behaviours per name).
pub const MODELS: &[&str] = &[
    "gw-ok",
    "gw-down",
    "gw-down-openai",
    LIMITED,
    "gw-quota",
    "gw-azure-429",
    AGENT,
];

/// A deployment the fake answers as a small agent in a tool loop (`gateway_tools.rs`).
pub const AGENT: &str = "gw-agent";

/// A deployment with LiteLLM's `max_parallel_requests: 2` (429 beyond it).
pub const LIMITED: &str = "gw-limited";

/// Deployments under an alias warden cannot read a model family from (the proxy's
/// `model_name`, forwarded as `openai/MODEL`): an OpenAI reasoning model behind a
/// gateway. `gpt-5-mini` is also served under its own name.
pub const ALIASES: &[(&str, &str)] = &[("gw-reasoner", "o4-mini")];

fn start() -> Proxy {
    let bin = litellm_bin();
    let fake = FakeProvider::start();
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = String::from("model_list:\n");
    for m in MODELS {
        cfg.push_str(&format!(
            "  - model_name: {m}\n    litellm_params:\n      model: openai/{m}\n      api_base: {}\n      api_key: sk-fake-upstream\n",
            fake.base_url()
        ));
        if *m == LIMITED {
            cfg.push_str("      max_parallel_requests: 2\n");
        }
    }
    for (alias, model) in ALIASES.iter().chain(&[("gpt-5-mini", "gpt-5-mini")]) {
        cfg.push_str(&format!(
            "  - model_name: {alias}\n    litellm_params:\n      model: openai/{model}\n      api_base: {}\n      api_key: sk-fake-upstream\n",
            fake.base_url()
        ));
    }
    let cfg_path = dir.path().join("litellm.yaml");
    std::fs::write(&cfg_path, cfg).unwrap();
    let port = free_port();
    let watchdog =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/support/litellm_watchdog.py");
    let log = std::fs::File::create(dir.path().join("proxy.log")).unwrap();
    let mut child = Command::new("python3")
        .arg(watchdog)
        .arg(&bin)
        .args(["--config", cfg_path.to_str().unwrap()])
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .env("LITELLM_MASTER_KEY", MASTER_KEY)
        // No network: the bundled model cost map, no telemetry, no proxies.
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env("LITELLM_TELEMETRY_DISABLED", "true")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .env_remove("http_proxy")
        .env_remove("https_proxy")
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("python3 runs the LiteLLM watchdog");
    // The pipe stays open for the life of the process; dropping it would stop the proxy.
    std::mem::forget(child.stdin.take());
    wait_ready(port, &mut child, &dir.path().join("proxy.log"));
    Proxy {
        fake,
        port,
        _child: Mutex::new(child),
        _dir: dir,
    }
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Polls the proxy's liveness endpoint (it takes tens of seconds to import and start).
fn wait_ready(port: u16, child: &mut Child, log: &Path) {
    let until = Instant::now() + Duration::from_secs(300);
    while Instant::now() < until {
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "the LiteLLM proxy exited ({status}) before it was ready:\n{}",
                tail(log)
            );
        }
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let req =
                "GET /health/liveliness HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n";
            if s.write_all(req.as_bytes()).is_ok() {
                let mut buf = [0u8; 64];
                if let Ok(n) = std::io::Read::read(&mut s, &mut buf)
                    && buf[..n].starts_with(b"HTTP/1.1 200")
                {
                    return;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!(
        "the LiteLLM proxy was not ready within 300 s:\n{}",
        tail(log)
    );
}

fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// The `litellm` executable: `WARDEN_LITELLM_BIN`, else a virtualenv the harness makes
/// under `target/` (once; later runs reuse it).
fn litellm_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("WARDEN_LITELLM_BIN").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "WARDEN_LITELLM_BIN={} is not a file: point it at the `litellm` executable of a virtualenv with litellm[proxy]=={VERSION}",
            p.display()
        );
        return p;
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/litellm-venv");
    let bin = venv.join("bin/litellm");
    if bin.is_file() {
        return bin;
    }
    let run = |cmd: &mut Command| {
        let out = cmd.output().expect("python3 runs");
        assert!(
            out.status.success(),
            "{cmd:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(Command::new("python3").args(["-m", "venv"]).arg(&venv));
    run(Command::new(venv.join("bin/pip")).args([
        "install",
        "--quiet",
        &format!("litellm[proxy]=={VERSION}"),
    ]));
    assert!(bin.is_file(), "pip installed no {}", bin.display());
    bin
}
