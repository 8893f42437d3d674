//! Leader election on a `coordination.k8s.io/v1` Lease (through `kube-lease-manager`): of
//! several operator replicas only the leader reconciles. [`acquire`] waits until this process
//! holds the Lease; a task renews it every third of its duration until [`Leadership::release`]
//! gives it up or the `Leadership` is dropped (then the Lease just expires, like a crash).

use std::time::{Duration, Instant};

use kube_lease_manager::{LeaseCreateMode, LeaseManager, LeaseManagerError, LeaseParams};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use super::settings::LeaderElection;

/// Shortest lease the Lease API can express usefully: its duration is whole seconds, and a
/// renewal must fit inside it.
const MIN_LEASE_SECONDS: u64 = 2;

/// Pause after a failed Lease request before the next one.
const RETRY_PAUSE: Duration = Duration::from_secs(1);

/// Why leader election could not run.
#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    #[error("lease {namespace}/{name}: {source}")]
    Lease {
        namespace: String,
        name: String,
        #[source]
        source: LeaseManagerError,
    },
    #[error("lease {namespace}/{name}: the election task stopped before this process led")]
    Stopped { namespace: String, name: String },
}

/// This process leads until [`Leadership::lost`] resolves.
#[derive(Debug)]
pub struct Leadership {
    leading: watch::Receiver<bool>,
    release: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

/// Waits until this process holds the Lease `settings` name (created when missing), then keeps
/// renewing it in the background.
pub async fn acquire(client: kube::Client, settings: &LeaderElection) -> Result<Leadership, LeaderError> {
    let seconds = settings.lease_duration.as_secs().max(MIN_LEASE_SECONDS);
    // The crate renews `grace` seconds before expiry: renew after a third of the lease.
    let grace = seconds - (seconds / 3).max(1);
    let params = LeaseParams::new(settings.identity.clone(), seconds, grace)
        .with_field_manager(format!("capstan-leader-{}", settings.identity));
    let lease_error = |source| LeaderError::Lease {
        namespace: settings.namespace.clone(),
        name: settings.lease_name.clone(),
        source,
    };
    let manager = LeaseManager::new(
        client,
        &settings.lease_name,
        &settings.namespace,
        params,
        LeaseCreateMode::AutoCreate,
    )
    .await
    .map_err(lease_error)?;

    let (report, leading) = watch::channel(false);
    let (release, released) = oneshot::channel();
    // Renewals that keep failing this long mean the Lease may have passed to another replica.
    let give_up_after = Duration::from_secs(seconds) * 2 / 3;
    let lease = format!("{}/{}", settings.namespace, settings.lease_name);
    let task = tokio::spawn(drive(manager, report, released, give_up_after, lease));

    // Made first so that a caller that stops waiting also stops the task (on drop).
    let mut leadership = Leadership {
        leading,
        release: Some(release),
        task: Some(task),
    };
    if leadership.leading.wait_for(|leads| *leads).await.is_err() {
        return Err(LeaderError::Stopped {
            namespace: settings.namespace.clone(),
            name: settings.lease_name.clone(),
        });
    }
    Ok(leadership)
}

/// Keeps the manager's state machine running (it renews while it holds the Lease) and reports
/// each change; on `release`, gives the Lease up.
async fn drive(
    manager: LeaseManager,
    report: watch::Sender<bool>,
    mut release: oneshot::Receiver<()>,
    give_up_after: Duration,
    lease: String,
) {
    let mut failing_since: Option<Instant> = None;
    loop {
        tokio::select! {
            biased;
            asked = &mut release => {
                // A dropped `Leadership` (sender gone) stops renewing without releasing.
                if asked.is_err() {
                    return;
                }
                if let Err(err) = manager.release().await {
                    tracing::warn!(%lease, "releasing the lease: {err}");
                }
                let _ = report.send(false);
                return;
            }
            changed = manager.changed() => match changed {
                Ok(leads) => {
                    failing_since = None;
                    tracing::info!(%lease, leads, "leadership changed");
                    let _ = report.send(leads);
                }
                Err(err) => {
                    let since = *failing_since.get_or_insert_with(Instant::now);
                    tracing::warn!(%lease, "lease request failed: {err}");
                    if *report.borrow() && since.elapsed() >= give_up_after {
                        // Not renewed for most of the lease: another replica may hold it by now.
                        let _ = report.send(false);
                    }
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
            },
        }
    }
}

impl Leadership {
    /// Resolves when this process no longer leads (another replica took the Lease, or
    /// renewals kept failing).
    pub async fn lost(&mut self) {
        // An error means the task ended: nothing renews the Lease any more.
        let _ = self.leading.wait_for(|leads| !*leads).await;
    }

    /// Whether this process still leads.
    #[cfg(any(test, feature = "testing"))]
    pub fn is_leading(&self) -> bool {
        *self.leading.borrow()
    }

    /// Gives the Lease up so another replica leads at once (graceful shutdown).
    pub async fn release(mut self) {
        if let Some(release) = self.release.take() {
            let _ = release.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Leadership {
    /// Stops renewing without giving the Lease up: others take over when it expires.
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}
