//! The Kubernetes client the applier uses: kube's own layers (base URI, authentication,
//! impersonation headers) over a hyper connector with `TCP_NODELAY`, a connect timeout,
//! HTTP/2 where the server offers it, and a response timeout.
//!
//! - `TCP_NODELAY`: kube's default connector leaves Nagle's algorithm on, and the first request
//!   of every new connection then waits for the server's delayed ACK (~40 ms) — as long as a
//!   whole no-op apply of a few objects.
//! - HTTP/2 (ALPN `h2`, else HTTP/1.1; plain `http://` is HTTP/1.1): kube's rustls connector
//!   offers only HTTP/1.1, so every watch held a TLS connection of its own — 11,000 for 1,000
//!   workload clusters with 11 drift watches each. Over HTTP/2, as client-go talks to the API
//!   server, every request and watch of one client is a stream on one connection.
//! - No HPACK dynamic table for the server's headers ([`HEADER_TABLE_SIZE`]).
//! - HTTP/2 keep-alive pings (every 30 s, also while idle; 15 s for the answer, client-go's
//!   `ReadIdleTimeout` and `PingTimeout`): with one connection per cluster, a connection that
//!   died without a FIN would stall every watch of the cluster; an unanswered ping closes it,
//!   its streams fail and the watchers reconnect.
//! - A response timeout: kube sets none, and a server that accepts the connection and never
//!   answers would hang every caller for good.

use std::time::Duration;

use hyper_rustls::{FixedServerNameResolver, HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use kube::client::ConfigExt;
use kube::{Client, Config};
use tower::{BoxError, ServiceBuilder};

/// How long a client waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// For the TCP connection.
    pub connect: Duration,
    /// From sending a request until the response's headers arrive (connection and TLS
    /// handshake included). A watch's or a list's body may stream for longer.
    pub response: Duration,
    /// How often an HTTP/2 connection is pinged (also while no request is open).
    pub ping_interval: Duration,
    /// How long a ping may go unanswered before the connection is closed (and every request
    /// and watch on it fails).
    pub ping_timeout: Duration,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            connect: Duration::from_secs(10),
            response: Duration::from_secs(30),
            ping_interval: Duration::from_secs(30),
            ping_timeout: Duration::from_secs(15),
        }
    }
}

impl Timeouts {
    /// The defaults, shortened where `config` asks for less (`connect_timeout`,
    /// `read_timeout`).
    pub fn for_config(config: &Config) -> Timeouts {
        let default = Timeouts::default();
        let shorter = |set: Option<Duration>, default: Duration| set.map_or(default, |s| s.min(default));
        Timeouts {
            connect: shorter(config.connect_timeout, default.connect),
            response: shorter(config.read_timeout, default.response),
            ..default
        }
    }
}

/// A request that got no response in time.
#[derive(Debug, thiserror::Error)]
#[error("no response from {server} within {after:?}")]
pub struct NoResponse {
    pub server: String,
    pub after: Duration,
}

/// A client for `config` (what `Client::try_from(config)` gives, minus Nagle's delay and
/// kube's request tracing, plus the timeouts of [`Timeouts::for_config`]).
pub fn client(config: Config) -> Result<Client, kube::Error> {
    let timeouts = Timeouts::for_config(&config);
    client_with(config, timeouts)
}

/// A client for `config` with `timeouts`.
pub fn client_with(config: Config, timeouts: Timeouts) -> Result<Client, kube::Error> {
    let server = config.cluster_url.to_string().trim_end_matches('/').to_string();
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(timeouts.connect));
    let https = https_connector(&config, http)?;
    let hyper = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .timer(TokioTimer::new())
        .http2_keep_alive_interval(timeouts.ping_interval)
        .http2_keep_alive_timeout(timeouts.ping_timeout)
        .http2_keep_alive_while_idle(true)
        .http2_header_table_size(HEADER_TABLE_SIZE)
        .build(https);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_future(move |response| {
            let server = server.clone();
            let after = timeouts.response;
            async move {
                match tokio::time::timeout(after, response).await {
                    Ok(answer) => answer,
                    Err(_) => Err(BoxError::from(NoResponse { server, after })),
                }
            }
        })
        .map_err(BoxError::from)
        .service(hyper);
    Ok(Client::new(service, config.default_namespace))
}

/// The HPACK dynamic table the server may fill with the headers of its responses, in bytes:
/// none. The default (4 KiB of headers, about 10 KiB of memory as h2 keeps them) lives as long
/// as the connection, and the operator holds one per workload cluster (issue 36 §3); without
/// it the few headers of an API server's response are sent literally, a few hundred bytes.
const HEADER_TABLE_SIZE: u32 = 0;

/// TLS 1.3 session tickets a client keeps (rustls keeps up to 8 per server).
const SESSIONS_KEPT: usize = 8;

