//! A minimal OTLP/HTTP receiver on 127.0.0.1: records every POST (path, headers and body)
//! and answers 200 with an empty protobuf body, as a collector does.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// One POST received: its path, its headers (names lowercased) and its body.
pub struct Post {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Post {
    /// The value of header `name` (lowercase), if it was sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

type Posts = Arc<Mutex<Vec<Post>>>;

pub struct Receiver {
    pub addr: std::net::SocketAddr,
    posts: Posts,
}

impl Receiver {
    pub fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let posts: Posts = Arc::new(Mutex::new(Vec::new()));
        let p = posts.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut s) = conn else { continue };
                let p = p.clone();
                std::thread::spawn(move || {
                    while let Some(post) = read_request(&mut s) {
                        p.lock().unwrap().push(post);
                        let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n");
                    }
                });
            }
        });
        Receiver { addr, posts }
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn posts(&self, path: &str) -> Vec<Vec<u8>> {
        self.posts
            .lock()
            .unwrap()
            .iter()
            .filter(|p| p.path == path)
            .map(|p| p.body.clone())
            .collect()
    }

    /// Every POST to `path`, with its headers.
    pub fn requests(&self, path: &str) -> Vec<Post> {
        let posts = self.posts.lock().unwrap();
        let to_path = posts.iter().filter(|p| p.path == path);
        to_path
            .map(|p| Post {
                path: p.path.clone(),
                headers: p.headers.clone(),
                body: p.body.clone(),
            })
            .collect()
    }

    /// The paths of every POST, in arrival order.
    pub fn paths(&self) -> Vec<String> {
        let posts = self.posts.lock().unwrap();
        posts.iter().map(|p| p.path.clone()).collect()
    }

    pub fn all_bytes(&self) -> Vec<u8> {
        self.posts
            .lock()
            .unwrap()
            .iter()
            .flat_map(|p| p.body.clone())
            .collect()
    }
}

fn read_request(s: &mut std::net::TcpStream) -> Option<Post> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p;
        }
        let n = s.read(&mut tmp).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_string();
    let path = head.split(' ').nth(1)?.to_string();
    let headers = head
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    let mut body = buf[end + 4..].to_vec();
    while body.len() < len {
        let n = s.read(&mut tmp).ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&tmp[..n]);
    }
    body.truncate(len);
    Some(Post {
        path,
        headers,
        body,
    })
}
