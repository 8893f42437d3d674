//! How long one registry request may take: to connect, until the response head arrives, and
//! between two pieces of a body. (A shared timeouts type for every source is on its way; this
//! one is the registry client's until then.)

use std::time::Duration;

/// Bounds of one request. Every request has all three: none is ever waited for unbounded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// TCP connect and TLS handshake.
    pub connect: Duration,
    /// From sending the request until the response's status and headers have arrived.
    pub response: Duration,
    /// Longest silence while a body is read (a stalled download fails, a slow one does not).
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(15),
            response: Duration::from_secs(60),
            idle: Duration::from_secs(60),
        }
    }
}