/// kube's rustls connector (its TLS settings, `tls_server_name` for SNI and verification),
/// offering HTTP/2 and HTTP/1.1 by ALPN where kube's offers HTTP/1.1 only.
fn https_connector(
    config: &Config,
    http: HttpConnector,
) -> Result<HttpsConnector<HttpConnector>, kube::Error> {
    let mut tls = config.rustls_client_config()?;
    // A client talks to one API server: a session cache for one server's tickets, not the
    // default's 32 servers, which it allocates up front (15 KiB per client; the operator holds
    // a client per workload cluster — issue 36 §3).
    tls.resumption = rustls::client::Resumption::in_memory_sessions(SESSIONS_KEPT);
    let builder = HttpsConnectorBuilder::new().with_tls_config(tls).https_or_http();
    let builder = match &config.tls_server_name {
        Some(name) => {
            let name = name
                .clone()
                .try_into()
                .map_err(|e| kube::Error::RustlsTls(kube::client::RustlsTlsError::InvalidServerName(e)))?;
            builder.with_server_name_resolver(FixedServerNameResolver::new(name))
        }
        None => builder,
    };
    Ok(builder.enable_all_versions().wrap_connector(http))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn timeouts_take_the_shorter() {
        let mut config = Config::new("https://example.invalid".parse().expect("URL"));
        config.connect_timeout = Some(Duration::from_secs(30));
        config.read_timeout = None;
        assert_eq!(Timeouts::for_config(&config), Timeouts::default());
        config.connect_timeout = Some(Duration::from_secs(2));
        config.read_timeout = Some(Duration::from_secs(5));
        let t = Timeouts::for_config(&config);
        assert_eq!(
            (t.connect, t.response),
            (Duration::from_secs(2), Duration::from_secs(5))
        );
    }

    /// A server that accepts connections and never answers: the request fails after the
    /// response timeout, naming the server and the timeout.
    #[tokio::test]
    async fn a_server_that_never_answers_times_out() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let hold = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                held.push(socket);
            }
        });
        for scheme in ["https", "http"] {
            let url = format!("{scheme}://{addr}");
            let config = Config::new(url.parse().expect("URL"));
            let timeouts = Timeouts {
                connect: Duration::from_secs(1),
                response: Duration::from_millis(300),
                ..Timeouts::default()
            };
            let client = client_with(config, timeouts).expect("client");
            let started = Instant::now();
            let answer = tokio::time::timeout(Duration::from_secs(10), client.apiserver_version())
                .await
                .expect("the client gives up by itself");
            let err = answer.expect_err("no answer is an error");
            let text = crate::ssa::api_message(&err);
            assert!(
                text.contains(&format!("no response from {url} within 300ms")),
                "{text}"
            );
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "{:?}",
                started.elapsed()
            );
        }
        hold.abort();
    }

    /// A TLS server that offers only HTTP/1.1 by ALPN, or no ALPN at all, is spoken to over
    /// HTTP/1.1 (an HTTP/2 preface would get no answer from it).
    #[tokio::test]
    async fn a_server_without_http2_is_spoken_to_over_http1() {
        use std::sync::Arc;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};

        let key = rcgen::KeyPair::generate().expect("key");
        let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
            .expect("params")
            .self_signed(&key)
            .expect("certificate");
        for alpn in [vec![b"http/1.1".to_vec()], Vec::new()] {
            let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
            let mut tls = rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .expect("versions")
                .with_no_client_auth()
                .with_single_cert(
                    vec![cert.der().clone()],
                    rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
                )
                .expect("server config");
            tls.alpn_protocols = alpn.clone();
            let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let addr = listener.local_addr().expect("address");
            let serve = tokio::spawn(async move {
                let (socket, _) = listener.accept().await.expect("accept");
                let mut stream = acceptor.accept(socket).await.expect("handshake");
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    let n = stream.read(&mut buf).await.expect("read");
                    assert!(n > 0, "the client closed before a request: {head:?}");
                    head.extend_from_slice(&buf[..n]);
                }
                stream
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                    .await
                    .expect("write");
                String::from_utf8_lossy(&head)
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_string()
            });

            let mut config = Config::new(format!("https://{addr}").parse().expect("URL"));
            config.root_cert = Some(vec![cert.der().to_vec()]);
            let client = client(config).expect("client");
            let request = http::Request::get("/version").body(Vec::new()).expect("request");
            let response =
                tokio::time::timeout(Duration::from_secs(10), client.send(request.map(Into::into)))
                    .await
                    .expect("an answer in time")
                    .expect("an answer over HTTP/1.1");
            assert_eq!(
                (response.status(), response.version()),
                (http::StatusCode::OK, http::Version::HTTP_11),
                "ALPN {alpn:?}"
            );
            let line = serve.await.expect("server");
            assert_eq!(line, "GET /version HTTP/1.1", "ALPN {alpn:?}");
        }
    }
}
