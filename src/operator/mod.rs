//! The Kubernetes operator: the `clusterstack.x-k8s.io` API ([`api`]) and the admission rules
//! of its webhooks ([`webhook`]). Controllers, the webhook server, metrics and leader election
//! follow (issue 13).

pub mod api;
pub mod webhook;
