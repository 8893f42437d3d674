//! Admission webhooks of the operator: [`validate`] holds the rules as pure functions,
//! [`admission`] answers one AdmissionReview with them (fetching the Clusters or the release a
//! rule needs), [`server`] the HTTPS endpoint the API server calls (its certificate:
//! [`crate::serve::cert`]).

pub mod admission;
pub mod server;
pub mod validate;
pub mod validate_rollout;
pub mod versions;

pub use crate::serve::cert::{Certificate, generate};
