//! The Kubernetes operator: the `clusterstack.x-k8s.io` API, the controllers that reconcile
//! it, the admission webhooks and the process around them (leader election, health, metrics,
//! graceful shutdown).
//!
//! The crate's front door is this file (docs/architecture.md, "The operator's front door"):
//! - [`api`]: the CRD types, public as the API is;
//! - the process: [`run`] with its [`Settings`] ([`settings`]), the [`ControllerSet`] to
//!   run, the [`Metrics`] it serves and [`shutdown_on`];
//! - [`cli`]: what the other `capstan` commands read of the operator's lookups and decisions;
//! - `testing` (feature `testing`, turned on by the workspace's dev-dependencies only): the
//!   internals tests and examples drive directly.
//!
//! Every other module is `pub(crate)`.

pub mod api;
pub mod cli;
pub mod settings;
#[cfg(feature = "testing")]
pub mod testing;

pub(crate) mod addon;
pub(crate) mod capi_api;
pub(crate) mod clusters;
pub(crate) mod compiled;
pub(crate) mod context;
pub(crate) mod controller;
pub(crate) mod controllers;
pub(crate) mod drift;
pub(crate) mod events;
pub(crate) mod fan_out;
pub(crate) mod hooks;
pub(crate) mod http;
pub(crate) mod jitter;
pub(crate) mod kube_error;
pub(crate) mod leader;
pub(crate) mod lookup;
pub(crate) mod management;
pub(crate) mod metrics;
pub(crate) mod preflight;
pub(crate) mod rollout;
pub(crate) mod runtime;
pub(crate) mod serve;
pub(crate) mod shard;
pub(crate) mod sources;
pub(crate) mod store;
pub(crate) mod watch;
pub(crate) mod webhook;
pub(crate) mod wiring;

pub use controllers::{ControllerKind, ControllerListError, ControllerSet};
pub use metrics::Metrics;
pub use runtime::{RunError, Shutdown, run, shutdown_on};
pub use settings::Settings;
