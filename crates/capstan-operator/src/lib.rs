//! The Kubernetes operator: the `clusterstack.x-k8s.io` API ([`api`]), the controllers that
//! reconcile it ([`controller`]), the admission webhooks ([`webhook`]) and the process around
//! them ([`runtime`]: leader election, health, metrics, graceful shutdown).

pub mod addon;
pub mod api;
pub mod capi_api;
pub mod clusters;
pub mod compiled;
pub mod context;
pub mod controller;
pub mod controllers;
pub mod drift;
pub mod events;
pub mod fan_out;
pub mod hooks;
pub mod http;
pub mod jitter;
pub mod kube_error;
pub mod leader;
pub mod lookup;
pub mod management;
pub mod metrics;
pub mod preflight;
pub mod rollout;
pub mod runtime;
pub mod serve;
pub mod settings;
pub mod shard;
pub mod sources;
pub mod store;
pub mod watch;
pub mod webhook;
pub mod wiring;

pub use settings::Settings;
