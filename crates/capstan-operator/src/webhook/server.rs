//! The HTTPS endpoint the API server calls: one POST path per webhook ([`Hook::path`]), each
//! answered by [`admission::review`]; served by the operator's HTTP stack
//! ([`crate::serve`]).

use std::future::Future;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use axum::routing::post;
use kube::Client;
use tokio::net::TcpListener;

use super::admission::{self, Hook};
use crate::serve::cert::{Certificate, generate};
use crate::serve::{self, ServeError, Transport, json, plain, read_body};
use crate::settings::WebhookSettings;

/// Largest review accepted: an object and its old version, each at most etcd's 1.5 MiB, plus
/// the review around them.
const MAX_BODY: usize = 8 << 20;

/// Why the webhook server could not start (the operator's servers share their errors).
pub type WebhookError = ServeError;

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
    let listener = serve::bind(settings.addr).await?;
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
    serve::serve(
        listener,
        &Transport::Https(cert),
        "webhook server",
        router(client),
        shutdown,
    )
    .await
}

/// A POST route per webhook; anything else is named as not a webhook.
fn router(client: Client) -> Router {
    let mut router = Router::new();
    for hook in Hook::ALL {
        let review = post(move |State(client): State<Client>, body: Body| handle(hook, body, client))
            .fallback(|| async {
                plain(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "webhooks answer POSTed AdmissionReviews\n".into(),
                )
            });
        router = router.route(hook.path(), review);
    }
    router
        .fallback(|uri: Uri| async move {
            let paths: Vec<&str> = Hook::ALL.iter().map(|h| h.path()).collect();
            let text = format!("no webhook at {}; webhooks: {}\n", uri.path(), paths.join(" "));
            plain(StatusCode::NOT_FOUND, text)
        })
        .with_state(client)
}

async fn handle(hook: Hook, body: Body, client: Client) -> Response {
    let body = match read_body(body, MAX_BODY).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    json(&admission::review(hook, &body, &client).await)
}
