//! A static HTTP server on loopback for Helm repository tests: serves a directory (e.g.
//! `../shared/chart-repos`), answers `If-None-Match` with 304 (the ETag is the file's sha256),
//! counts requests, and can be told to misbehave (serve other bytes for one path, refuse
//! everything, require a credential). One thread per connection; `Connection: close`.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

#[derive(Default)]
struct State {
    requests: AtomicUsize,
    /// Path → bytes served instead of the file.
    overrides: Mutex<BTreeMap<String, Vec<u8>>>,
    /// The `Authorization` header every request must carry, when set.
    required_auth: Mutex<Option<String>>,
    /// Every request line and its Authorization header (for "never sent elsewhere" checks).
    log: Mutex<Vec<(String, Option<String>)>>,
    stopped: AtomicBool,
}

/// The server; stops when dropped.
pub struct StaticServer {
    root: PathBuf,
    port: u16,
    state: Arc<State>,
}

impl StaticServer {
    pub fn start(root: &Path) -> StaticServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(State::default());
        let (root2, state2) = (root.to_path_buf(), state.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if state2.stopped.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (root, state) = (root2.clone(), state2.clone());
                std::thread::spawn(move || serve(stream, &root, &state));
            }
        });
        StaticServer {
            root: root.to_path_buf(),
            port,
            state,
        }
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Requests answered so far.
    pub fn requests(&self) -> usize {
        self.state.requests.load(Ordering::SeqCst)
    }

    /// Serve `bytes` for `path` (e.g. `/cilium/index.yaml`) instead of the file.
    pub fn override_path(&self, path: &str, bytes: &[u8]) {
        self.state
            .overrides
            .lock()
            .unwrap()
            .insert(path.to_string(), bytes.to_vec());
    }

    /// Refuse (401) every request without exactly this `Authorization` header.
    pub fn require_auth(&self, header: &str) {
        *self.state.required_auth.lock().unwrap() = Some(header.to_string());
    }

    /// The request lines seen, with their Authorization header.
    pub fn log(&self) -> Vec<(String, Option<String>)> {
        self.state.log.lock().unwrap().clone()
    }
}

impl Drop for StaticServer {
    fn drop(&mut self) {
        self.state.stopped.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve(stream: TcpStream, root: &Path, state: &State) {
    let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(10)));
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() || line.is_empty() {
        return;
    }
    let mut headers = BTreeMap::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).is_err() || h == "\r\n" || h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.trim_end().split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    state.requests.fetch_add(1, Ordering::SeqCst);
    let auth = headers.get("authorization").cloned();
    state
        .log
        .lock()
        .unwrap()
        .push((line.trim_end().to_string(), auth.clone()));
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut out = stream;
    if let Some(required) = state.required_auth.lock().unwrap().clone()
        && auth.as_deref() != Some(required.as_str())
    {
        let _ = respond(&mut out, "401 Unauthorized", &[], b"unauthorized\n");
        return;
    }
    let body = match state.overrides.lock().unwrap().get(&path).cloned() {
        Some(bytes) => Some(bytes),
        None => {
            let rel = path.trim_start_matches('/');
            if rel.split('/').any(|s| s == "..") {
                None
            } else {
                let mut data = Vec::new();
                std::fs::File::open(root.join(rel))
                    .and_then(|mut f| f.read_to_end(&mut data))
                    .ok()
                    .map(|_| data)
            }
        }
    };
    let Some(body) = body else {
        let _ = respond(&mut out, "404 Not Found", &[], b"not found\n");
        return;
    };
    let etag = format!("\"{:x}\"", Sha256::digest(&body));
    if headers.get("if-none-match") == Some(&etag) {
        let _ = respond(&mut out, "304 Not Modified", &[("ETag", &etag)], b"");
        return;
    }
    let _ = respond(&mut out, "200 OK", &[("ETag", &etag)], &body);
}

fn respond(out: &mut TcpStream, status: &str, headers: &[(&str, &str)], body: &[u8]) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())?;
    out.write_all(body)?;
    out.flush()
}
