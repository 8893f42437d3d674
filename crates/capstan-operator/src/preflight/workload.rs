//! What the workload API server says of itself: its record of deprecated requests on
//! `/metrics` (the operator's identity there needs `get` on the non-resource URL `/metrics`;
//! Cluster API's admin kubeconfig has it).

use std::time::Duration;

use kube::Client;

use crate::rollout::preflight::{DeprecatedRequest, requested_deprecated_apis};

/// The longest a read of `/metrics` may take (the text is a few MiB on a busy server).
const METRICS_TIMEOUT: Duration = Duration::from_secs(20);

/// The deprecated APIs the API server behind `client` saw requested since it started.
pub async fn requested_apis(client: &Client, server: &str) -> Result<Vec<DeprecatedRequest>, String> {
    let request = http::Request::get("/metrics")
        .body(Vec::new())
        .map_err(|e| format!("{server}/metrics: {e}"))?;
    let text = tokio::time::timeout(METRICS_TIMEOUT, client.request_text(request))
        .await
        .map_err(|_| format!("{server}/metrics: no answer within {METRICS_TIMEOUT:?}"))?
        .map_err(|e| format!("{server}/metrics: {e}"))?;
    Ok(requested_deprecated_apis(&text))
}
