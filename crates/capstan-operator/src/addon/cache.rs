//! The workload-cluster cache: one connected [`Workload`] per Cluster, so a ClusterAddon pass
//! that finds nothing changed reuses the client (its pooled TLS connection), the server
//! version and the applier's discovery cache instead of a new handshake, `/readyz`,
//! `/version` and discovery every pass.
//!
//! An entry is keyed by the kubeconfig Secret's `resourceVersion`: a pass still reads the
//! Secret from the management cluster, and a new version (rotated credentials, a moved
//! endpoint) connects afresh. The Secret watch drops an entry as soon as its Secret changes,
//! the ClusterAddon's cleanup when its Cluster goes. A failed pass marks the entry suspect:
//! the next pass probes `/readyz` on the kept client before using it (and drops the entry,
//! its drift watches included, when that fails); so does a failure of one of its drift
//! watches, which wakes the ClusterAddons there at once. Past its capacity (`--workload-clusters`,
//! default [`CAPACITY`]) the least recently used entry is dropped, with a warning: every
//! Cluster's pass comes round each drift interval, so a fleet larger than the cache
//! reconnects — handshake, discovery, drift watches — on nearly every pass.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::workload::{self, Gate, Workload};

/// Workload clusters kept by default (about 2.4 GiB at the fleet benchmark's ~250 KiB per
/// Cluster; a replica for more Clusters sets `--workload-clusters` or shards). It was 2,048:
/// the 3,000-Cluster benchmark stalled at the 2,100th, every pass past it evicting another
/// Cluster's connection and watches.
pub const CAPACITY: usize = 10_000;

/// What the cache knows of a cluster's reachability.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// The last pass through this entry succeeded (or it was just connected).
    Healthy,
    /// A pass failed since: probe `/readyz` before trusting the entry again.
    Suspect,
}

/// How a pass gets its workload cluster, given the cached entry (its Secret version and
/// health) and the Secret's version now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// The cached entry as it is: no request to the workload cluster.
    Reuse,
    /// The cached entry after `/readyz` answers.
    Probe,
    /// A new client from the Secret.
    Connect,
}

/// The decision, pure: an entry of another Secret version (or a Secret without a version)
/// is never used.
pub fn decide(cached: Option<(&str, Health)>, secret_version: &str) -> Use {
    match cached {
        Some((version, health)) if !secret_version.is_empty() && version == secret_version => match health {
            Health::Healthy => Use::Reuse,
            Health::Suspect => Use::Probe,
        },
        _ => Use::Connect,
    }
}

struct Entry {
    secret_version: String,
    workload: Arc<Workload>,
    health: Health,
    /// Tick of the last use, for the least-recently-used eviction.
    used: u64,
}

/// `(namespace, cluster name)`.
type Key = (String, String);

/// The cache; shared by all reconciles through the operator's context.
pub struct WorkloadClusters {
    entries: Mutex<(u64, HashMap<Key, Entry>)>,
    capacity: usize,
    /// Whether an eviction was logged as a warning already (the rest go to debug).
    evicted: std::sync::atomic::AtomicBool,
}

