//! Admission webhooks of the operator. [`validate`] holds the rules as pure functions; the
//! HTTPS server that answers the API server with them comes later.

pub mod validate;
pub mod versions;
