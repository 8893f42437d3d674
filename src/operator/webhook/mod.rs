//! Admission webhooks of the operator: [`validate`] holds the rules as pure functions,
//! [`admission`] answers one AdmissionReview with them (fetching the Clusters or the release a
//! rule needs), [`server`] is the HTTPS server the API server calls, [`cert`] its certificate.

pub mod admission;
pub mod cert;
pub mod server;
pub mod validate;
pub mod versions;

pub use cert::{CertError, Certificate, GeneratedCert, generate};
pub use server::{WebhookError, serve, serve_with};
