//! The HTTPS server the API server calls: TLS by rustls on aws-lc-rs, HTTP/1.1 by hyper, one
//! POST path per webhook ([`Hook::path`]), each answered by [`admission::review`].

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use kube::Client;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::admission::{self, Hook};
use super::cert::{CertError, CertResolver, Certificate, generate};
use crate::operator::settings::WebhookSettings;

/// Largest review accepted: an object and its old version, each at most etcd's 1.5 MiB, plus
/// the review around them.
const MAX_BODY: usize = 8 << 20;
/// A client that has not finished its TLS handshake or request headers by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long reviews in flight may take to finish after shutdown is asked for.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the webhook server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error(transparent)]
    Certificate(#[from] CertError),
    #[error("webhook TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
    #[error("listening on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// Serves the webhooks on `settings.addr` until `shutdown` completes, then lets reviews in
/// flight finish (up to 10 s). The certificate is read from `settings.cert_dir` (re-read when
/// it changes) or, without one, generated for `localhost`, `127.0.0.1` and `settings.hosts`;
/// a caller that must publish the generated CA calls [`generate`] and [`serve_with`] instead.
pub async fn serve(
    settings: WebhookSettings,
    client: Client,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), WebhookError> {
    let cert = match settings.cert_dir {
        Some(dir) => Certificate::Files(dir),
        None => Certificate::Generated(generate(&settings.hosts)?),
    };
    let listener = TcpListener::bind(settings.addr)
        .await
        .map_err(|source| WebhookError::Bind {
            addr: settings.addr,
            source,
        })?;
    serve_with(listener, cert, client, shutdown).await
}

/// Serves the webhooks on a bound `listener` with `cert` until `shutdown` completes.
/// `client` lists Clusters and reads ClusterStackReleases for the rules that need them.
pub async fn serve_with(
    listener: TcpListener,
    cert: Certificate,
    client: Client,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), WebhookError> {
    serve_https(listener, &cert, "webhook server", shutdown, move |req| {
        handle(req, client.clone())
    })
    .await
}

/// Serves `handler` over HTTPS (HTTP/1.1) on `listener` with `cert` until `shutdown`
/// completes, then lets requests in flight finish (up to 10 s). `what` names the server in
/// logs. Shared by the admission webhooks and the Runtime SDK hooks.
pub(crate) async fn serve_https<H, F>(
    listener: TcpListener,
    cert: &Certificate,
    what: &'static str,
    shutdown: impl Future<Output = ()> + Send + 'static,
    handler: H,
) -> Result<(), WebhookError>
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Result<Response<Body>, Infallible>> + Send + 'static,
{
    let acceptor = TlsAcceptor::from(Arc::new(tls_config(cert)?));
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
                    // Out of file descriptors and the like: pass, rather than spin.
                    tracing::warn!(error = %e, "{what}: accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let acceptor = acceptor.clone();
        let handler = handler.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => {
                    tracing::debug!(%peer, error = %e, "{what}: TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%peer, "{what}: TLS handshake timed out");
                    return;
                }
            };
            let service = hyper::service::service_fn(handler);
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HANDSHAKE_TIMEOUT)
                .serve_connection(TokioIo::new(tls), service);
            if let Err(e) = watcher.watch(conn).await {
                tracing::debug!(%peer, error = %e, "{what}: connection ended with an error");
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

fn tls_config(cert: &Certificate) -> Result<rustls::ServerConfig, WebhookError> {
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

pub(crate) type Body = Full<Bytes>;

pub(crate) fn plain(status: StatusCode, text: String) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(text)));
    *response.status_mut() = status;
    response
}

async fn handle(req: Request<Incoming>, client: Client) -> Result<Response<Body>, Infallible> {
    let Some(hook) = Hook::of_path(req.uri().path()) else {
        let paths: Vec<&str> = Hook::ALL.iter().map(|h| h.path()).collect();
        let text = format!(
            "no webhook at {}; webhooks: {}\n",
            req.uri().path(),
            paths.join(" ")
        );
        return Ok(plain(StatusCode::NOT_FOUND, text));
    };
    if req.method() != Method::POST {
        return Ok(plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "webhooks answer POSTed AdmissionReviews\n".into(),
        ));
    }
    let body = match read_body(req, MAX_BODY).await {
        Ok(body) => body,
        Err(response) => return Ok(response),
    };
    let review = admission::review(hook, &body, &client).await;
    Ok(match serde_json::to_vec(&review) {
        Ok(json) => json_response(json),
        Err(e) => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot write the AdmissionReview: {e}\n"),
        ),
    })
}

/// A 200 response carrying `json`.
pub(crate) fn json_response(json: Vec<u8>) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(json)));
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

/// The request's body, at most `limit` bytes; else the response that says why not.
pub(crate) async fn read_body(req: Request<Incoming>, limit: usize) -> Result<Bytes, Response<Body>> {
    match Limited::new(req.into_body(), limit).collect().await {
        Ok(body) => Ok(body.to_bytes()),
        Err(e) => Err(plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("cannot read the request body (at most {limit} bytes): {e}\n"),
        )),
    }
}
