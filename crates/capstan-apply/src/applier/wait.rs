//! Readiness waits of an apply: CRDs until Established before their custom resources, and
//! (`--wait`) every synced object until ready; each polls the object until the deadline.

use std::time::{Duration, Instant};

use futures::StreamExt;

use crate::discovery::{self, Discovery};
use crate::health::{self, Readiness};
use crate::order;
use crate::ssa;
use crate::status::{Action, ObjectKey, ObjectResult, SyncStatus};

/// Waits until each synced CRD of `results` is Established; a CRD that is not by the
/// deadline fails.
pub async fn established(discovery: &Discovery, results: &mut [ObjectResult], limit: Duration) {
    let deadline = Instant::now() + limit;
    for r in results.iter_mut() {
        if r.status != SyncStatus::Synced || !order::is_crd(&r.key.group, &r.key.kind) {
            continue;
        }
        if let Err(reason) = one(discovery, &r.key, deadline).await {
            r.status = SyncStatus::Failed;
            r.message = format!("not Established within {}s: {reason}", limit.as_secs());
        }
    }
}

/// `--wait`: synced objects that are not ready within `limit` fail (`concurrency` polled at
/// once).
pub async fn ready(discovery: &Discovery, results: &mut [ObjectResult], concurrency: usize, limit: Duration) {
    let deadline = Instant::now() + limit;
    let checks = results
        .iter()
        .enumerate()
        .filter(|(_, r)| r.status == SyncStatus::Synced && r.action != Action::None)
        .map(|(i, r)| {
            let key = r.key.clone();
            async move { (i, one(discovery, &key, deadline).await) }
        })
        .collect::<Vec<_>>();
    let outcomes: Vec<(usize, Result<(), String>)> = futures::stream::iter(checks)
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    for (i, outcome) in outcomes {
        if let Err(reason) = outcome {
            results[i].status = SyncStatus::Failed;
            results[i].message = format!("not ready within {}s: {reason}", limit.as_secs());
        }
    }
}

/// Polls one object until it is ready or the deadline passes.
async fn one(discovery: &Discovery, key: &ObjectKey, deadline: Instant) -> Result<(), String> {
    let info = discovery
        .resolve(&key.group, &key.version, &key.kind)
        .await
        .map_err(|e| e.to_string())?;
    let api = discovery::api_for(discovery.client(), &info.resource, key.namespace.as_deref());
    loop {
        let last = match api.get(&key.name).await {
            Ok(obj) => {
                let v = serde_json::to_value(&obj).unwrap_or_default();
                match health::readiness(&key.group, &key.kind, &v) {
                    Readiness::Ready => return Ok(()),
                    Readiness::Failed(why) => return Err(why),
                    Readiness::Pending(why) => why,
                }
            }
            Err(e) => ssa::api_message(&e),
        };
        if Instant::now() >= deadline {
            return Err(last);
        }
        tokio::time::sleep(health::POLL).await;
    }
}
