//! The Kubernetes client the applier uses: kube's own layers (base URI, authentication,
//! impersonation headers) over a hyper connector with `TCP_NODELAY`. kube's default
//! connector leaves Nagle's algorithm on, and the first request of every new connection then
//! waits for the server's delayed ACK (~40 ms) — as long as a whole no-op apply of a few
//! objects.

use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kube::client::ConfigExt;
use kube::{Client, Config};
use tower::{BoxError, ServiceBuilder};

/// A client for `config` (what `Client::try_from(config)` gives, minus Nagle's delay and
/// kube's request tracing).
pub fn client(config: Config) -> Result<Client, kube::Error> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(config.connect_timeout);
    let https = config.rustls_https_connector_with_connector(http)?;
    let hyper = hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build(https);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(BoxError::from)
        .service(hyper);
    Ok(Client::new(service, config.default_namespace))
}
