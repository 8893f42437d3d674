//! The operator's plain-HTTP endpoints: `/healthz` and `/readyz` for the kubelet's probes,
//! `/metrics` for Prometheus, served by the operator's HTTP stack ([`super::serve`]). Each
//! server stops when its `shutdown` future resolves.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::net::TcpListener;

use super::metrics::{self, Metrics};
use super::serve::{self, ServeError, Transport};

/// What the probes answer. Live from the start; ready once the runtime says so.
#[derive(Debug)]
pub struct Health {
    /// `None`: ready; else why not.
    not_ready: RwLock<Option<String>>,
    /// `None`: live; else why not.
    not_live: RwLock<Option<String>>,
}

impl Health {
    pub fn new() -> Arc<Health> {
        Arc::new(Health {
            not_ready: RwLock::new(Some("starting".into())),
            not_live: RwLock::new(None),
        })
    }

    pub fn set_ready(&self, ready: bool) {
        set(&self.not_ready, (!ready).then(|| "not ready".to_string()));
    }

    /// Not ready, and why (shown in the probe's answer).
    pub fn set_not_ready(&self, reason: impl Into<String>) {
        set(&self.not_ready, Some(reason.into()));
    }

    #[cfg(test)]
    pub fn set_live(&self, live: bool) {
        set(&self.not_live, (!live).then(|| "not live".to_string()));
    }
}

// A poisoned lock only means a writer panicked mid-assignment of an Option: the value is whole.
fn set(slot: &RwLock<Option<String>>, value: Option<String>) {
    *slot.write().unwrap_or_else(|e| e.into_inner()) = value;
}

fn get_reason(slot: &RwLock<Option<String>>) -> Option<String> {
    slot.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Binds `addr` (port 0: any free port; the listener tells which).
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, ServeError> {
    serve::bind(addr).await
}

/// Serves `/healthz` (liveness) and `/readyz` (readiness) on a bound listener: 200 `ok`, or
/// 503 with the reason.
pub async fn serve_health_on(
    listener: TcpListener,
    health: Arc<Health>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let app = Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(health);
    serve::serve(listener, &Transport::Http, "health server", app, shutdown).await
}

/// Serves `/metrics` on a bound listener in the OpenMetrics text format.
pub async fn serve_metrics_on(
    listener: TcpListener,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let app = Router::new()
        .route("/metrics", get(metrics_text))
        .with_state(metrics);
    serve::serve(listener, &Transport::Http, "metrics server", app, shutdown).await
}

async fn healthz(State(health): State<Arc<Health>>) -> Response {
    probe(get_reason(&health.not_live))
}

async fn readyz(State(health): State<Arc<Health>>) -> Response {
    // A process that is not live is not ready either.
    probe(get_reason(&health.not_live).or_else(|| get_reason(&health.not_ready)))
}

fn probe(problem: Option<String>) -> Response {
    match problem {
        None => (StatusCode::OK, "ok").into_response(),
        Some(reason) => (StatusCode::SERVICE_UNAVAILABLE, reason).into_response(),
    }
}

async fn metrics_text(State(metrics): State<Arc<Metrics>>) -> Response {
    ([(header::CONTENT_TYPE, metrics::CONTENT_TYPE)], metrics.encode()).into_response()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    async fn get_text(url: &str) -> (u16, String, String) {
        let resp = reqwest::get(url).await.expect("request");
        let status = resp.status().as_u16();
        let ctype = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        (status, ctype, resp.text().await.expect("body"))
    }

    #[tokio::test]
    async fn probes_follow_the_flags_and_stop_on_shutdown() {
        let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let health = Health::new();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve_health_on(listener, health.clone(), async {
            let _ = stopped.await;
        }));

        assert_eq!(get_text(&format!("{base}/healthz")).await.0, 200);
        let (status, _, body) = get_text(&format!("{base}/readyz")).await;
        assert_eq!((status, body.as_str()), (503, "starting"));

        health.set_ready(true);
        let (status, _, body) = get_text(&format!("{base}/readyz")).await;
        assert_eq!((status, body.as_str()), (200, "ok"));

        health.set_not_ready("leadership lost");
        let (status, _, body) = get_text(&format!("{base}/readyz")).await;
        assert_eq!((status, body.as_str()), (503, "leadership lost"));

        health.set_ready(true);
        health.set_live(false);
        let (status, _, body) = get_text(&format!("{base}/healthz")).await;
        assert_eq!((status, body.as_str()), (503, "not live"));
        assert_eq!(get_text(&format!("{base}/readyz")).await.0, 503);
        assert_eq!(get_text(&format!("{base}/nothing")).await.0, 404);

        stop.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(5), server)
            .await
            .expect("server stops on shutdown")
            .unwrap()
            .unwrap();
    }

    #[tokio::test]
    async fn metrics_are_served_as_openmetrics_text() {
        let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let url = format!("http://{}/metrics", listener.local_addr().unwrap());
        let metrics = Arc::new(Metrics::new());
        metrics.drift_corrected("clusterstackrelease", 2);
        tokio::spawn(serve_metrics_on(
            listener,
            metrics.clone(),
            std::future::pending(),
        ));

        let (status, ctype, body) = get_text(&url).await;
        assert_eq!(status, 200);
        assert_eq!(ctype, metrics::CONTENT_TYPE);
        assert!(
            body.contains("capstan_drift_corrections_total{controller=\"clusterstackrelease\"} 2\n"),
            "{body}"
        );
        assert!(body.ends_with("# EOF\n"), "{body}");
        // Served live, not a snapshot.
        metrics.github_response(200, Some(41));
        assert!(
            get_text(&url)
                .await
                .2
                .contains("capstan_github_rate_limit_remaining 41\n")
        );
    }
}
