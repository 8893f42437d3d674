//! A real OCI registry for tests: Debian's `docker-registry` (the CNCF distribution registry,
//! v2.8; `scripts/install-test-deps.sh` installs it) on a free loopback port, its storage in a
//! temp dir, in one of three auth modes:
//! - anonymous (no `auth:`);
//! - htpasswd Basic (`auth: htpasswd`, a bcrypt file written here);
//! - token (`auth: token`): a token issuer in the test process ([`TokenIssuer`]) signs ES256
//!   JWTs with a key whose certificate (x5c) chains to the CA the registry trusts
//!   (`rootcertbundle`); anonymous callers get pull, the user pull and push.
//!
//! [`FaultProxy`] stands in front of a registry to inject what a real one sends only under
//! load or policy (429 with `Retry-After`, 403, 503), forwarding everything else.
//!
//! Include with `#[path = "support/registry.rs"] mod registry;`.
#![allow(dead_code)]

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;

pub const USER: &str = "stacker";
pub const PASSWORD: &str = "s3cret-pass";
pub const SERVICE: &str = "capstan-test-registry";
pub const ISSUER: &str = "capstan-test-issuer";

/// The registry binary: `CAPSTAN_DOCKER_REGISTRY`, else `docker-registry` on PATH.
pub fn binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CAPSTAN_DOCKER_REGISTRY") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("docker-registry"))
        .find(|p| p.is_file())
}

