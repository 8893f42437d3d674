//! The operator's one HTTP stack: every endpoint — `/healthz` and `/readyz`, `/metrics`, the
//! admission webhooks, the Runtime SDK hooks — is an axum [`Router`] served by [`serve`], over
//! plain TCP or over TLS. TLS is set up here and nowhere else: rustls on aws-lc-rs (the
//! crate's one crypto provider, named explicitly), the certificate from [`cert`] (generated at
//! start, or a mounted directory re-read when it is rotated).
//!
//! The accept loop is our own rather than `axum::serve`: it bounds the TLS handshake and the
//! reading of request headers (a client that stalls cannot hold a connection open), and it
//! bounds how long requests in flight may finish after shutdown is asked for.

pub mod cert;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

use cert::{CertError, CertResolver, Certificate};

/// A client that has not finished its TLS handshake, or the headers of a request, by then is
/// dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long requests in flight may take to finish after shutdown is asked for.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Certificate(#[from] CertError),
    #[error("TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
    #[error("listening on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// Binds `addr` (port 0: any free port; the listener tells which).
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, ServeError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })
}

/// Plain HTTP, or HTTPS with a certificate.
#[derive(Clone, Debug)]
pub enum Transport {
    Http,
    Https(Certificate),
}

/// Serves `router` (HTTP/1.1) on `listener` until `shutdown` completes, then lets requests in
/// flight finish (up to 10 s). `what` names the server in logs.
pub async fn serve(
    listener: TcpListener,
    transport: &Transport,
    what: &'static str,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let tls = match transport {
        Transport::Http => None,
        Transport::Https(cert) => Some(TlsAcceptor::from(Arc::new(tls_config(cert)?))),
    };
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, "{what} listening");
    }
    loop {
        let (tcp, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Out of file descriptors and the like: pause, rather than spin.
                    tracing::warn!(error = %e, "{what}: accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let router = router.clone();
        let watcher = graceful.watcher();
        let Some(tls) = tls.clone() else {
            tokio::spawn(connection(tcp, peer, router, watcher, what));
            continue;
        };
        tokio::spawn(async move {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.accept(tcp)).await {
                Ok(Ok(stream)) => connection(stream, peer, router, watcher, what).await,
                Ok(Err(e)) => tracing::debug!(%peer, error = %e, "{what}: TLS handshake failed"),
                Err(_) => tracing::debug!(%peer, "{what}: TLS handshake timed out"),
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(DRAIN_TIMEOUT, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("{what}: requests still running after the drain timeout; dropped");
    }
    Ok(())
}

/// One connection's requests, answered by `router`, until the client or shutdown ends it.
async fn connection<IO>(io: IO, peer: SocketAddr, router: Router, watcher: Watcher, what: &'static str)
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        router.clone().oneshot(req.map(Body::new))
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HANDSHAKE_TIMEOUT)
        .serve_connection(TokioIo::new(io), service);
    if let Err(e) = watcher.watch(conn).await {
        tracing::debug!(%peer, error = %e, "{what}: connection ended with an error");
    }
}

fn tls_config(cert: &Certificate) -> Result<rustls::ServerConfig, ServeError> {
    let resolver = Arc::new(CertResolver::new(cert)?);
    // The provider is named, not taken from the process default: one crypto provider.
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// A request's body, at most `limit` bytes; else the response that says why not.
pub async fn read_body(body: Body, limit: usize) -> Result<Bytes, Response> {
    axum::body::to_bytes(body, limit).await.map_err(|e| {
        plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("cannot read the request body (at most {limit} bytes): {e}\n"),
        )
    })
}

/// A text response.
pub fn plain(status: StatusCode, text: String) -> Response {
    (status, text).into_response()
}

/// A 200 response carrying `value` as JSON; a 500 if it cannot be written.
pub fn json<T: serde::Serialize>(value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(json) => ([(axum::http::header::CONTENT_TYPE, "application/json")], json).into_response(),
        Err(e) => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot write the response: {e}\n"),
        ),
    }
}
