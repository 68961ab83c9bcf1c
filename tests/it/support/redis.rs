//! A real `redis-server` (the Debian package) on a free 127.0.0.1 port, with no
//! persistence and its own temp dir. Tests stop, kill, pause (SIGSTOP) and restart it
//! mid-review; it is killed when dropped.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct RedisServer {
    port: u16,
    dir: tempfile::TempDir,
    extra: Vec<String>,
    child: Option<Child>,
    /// Only TLS on the port (`rediss://`).
    tls: bool,
}

impl RedisServer {
    /// Starts a server and waits until it answers PING.
    pub fn start() -> RedisServer {
        Self::start_with(&[])
    }

    /// Starts a server with extra arguments (e.g. `["--requirepass", "pw"]`).
    pub fn start_with(extra: &[&str]) -> RedisServer {
        let port = free_port();
        let mut s = RedisServer {
            port,
            dir: tempfile::tempdir().expect("temp dir"),
            extra: extra.iter().map(|a| a.to_string()).collect(),
            child: None,
            tls: false,
        };
        s.restart();
        s
    }

    /// Starts a server that speaks only TLS on its port, with this certificate and key
    /// (PEM); `rediss://` clients must trust their issuer.
    pub fn start_tls(cert_pem: &str, key_pem: &str) -> RedisServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
        std::fs::write(&cert, cert_pem).unwrap();
        std::fs::write(&key, key_pem).unwrap();
        let port = free_port();
        let extra = vec![
            "--tls-cert-file".to_string(),
            cert.display().to_string(),
            "--tls-key-file".to_string(),
            key.display().to_string(),
            "--tls-auth-clients".to_string(),
            "no".to_string(),
        ];
        let mut s = RedisServer {
            port,
            dir,
            extra,
            child: None,
            tls: true,
        };
        s.restart();
        s
    }

    /// `redis://127.0.0.1:PORT` (`rediss://` for a TLS server).
    pub fn url(&self) -> String {
        let scheme = if self.tls { "rediss" } else { "redis" };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Starts it again on the same port (after [`stop`](Self::stop) or
    /// [`kill`](Self::kill)); waits until it answers PING.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "already running");
        let port = self.port.to_string();
        let ports: &[&str] = if self.tls {
            &["--port", "0", "--tls-port", &port]
        } else {
            &["--port", &port]
        };
        let child = Command::new("redis-server")
            .args(ports)
            .args(["--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .args(["--daemonize", "no", "--loglevel", "warning"])
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start redis-server ({e}): the fleet tests run a real one on \
                     127.0.0.1. Run the README's test command, scripts/test, which installs \
                     it; or install it yourself (Debian/Ubuntu: apt-get install \
                     redis-server; macOS: brew install redis) so that redis-server is on PATH"
                )
            });
        self.child = Some(child);
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if self.answers_ping() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "redis-server on port {} did not answer PING within 10s",
            self.port
        );
    }

    /// Whether something on the port answers PING (+PONG, or NOAUTH when a password is set);
    /// for a TLS server, whether the port accepts connections.
    pub fn answers_ping(&self) -> bool {
        use std::io::{Read, Write};
        let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        if self.tls {
            return true;
        }
        let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
        if s.write_all(b"PING\r\n").is_err() {
            return false;
        }
        let mut buf = [0u8; 64];
        matches!(s.read(&mut buf), Ok(n) if n > 0 && (buf.starts_with(b"+PONG") || buf.starts_with(b"-NOAUTH")))
    }

    /// Stops it (SIGTERM) and waits for the process to end.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            signal(&c, libc::SIGTERM);
            let _ = c.wait();
        }
    }

    /// Kills it (SIGKILL) and waits for the process to end.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Freezes it (SIGSTOP): connections are accepted by the kernel, nothing answers.
    pub fn pause(&self) {
        signal(self.child.as_ref().expect("running"), libc::SIGSTOP);
    }

    /// Lets a paused server go on (SIGCONT).
    pub fn resume(&self) {
        signal(self.child.as_ref().expect("running"), libc::SIGCONT);
    }

    /// A connection for the test to look at or change the server's state.
    pub fn client(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(2)))
            .expect("connect to the test redis")
    }

    /// Keys matching `pattern`.
    pub fn keys(&self, pattern: &str) -> Vec<String> {
        redis::cmd("KEYS")
            .arg(pattern)
            .query(&mut self.client())
            .expect("KEYS")
    }

    /// A counter of `INFO stats` (`total_net_output_bytes`, `total_connections_received`).
    pub fn stat(&self, name: &str) -> u64 {
        let info: String = redis::cmd("INFO")
            .arg("stats")
            .query(&mut self.client())
            .expect("INFO stats");
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("INFO stats names {name}"))
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(c) = &self.child {
            // A paused server must be woken to die of SIGTERM; SIGKILL needs no waking.
            signal(c, libc::SIGCONT);
        }
        self.kill();
    }
}

fn signal(c: &Child, sig: libc::c_int) {
    // SAFETY: kill(2) on our own child's pid with a valid signal number.
    unsafe {
        libc::kill(c.id() as libc::pid_t, sig);
    }
}

/// A port nothing listens on now (the OS picks it; released before redis binds it).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind 127.0.0.1:0")
}
