//! How long a network call of the source layer may wait: one place for the connect timeout,
//! the response/idle timeout and how often a timed-out idempotent request is tried again.
//! Every client that fetches releases (GitHub API and assets, git over http(s), OCI
//! registries, Helm repositories) takes a [`NetworkTimeouts`], so one flag sets them all.

use std::time::Duration;

/// Connect and response/idle timeouts of one client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NetworkTimeouts {
    /// Longest wait for a TCP (and TLS) connection to be established.
    pub connect: Duration,
    /// Longest wait for the next bytes of a response: for its head after the request was sent,
    /// then between two reads of its body. A server that accepts and never answers fails
    /// after this long; a slow but steady download never does.
    pub response: Duration,
    /// How many more times an idempotent request (a GET) that timed out is sent before the
    /// timeout is reported. Small: each try costs up to `connect + response`.
    pub retries: u32,
}

impl Default for NetworkTimeouts {
    fn default() -> Self {
        NetworkTimeouts {
            connect: Duration::from_secs(15),
            response: Duration::from_secs(60),
            retries: 1,
        }
    }
}

/// Which timeout expired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeoutKind {
    Connect,
    Response,
}

impl NetworkTimeouts {
    /// The defaults with the given connect and response timeouts (`None` keeps a default).
    pub fn with(connect: Option<Duration>, response: Option<Duration>) -> NetworkTimeouts {
        let d = NetworkTimeouts::default();
        NetworkTimeouts {
            connect: connect.unwrap_or(d.connect),
            response: response.unwrap_or(d.response),
            retries: d.retries,
        }
    }

    /// A reqwest client builder with both timeouts set (`read_timeout` is an idle timeout:
    /// it restarts with every read, so it bounds a silent server, not a long download).
    pub fn reqwest_builder(&self) -> reqwest::ClientBuilder {
        reqwest::Client::builder()
            .connect_timeout(self.connect)
            .read_timeout(self.response)
    }

    /// The timeout of this kind.
    pub fn of(&self, kind: TimeoutKind) -> Duration {
        match kind {
            TimeoutKind::Connect => self.connect,
            TimeoutKind::Response => self.response,
        }
    }

    /// The sentence an error gives for an expired timeout, naming the host and the timeout.
    pub fn describe(&self, kind: TimeoutKind, host: &str) -> String {
        match kind {
            TimeoutKind::Connect => format!(
                "could not connect to {host} within {} (connect timeout)",
                human(self.connect)
            ),
            TimeoutKind::Response => format!(
                "{host} sent nothing for {} (response timeout)",
                human(self.response)
            ),
        }
    }
}

/// `1.5 s`, `60 s`.
pub fn human(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// `host:port` of a URL, for messages (the URL itself when it has no host).
pub fn host_of(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => match (u.host_str(), u.port_or_known_default()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_string(),
            _ => url.to_string(),
        },
        Err(_) => url.to_string(),
    }
}

/// Which timeout a reqwest error is, if it is one (connect errors that timed out count as
/// connect timeouts; everything else that timed out waited for the response).
pub fn reqwest_timeout(e: &reqwest::Error) -> Option<TimeoutKind> {
    if !e.is_timeout() && !source_timed_out(e) {
        return None;
    }
    Some(if e.is_connect() {
        TimeoutKind::Connect
    } else {
        TimeoutKind::Response
    })
}

fn source_timed_out(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = e.source();
    while let Some(s) = cur {
        if let Some(io) = s.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::TimedOut
        {
            return true;
        }
        cur = s.source();
    }
    false
}

/// An error and its causes on one line, each said once: reqwest's own text (`error sending
/// request for url (…)`) says nothing of why; the cause does (`tcp connect error: Connection
/// refused`).
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !more.is_empty() && !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

/// Whether a request failed in its TLS handshake (a certificate that is not trusted, expired
/// or for another name; a protocol the server refuses): trying again gets the same answer.
pub fn is_tls_error(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = cur {
        if s.downcast_ref::<rustls::Error>().is_some() {
            return true;
        }
        // An io::Error's `source` skips the error it wraps (hyper wraps tokio-rustls' io::Error
        // in another): look into it.
        if let Some(inner) = s.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()) {
            let inner: &(dyn std::error::Error + 'static) = inner;
            if is_tls_error(inner) {
                return true;
            }
        }
        cur = s.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_errors_are_found_inside_io_errors() {
        let tls = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let wrapped = std::io::Error::new(std::io::ErrorKind::InvalidData, tls);
        assert!(is_tls_error(&wrapped));
        // As hyper hands it on: an io::Error around tokio-rustls' io::Error.
        let twice = std::io::Error::other(wrapped);
        assert!(is_tls_error(&twice));
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(!is_tls_error(&refused));
    }

    #[test]
    fn describes_host_and_timeout() {
        let t = NetworkTimeouts::with(Some(Duration::from_millis(1500)), Some(Duration::from_secs(2)));
        assert_eq!(
            t.describe(TimeoutKind::Connect, "h:1"),
            "could not connect to h:1 within 1.5 s (connect timeout)"
        );
        assert_eq!(
            t.describe(TimeoutKind::Response, "h:1"),
            "h:1 sent nothing for 2 s (response timeout)"
        );
        assert_eq!(host_of("http://127.0.0.1:8080/x"), "127.0.0.1:8080");
        assert_eq!(host_of("https://api.github.com/x"), "api.github.com:443");
        assert_eq!(host_of("not a url"), "not a url");
        assert_eq!(NetworkTimeouts::with(None, None), NetworkTimeouts::default());
    }
}
