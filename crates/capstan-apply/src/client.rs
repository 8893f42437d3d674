//! The Kubernetes client the applier uses: kube's own layers (base URI, authentication,
//! impersonation headers) over a hyper connector with `TCP_NODELAY`, a connect timeout and a
//! response timeout. kube's default connector leaves Nagle's algorithm on, and the first
//! request of every new connection then waits for the server's delayed ACK (~40 ms) — as
//! long as a whole no-op apply of a few objects. And it sets no response timeout: a server
//! that accepts the connection and never answers would hang every caller for good.

use std::time::Duration;

use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kube::client::ConfigExt;
use kube::{Client, Config};
use tower::{BoxError, ServiceBuilder};

/// How long a client waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// For the TCP connection.
    pub connect: Duration,
    /// From sending a request until the response's headers arrive (connection and TLS
    /// handshake included). A watch's or a list's body may stream for longer.
    pub response: Duration,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            connect: Duration::from_secs(10),
            response: Duration::from_secs(30),
        }
    }
}

impl Timeouts {
    /// The defaults, shortened where `config` asks for less (`connect_timeout`,
    /// `read_timeout`).
    pub fn for_config(config: &Config) -> Timeouts {
        let default = Timeouts::default();
        let shorter = |set: Option<Duration>, default: Duration| set.map_or(default, |s| s.min(default));
        Timeouts {
            connect: shorter(config.connect_timeout, default.connect),
            response: shorter(config.read_timeout, default.response),
        }
    }
}

/// A request that got no response in time.
#[derive(Debug, thiserror::Error)]
#[error("no response from {server} within {after:?}")]
pub struct NoResponse {
    pub server: String,
    pub after: Duration,
}

/// A client for `config` (what `Client::try_from(config)` gives, minus Nagle's delay and
/// kube's request tracing, plus the timeouts of [`Timeouts::for_config`]).
pub fn client(config: Config) -> Result<Client, kube::Error> {
    let timeouts = Timeouts::for_config(&config);
    client_with(config, timeouts)
}

/// A client for `config` with `timeouts`.
pub fn client_with(config: Config, timeouts: Timeouts) -> Result<Client, kube::Error> {
    let server = config.cluster_url.to_string().trim_end_matches('/').to_string();
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(timeouts.connect));
    let https = config.rustls_https_connector_with_connector(http)?;
    let hyper = hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build(https);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_future(move |response| {
            let server = server.clone();
            let after = timeouts.response;
            async move {
                match tokio::time::timeout(after, response).await {
                    Ok(answer) => answer,
                    Err(_) => Err(BoxError::from(NoResponse { server, after })),
                }
            }
        })
        .map_err(BoxError::from)
        .service(hyper);
    Ok(Client::new(service, config.default_namespace))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn timeouts_take_the_shorter() {
        let mut config = Config::new("https://example.invalid".parse().expect("URL"));
        config.connect_timeout = Some(Duration::from_secs(30));
        config.read_timeout = None;
        assert_eq!(Timeouts::for_config(&config), Timeouts::default());
        config.connect_timeout = Some(Duration::from_secs(2));
        config.read_timeout = Some(Duration::from_secs(5));
        let t = Timeouts::for_config(&config);
        assert_eq!(
            (t.connect, t.response),
            (Duration::from_secs(2), Duration::from_secs(5))
        );
    }

    /// A server that accepts connections and never answers: the request fails after the
    /// response timeout, naming the server and the timeout.
    #[tokio::test]
    async fn a_server_that_never_answers_times_out() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let hold = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                held.push(socket);
            }
        });
        for scheme in ["https", "http"] {
            let url = format!("{scheme}://{addr}");
            let config = Config::new(url.parse().expect("URL"));
            let timeouts = Timeouts {
                connect: Duration::from_secs(1),
                response: Duration::from_millis(300),
            };
            let client = client_with(config, timeouts).expect("client");
            let started = Instant::now();
            let answer = tokio::time::timeout(Duration::from_secs(10), client.apiserver_version())
                .await
                .expect("the client gives up by itself");
            let err = answer.expect_err("no answer is an error");
            let text = crate::ssa::api_message(&err);
            assert!(
                text.contains(&format!("no response from {url} within 300ms")),
                "{text}"
            );
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "{:?}",
                started.elapsed()
            );
        }
        hold.abort();
    }
}
