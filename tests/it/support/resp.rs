//! A fake Redis on 127.0.0.1 that answers a client's handshake (PING, AUTH, SELECT, CLIENT,
//! HELLO) like a server and then misbehaves on every script call (EVALSHA / EVAL) as its
//! [`Misbehave`] says: wrong types, absurd numbers, a drip, an endless bulk string, a
//! connection closed mid-reply, or well-formed answers that lie. It counts the script
//! calls, the bytes it sent and the connections that ended.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the fake answers to a script call.
#[derive(Clone, Debug)]
pub enum Misbehave {
    /// This raw RESP reply.
    Reply(&'static str),
    /// This reply, one byte per interval.
    Drip(&'static str, Duration),
    /// A bulk string that says it is 1 GB long, then bytes until the client leaves.
    EndlessBulk,
    /// The same endless bulk string as the answer to the handshake's PING.
    EndlessPong,
    /// The first half of this reply, then the connection is closed.
    CloseMidReply(&'static str),
    /// Echoes the password the client sent with AUTH in an error: to AUTH itself when
    /// `accept` is false, else to every script call.
    EchoPassword { accept: bool },
    /// Well-formed answers, by the script's number of keys (a breaker's admission has 2,
    /// its record 4): e.g. "closed", whatever happened; an error for any other script.
    ByKeys(&'static [(usize, &'static str)]),
    /// As `ByKeys`, each script's answers taken in turn (a fleet flapping between states).
    Cycle(&'static [(usize, &'static [&'static str])]),
}

pub struct FakeRedis {
    port: u16,
    scripts: Arc<AtomicU64>,
    sent: Arc<AtomicU64>,
    ended: Arc<AtomicU64>,
}

impl FakeRedis {
    pub fn start(how: Misbehave) -> FakeRedis {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().unwrap().port();
        let (scripts, sent) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let ended = Arc::new(AtomicU64::new(0));
        let (sc, se, en) = (scripts.clone(), sent.clone(), ended.clone());
        // A `Cycle`'s turn per script, shared by every connection.
        let turns = Arc::new(Mutex::new(HashMap::new()));
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let (how, sc, se, tu) = (how.clone(), sc.clone(), se.clone(), turns.clone());
                let en = en.clone();
                std::thread::spawn(move || {
                    serve(conn, &how, &sc, &se, &tu);
                    en.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        FakeRedis {
            port,
            scripts,
            sent,
            ended,
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Script calls received so far.
    pub fn scripts(&self) -> u64 {
        self.scripts.load(Ordering::SeqCst)
    }

    /// Bytes written to clients so far (an endless reply: until the client closed).
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::SeqCst)
    }

    /// Connections that ended: the client left, or a write to it failed.
    pub fn ended(&self) -> u64 {
        self.ended.load(Ordering::SeqCst)
    }
}

/// One command of the client (RESP array of bulk strings); None when it left or spoke
/// something else.
fn command(r: &mut BufReader<TcpStream>) -> Option<Vec<String>> {
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let n: usize = line.trim_end().strip_prefix('*')?.parse().ok()?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        line.clear();
        r.read_line(&mut line).ok()?;
        let len: usize = line.trim_end().strip_prefix('$')?.parse().ok()?;
        let mut buf = vec![0u8; len + 2];
        r.read_exact(&mut buf).ok()?;
        buf.truncate(len);
        out.push(String::from_utf8_lossy(&buf).into_owned());
    }
    Some(out)
}

fn serve(
    conn: TcpStream,
    how: &Misbehave,
    scripts: &AtomicU64,
    sent: &AtomicU64,
    turns: &Mutex<HashMap<usize, usize>>,
) {
    let mut w = conn.try_clone().unwrap();
    let mut r = BufReader::new(conn);
    let mut send = |bytes: &[u8]| {
        let ok = w.write_all(bytes).is_ok();
        if ok {
            sent.fetch_add(bytes.len() as u64, Ordering::SeqCst);
        }
        ok
    };
    let mut password = String::new();
    while let Some(cmd) = command(&mut r) {
        let name = cmd
            .first()
            .map(|c| c.to_ascii_uppercase())
            .unwrap_or_default();
        let ok = match (name.as_str(), how) {
            ("PING", Misbehave::EndlessPong) => misbehave(&Misbehave::EndlessBulk, &mut send),
            ("PING", _) => send(b"+PONG\r\n"),
            // A cursor that never comes back to 0.
            ("SCAN", _) => send(b"*2\r\n$1\r\n1\r\n*0\r\n"),
            ("AUTH", Misbehave::EchoPassword { accept }) => {
                password = cmd.last().cloned().unwrap_or_default();
                let echo = format!("-WRONGPASS not '{password}'\r\n");
                send(if *accept { b"+OK\r\n" } else { echo.as_bytes() })
            }
            ("EVALSHA" | "EVAL", Misbehave::EchoPassword { .. }) => {
                scripts.fetch_add(1, Ordering::SeqCst);
                send(format!("-WRONGPASS not '{password}'\r\n").as_bytes())
            }
            ("EVALSHA" | "EVAL", Misbehave::ByKeys(replies)) => {
                scripts.fetch_add(1, Ordering::SeqCst);
                let keys: usize = cmd.get(2).and_then(|n| n.parse().ok()).unwrap_or(0);
                let reply = replies.iter().find(|(n, _)| *n == keys);
                send(
                    reply
                        .map_or("-ERR no answer scripted\r\n", |(_, r)| r)
                        .as_bytes(),
                )
            }
            ("EVALSHA" | "EVAL", Misbehave::Cycle(replies)) => {
                scripts.fetch_add(1, Ordering::SeqCst);
                let keys: usize = cmd.get(2).and_then(|n| n.parse().ok()).unwrap_or(0);
                let reply = replies.iter().find(|(n, _)| *n == keys).map(|(_, all)| {
                    let mut turns = turns.lock().unwrap();
                    let turn = turns.entry(keys).or_insert(0);
                    *turn += 1;
                    all[(*turn - 1) % all.len()]
                });
                send(reply.unwrap_or("-ERR no answer scripted\r\n").as_bytes())
            }
            ("EVALSHA" | "EVAL", _) => {
                scripts.fetch_add(1, Ordering::SeqCst);
                misbehave(how, &mut send)
            }
            _ => send(b"+OK\r\n"),
        };
        if !ok {
            return;
        }
    }
}

/// Answers one script call; false when the connection is done.
fn misbehave(how: &Misbehave, send: &mut impl FnMut(&[u8]) -> bool) -> bool {
    match how {
        Misbehave::Reply(r) => send(r.as_bytes()),
        Misbehave::Drip(r, every) => r.as_bytes().chunks(1).all(|b| {
            std::thread::sleep(*every);
            send(b)
        }),
        Misbehave::EndlessBulk => {
            let chunk = vec![b'x'; 64 * 1024];
            send(b"$1000000000\r\n") && std::iter::repeat(()).all(|_| send(&chunk))
        }
        Misbehave::CloseMidReply(r) => {
            send(&r.as_bytes()[..r.len() / 2]);
            false
        }
        Misbehave::EchoPassword { .. }
        | Misbehave::ByKeys(_)
        | Misbehave::Cycle(_)
        | Misbehave::EndlessPong => unreachable!("answered in serve"),
    }
}