/// The binary, or a printed skip (a failure under `CI=true`).
pub fn binary_or_skip(test: &str) -> Option<PathBuf> {
    match binary() {
        Some(b) => Some(b),
        None => {
            let reason =
                "docker-registry not found (run scripts/install-test-deps.sh or set CAPSTAN_DOCKER_REGISTRY)";
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!("{test}: {reason}");
            }
            eprintln!("SKIP {test}: {reason}");
            None
        }
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// How the registry authenticates.
pub enum Auth {
    Anonymous,
    Htpasswd,
    Token(TokenIssuer),
}

pub struct Registry {
    binary: PathBuf,
    pub dir: tempfile::TempDir,
    pub port: u16,
    child: Option<Child>,
    pub auth: Auth,
}

impl Registry {
    pub fn start(binary: &Path, auth: Auth) -> Registry {
        let dir = tempfile::tempdir().expect("temp dir");
        let port = free_port();
        let auth_yaml = match &auth {
            Auth::Anonymous => String::new(),
            Auth::Htpasswd => {
                let hash = bcrypt::hash(PASSWORD, 4).expect("bcrypt");
                let file = dir.path().join("htpasswd");
                std::fs::write(&file, format!("{USER}:{hash}\n")).unwrap();
                format!(
                    "auth:\n  htpasswd:\n    realm: capstan-test\n    path: {}\n",
                    file.display()
                )
            }
            Auth::Token(issuer) => {
                let bundle = dir.path().join("token-ca.pem");
                std::fs::write(&bundle, &issuer.ca_pem).unwrap();
                format!(
                    "auth:\n  token:\n    realm: {}\n    service: {SERVICE}\n    issuer: {ISSUER}\n    rootcertbundle: {}\n",
                    issuer.realm(),
                    bundle.display()
                )
            }
        };
        let config = format!(
            "version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n  secret: capstan-test-secret\n{auth_yaml}",
            dir.path().join("data").display()
        );
        std::fs::write(dir.path().join("config.yml"), config).unwrap();
        let mut r = Registry {
            binary: binary.to_path_buf(),
            dir,
            port,
            child: None,
            auth,
        };
        r.launch();
        r
    }

    fn launch(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("registry.log"))
            .unwrap();
        let child = Command::new(&self.binary)
            .arg("serve")
            .arg(self.dir.path().join("config.yml"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("starting docker-registry");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                panic!("docker-registry exited ({status}): {}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "docker-registry did not listen: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default()
    }

    /// `127.0.0.1:PORT`.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// SIGKILL, as a crash.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Started again on the same port and storage.
    pub fn restart(&mut self) {
        self.kill();
        self.launch();
    }

    /// Where the registry keeps the blob of `sha256:<hex>`.
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.trim_start_matches("sha256:");
        self.dir
            .path()
            .join("data/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A token endpoint for `auth: token`: Basic credentials optional; anonymous callers are
/// granted `pull`, [`USER`] with [`PASSWORD`] `pull` and `push`; a wrong password is a 401.
pub struct TokenIssuer {
    pub ca_pem: String,
    addr: SocketAddr,
    pub requests: Arc<AtomicUsize>,
    /// `expires_in` of the tokens issued from now on (default 300 s).
    pub expires_in: Arc<std::sync::atomic::AtomicU64>,
    _runtime: tokio::runtime::Runtime,
}

struct Signer {
    key: aws_lc_rs::signature::EcdsaKeyPair,
    leaf_der: Vec<u8>,
}

impl TokenIssuer {
    pub fn start() -> TokenIssuer {
        use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
        use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, KeyUsagePurpose};
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, "capstan-token-ca");
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca, &ca_key);
        // The signing key in both libraries: aws-lc signs JWS (r||s), rcgen certifies it.
        let rng = aws_lc_rs::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref()).unwrap();
        let leaf_key = KeyPair::try_from(pkcs8.as_ref()).unwrap();
        let mut leaf = CertificateParams::new(Vec::<String>::new()).unwrap();
        leaf.distinguished_name
            .push(rcgen::DnType::CommonName, "capstan-token-signer");
        leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        let leaf_cert = leaf.signed_by(&leaf_key, &issuer).unwrap();
        let signer = Arc::new(Signer {
            key,
            leaf_der: leaf_cert.der().to_vec(),
        });
        let requests = Arc::new(AtomicUsize::new(0));
        let expires_in = Arc::new(std::sync::atomic::AtomicU64::new(300));
        let lifetime = expires_in.clone();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let counter = requests.clone();
        let app = axum::Router::new().route(
            "/token",
            axum::routing::get(
                move |headers: axum::http::HeaderMap,
                      axum::extract::Query(q): axum::extract::Query<
                    std::collections::HashMap<String, String>,
                >| {
                    let signer = signer.clone();
                    counter.fetch_add(1, Ordering::SeqCst);
                    let expires_in = lifetime.load(Ordering::SeqCst);
                    async move { token_answer(&signer, &headers, &q, expires_in) }
                },
            ),
        );
        runtime.spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        TokenIssuer {
            ca_pem: ca_cert.pem(),
            addr,
            requests,
            expires_in,
            _runtime: runtime,
        }
    }

    pub fn realm(&self) -> String {
        format!("http://{}/token", self.addr)
    }
}

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn token_answer(
    signer: &Signer,
    headers: &axum::http::HeaderMap,
    q: &std::collections::HashMap<String, String>,
    expires_in: u64,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let user = match headers.get("authorization").and_then(|v| v.to_str().ok()) {
        None => None,
        Some(basic) => {
            let decoded = basic
                .strip_prefix("Basic ")
                .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            if decoded != format!("{USER}:{PASSWORD}") {
                return (axum::http::StatusCode::UNAUTHORIZED, "bad credentials").into_response();
            }
            Some(USER)
        }
    };
    let mut access = Vec::new();
    if let Some(scope) = q.get("scope") {
        for one in scope.split(' ') {
            let mut parts = one.splitn(3, ':');
            let (Some(kind), Some(name), Some(actions)) = (parts.next(), parts.next(), parts.next()) else {
                continue;
            };
            let granted: Vec<&str> = actions
                .split(',')
                .filter(|a| *a == "pull" || (*a == "push" && user.is_some()))
                .collect();
            access.push(serde_json::json!({"type": kind, "name": name, "actions": granted}));
        }
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let header = serde_json::json!({
        "typ": "JWT", "alg": "ES256",
        "x5c": [base64::engine::general_purpose::STANDARD.encode(&signer.leaf_der)],
    });
    let claims = serde_json::json!({
        "iss": ISSUER, "sub": user.unwrap_or(""), "aud": SERVICE,
        "exp": now + expires_in.max(60), "nbf": now - 10, "iat": now,
        "jti": format!("{now}-{}", access.len()), "access": access,
    });
    let signing_input = format!(
        "{}.{}",
        b64url(header.to_string().as_bytes()),
        b64url(claims.to_string().as_bytes())
    );
    let rng = aws_lc_rs::rand::SystemRandom::new();
    let sig = signer.key.sign(&rng, signing_input.as_bytes()).unwrap();
    let token = format!("{signing_input}.{}", b64url(sig.as_ref()));
    axum::Json(serde_json::json!({"token": token, "expires_in": expires_in})).into_response()
}

/// One injected answer: requests whose method matches and whose path contains `path`
/// get `status` (with `Retry-After` when given; a 3xx redirects to the same path and query on
/// `redirect_to`), `times` times.
#[derive(Clone, Debug, Default)]
pub struct Fault {
    pub method: &'static str,
    pub path: &'static str,
    pub status: u16,
    pub retry_after: Option<u64>,
    pub times: usize,
    /// `http://HOST:PORT` a 3xx points to.
    pub redirect_to: Option<String>,
}

/// A forwarding proxy in front of a registry that injects [`Fault`]s.
pub struct FaultProxy {
    addr: SocketAddr,
    pub faults: Arc<Mutex<Vec<Fault>>>,
    pub injected: Arc<AtomicUsize>,
    /// Requests that carried an `Authorization` header.
    pub authorized: Arc<AtomicUsize>,
    /// Every request.
    pub requests: Arc<AtomicUsize>,
    _runtime: tokio::runtime::Runtime,
}

impl FaultProxy {
    pub fn start(upstream: String) -> FaultProxy {
        let faults: Arc<Mutex<Vec<Fault>>> = Arc::default();
        let injected = Arc::new(AtomicUsize::new(0));
        let authorized = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(AtomicUsize::new(0));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let (f, n, a, r) = (
            faults.clone(),
            injected.clone(),
            authorized.clone(),
            requests.clone(),
        );
        let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
            let (f, n, client, upstream) = (f.clone(), n.clone(), client.clone(), upstream.clone());
            r.fetch_add(1, Ordering::SeqCst);
            if req.headers().contains_key("authorization") {
                a.fetch_add(1, Ordering::SeqCst);
            }
            async move { proxy(req, &f, &n, &client, &upstream).await }
        });
        runtime.spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FaultProxy {
            addr,
            faults,
            injected,
            authorized,
            requests,
            _runtime: runtime,
        }
    }

    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    pub fn inject(&self, fault: Fault) {
        self.faults.lock().unwrap().push(fault);
    }
}

