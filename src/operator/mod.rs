//! The Kubernetes operator: the `clusterstack.x-k8s.io` API ([`api`]), the controllers that
//! reconcile it ([`controller`]), the admission webhooks ([`webhook`]) and the process around
//! them ([`runtime`]: leader election, health, metrics, graceful shutdown).

pub mod api;
pub mod controller;
pub mod hooks;
pub mod http;
pub mod leader;
pub mod metrics;
pub mod settings;
pub mod webhook;

pub use settings::Settings;
pub mod clusters;
pub mod context;
pub mod runtime;
pub mod sources;
pub mod store;