impl WorkloadClusters {
    pub fn new(capacity: usize) -> WorkloadClusters {
        WorkloadClusters {
            entries: Mutex::new((0, HashMap::new())),
            capacity: capacity.max(1),
            evicted: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The workload cluster of `cluster` in `namespace`: cached when its kubeconfig Secret
    /// did not change, else connected (and `/readyz` checked) and kept.
    pub async fn get(
        &self,
        management: &crate::management::Management,
        namespace: &str,
        cluster: &str,
    ) -> Result<Arc<Workload>, Gate> {
        let key = (namespace.to_string(), cluster.to_string());
        let secret = match workload::read_stored_secret(management, namespace, cluster).await {
            Ok(secret) => secret,
            Err(gate) => {
                if matches!(gate, Gate::NoKubeconfig { .. }) {
                    self.remove(&key);
                }
                return Err(gate);
            }
        };
        let secret_version = secret.metadata.resource_version.clone().unwrap_or_default();
        let cached = self.touch(&key);
        // A drift watch there failed since the last pass: probe before use, too.
        let state = cached.as_ref().map(|(v, h, found)| {
            let health = if found.drift.take_failure() {
                Health::Suspect
            } else {
                *h
            };
            (v.as_str(), health)
        });
        match (decide(state, &secret_version), cached) {
            (Use::Reuse, Some((_, _, found))) => Ok(found),
            (Use::Probe, Some((_, _, found))) => {
                if let Err(gate) = workload::ready(&found.client, &found.server).await {
                    // Unreachable: its watches stop with the entry; the next pass reconnects.
                    self.remove(&key);
                    return Err(gate);
                }
                self.set_health(&key, Health::Healthy);
                Ok(found)
            }
            _ => {
                let connected = Arc::new(workload::connect(&secret).await?);
                self.insert(key, secret_version, connected.clone());
                Ok(connected)
            }
        }
    }

    /// A pass through this cluster failed: probe it before the next use.
    pub fn suspect(&self, namespace: &str, cluster: &str) {
        self.set_health(&(namespace.to_string(), cluster.to_string()), Health::Suspect);
    }

    /// Drops the entry of `cluster` (deleted, or its addons cleaned up).
    pub fn forget(&self, namespace: &str, cluster: &str) {
        self.remove(&(namespace.to_string(), cluster.to_string()));
    }

    /// The Secret watch saw `cluster`'s kubeconfig Secret at `secret_version`: an entry of
    /// another version is dropped now (with its connections), not at the next pass.
    pub fn secret_seen(&self, namespace: &str, cluster: &str, secret_version: &str) {
        let key = (namespace.to_string(), cluster.to_string());
        let mut guard = self.lock();
        if guard
            .1
            .get(&key)
            .is_some_and(|e| e.secret_version != secret_version)
        {
            guard.1.remove(&key);
        }
    }

    /// How many clusters are kept.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.lock().1.len()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entries by health and their drift watches, for the metrics.
    pub fn census(&self) -> crate::metrics::Census {
        let guard = self.lock();
        let mut census = crate::metrics::Census::default();
        for entry in guard.1.values() {
            match entry.health {
                Health::Healthy => census.healthy += 1,
                Health::Suspect => census.suspect += 1,
            }
            census.workload_watches += entry.workload.drift.len();
        }
        census
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, HashMap<Key, Entry>)> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn touch(&self, key: &Key) -> Option<(String, Health, Arc<Workload>)> {
        let mut guard = self.lock();
        guard.0 += 1;
        let tick = guard.0;
        let entry = guard.1.get_mut(key)?;
        entry.used = tick;
        Some((entry.secret_version.clone(), entry.health, entry.workload.clone()))
    }

    fn set_health(&self, key: &Key, health: Health) {
        if let Some(entry) = self.lock().1.get_mut(key) {
            entry.health = health;
        }
    }

    fn remove(&self, key: &Key) {
        self.lock().1.remove(key);
    }

    fn insert(&self, key: Key, secret_version: String, workload: Arc<Workload>) {
        let mut guard = self.lock();
        guard.0 += 1;
        let used = guard.0;
        let entries = &mut guard.1;
        entries.insert(
            key,
            Entry {
                secret_version,
                workload,
                health: Health::Healthy,
                used,
            },
        );
        while entries.len() > self.capacity {
            let Some(oldest) = entries.iter().min_by_key(|(_, e)| e.used).map(|(k, _)| k.clone()) else {
                break;
            };
            entries.remove(&oldest);
            if self.evicted.swap(true, std::sync::atomic::Ordering::Relaxed) {
                tracing::debug!(cluster = %oldest.1, namespace = %oldest.0, "workload cluster cache full: least recently used evicted");
            } else {
                tracing::warn!(
                    capacity = self.capacity,
                    cluster = %oldest.1,
                    namespace = %oldest.0,
                    "workload cluster cache full: the least recently used cluster's connection and drift watches are dropped and made again on its next pass; raise --workload-clusters above this replica's Clusters, or shard"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Health, Use, decide};

    #[test]
    fn an_entry_is_used_only_for_its_secret_version() {
        let table = [
            (None, "7", Use::Connect),
            (Some(("7", Health::Healthy)), "7", Use::Reuse),
            (Some(("7", Health::Suspect)), "7", Use::Probe),
            (Some(("7", Health::Healthy)), "8", Use::Connect),
            (Some(("7", Health::Suspect)), "8", Use::Connect),
            // A Secret without a version cannot be told apart from a changed one.
            (Some(("", Health::Healthy)), "", Use::Connect),
        ];
        for (cached, version, want) in table {
            assert_eq!(decide(cached, version), want, "{cached:?} at {version}");
        }
    }
}