async fn proxy(
    req: axum::extract::Request,
    faults: &Mutex<Vec<Fault>>,
    injected: &AtomicUsize,
    client: &reqwest::Client,
    upstream: &str,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let method = req.method().to_string();
    let path_q = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_default();
    let hit = {
        let mut faults = faults.lock().unwrap();
        faults
            .iter_mut()
            .find(|f| f.times > 0 && f.method == method && path_q.contains(f.path))
            .map(|f| {
                f.times -= 1;
                f.clone()
            })
    };
    if let Some(f) = hit {
        injected.fetch_add(1, Ordering::SeqCst);
        let mut resp = (
            axum::http::StatusCode::from_u16(f.status).unwrap(),
            r#"{"errors":[{"code":"INJECTED","message":"injected by the test"}]}"#,
        )
            .into_response();
        if let Some(secs) = f.retry_after {
            resp.headers_mut()
                .insert("retry-after", secs.to_string().parse().unwrap());
        }
        if let Some(target) = &f.redirect_to {
            resp.headers_mut()
                .insert("location", format!("{target}{path_q}").parse().unwrap());
        }
        return resp;
    }
    let mut out = client.request(req.method().clone(), format!("http://{upstream}{path_q}"));
    for (k, v) in req.headers() {
        if k != "host" {
            out = out.header(k, v);
        }
    }
    let body = axum::body::to_bytes(req.into_body(), usize::MAX)
        .await
        .unwrap_or_default();
    let resp = match out.body(body).send().await {
        Ok(r) => r,
        Err(e) => return (axum::http::StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    };
    let mut builder = axum::http::Response::builder().status(resp.status().as_u16());
    for (k, v) in resp.headers() {
        if k != "transfer-encoding" && k != "connection" {
            builder = builder.header(k.as_str(), v.as_bytes());
        }
    }
    let bytes = resp.bytes().await.unwrap_or_default();
    builder.body(axum::body::Body::from(bytes)).unwrap()
}
