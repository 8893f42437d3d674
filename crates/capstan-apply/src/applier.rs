//! [`Applier`]: runs an apply (waves of concurrent server-side applies, CRD establishment,
//! inventory, pruning, readiness) or a diff against one cluster. Each apply is a
//! [`run::Run`] of its own; the live listing, pruning and readiness waits are [`live`],
//! [`prune`] and [`wait`].

mod live;
mod options;
mod prune;
mod run;
mod target;
mod wait;

use std::time::Duration;

use futures::StreamExt;
use kube::Client;

use super::diff::{self, ObjectDiff};
use super::discovery::Discovery;
use super::inventory::InventoryRef;
use super::object::DesiredObject;
use super::ssa::{self, Ownership};
pub use options::{ApplyOptions, ApplyReport, Error, Progress, PruneNotice};
use target::Target;

/// Applies and diffs objects on one cluster; keeps a discovery cache across calls.
pub struct Applier {
    client: Client,
    server: String,
    discovery: Discovery,
    progress: Option<Progress>,
    /// Whether each apply and diff first asks for the server's version.
    check_server: bool,
}

impl Applier {
    /// An applier using `client`; `server` names the cluster in errors (its URL).
    pub fn new(client: Client, server: impl Into<String>) -> Applier {
        Applier {
            discovery: Discovery::new(client.clone()),
            client,
            server: server.into(),
            progress: None,
            check_server: true,
        }
    }

    /// An applier whose caller checks the server's reachability itself (the operator's
    /// workload-cluster cache): applies and diffs do not ask for `/version` first.
    pub fn without_server_check(mut self) -> Applier {
        self.check_server = false;
        self
    }

    pub fn with_progress(mut self, progress: Progress) -> Applier {
        self.progress = Some(progress);
        self
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The discovery cache of this applier's cluster, for other readers of that cluster.
    pub fn discovery(&self) -> &Discovery {
        &self.discovery
    }

    /// Asks the server for its version: an unreachable server or refused credentials become
    /// an error naming the server.
    pub async fn check_server(&self) -> Result<(), Error> {
        let answer = tokio::time::timeout(Duration::from_secs(15), self.client.apiserver_version()).await;
        match answer {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(kube::Error::Api(s))) if s.code == 401 || s.code == 403 => Err(Error::Unauthorized {
                server: self.server.clone(),
                message: format!("{} {}: {}", s.code, s.reason, s.message),
            }),
            Ok(Err(e)) => Err(Error::Unreachable {
                server: self.server.clone(),
                message: ssa::api_message(&e),
            }),
            Err(_) => Err(Error::Unreachable {
                server: self.server.clone(),
                message: "no answer within 15s".into(),
            }),
        }
    }

    /// Applies `objects`: see the module documentation of [`crate`].
    pub async fn apply(&self, objects: &[DesiredObject], opts: &ApplyOptions) -> Result<ApplyReport, Error> {
        if opts.prune && opts.inventory.is_none() {
            return Err(Error::PruneWithoutInventory);
        }
        if self.check_server {
            self.check_server().await?;
        }
        let target = Target {
            client: &self.client,
            discovery: &self.discovery,
            progress: self.progress.as_ref(),
        };
        Ok(run::Run::start(target, objects, opts).await?.run().await)
    }

    /// The drift of each object (see [`diff`]), in input order.
    pub async fn diff(
        &self,
        objects: &[DesiredObject],
        opts: &ApplyOptions,
    ) -> Result<Vec<ObjectDiff>, Error> {
        if self.check_server {
            self.check_server().await?;
        }
        let owner = Ownership {
            inventory: opts.inventory.as_ref().map(InventoryRef::id),
        };
        let futures: Vec<_> = objects
            .iter()
            .map(|o| {
                let owner = owner.clone();
                async move {
                    match self.discovery.resolve(&o.group, &o.version, &o.kind).await {
                        Ok(info) => {
                            let p = ssa::prepare(o, &info, &opts.namespace, &owner);
                            run::diff_prepared(&self.client, &p, opts).await.0
                        }
                        Err(e) => {
                            let key = o.key_in(o.namespace.as_deref().or(Some(&opts.namespace)));
                            ObjectDiff {
                                diff: diff::unified(&key, None, &o.data),
                                key,
                                live: false,
                                message: e.to_string(),
                            }
                        }
                    }
                }
            })
            .collect();
        Ok(futures::stream::iter(futures)
            .buffered(opts.concurrency.max(1))
            .collect()
            .await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The operator spawns applies on its runtime: their futures must be `Send`.
    #[test]
    fn apply_and_diff_futures_are_send() {
        fn send<T: Send>(_: &T) {}
        fn check(a: &Applier, objects: &[DesiredObject], opts: &ApplyOptions) {
            send(&a.apply(objects, opts));
            send(&a.diff(objects, opts));
        }
        let _ = check;
    }
}
