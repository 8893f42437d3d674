//! A TLS server whose self-signed certificate no client trusts: it completes no handshake and
//! counts the connections it is offered (a client that retries a certificate error shows).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The server's `https://127.0.0.1:PORT` and the connections offered so far.
pub struct UntrustedTls {
    pub url: String,
    offered: Arc<AtomicUsize>,
}

impl UntrustedTls {
    /// Starts the server on a thread of its own (it lives as long as the test process).
    pub fn start() -> UntrustedTls {
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
            .expect("certificate parameters")
            .self_signed(&key)
            .expect("self-signed certificate");
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = Arc::new(
            rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .expect("protocol versions")
                .with_no_client_auth()
                .with_single_cert(
                    vec![cert.der().clone()],
                    rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
                )
                .expect("server config"),
        );
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("address");
        let offered = Arc::new(AtomicUsize::new(0));
        let seen = offered.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { break };
                seen.fetch_add(1, Ordering::SeqCst);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                if let Ok(mut conn) = rustls::ServerConnection::new(config.clone()) {
                    let _ = conn.complete_io(&mut stream);
                }
            }
        });
        UntrustedTls {
            url: format!("https://{addr}"),
            offered,
        }
    }

    /// Connections offered so far.
    pub fn offered(&self) -> usize {
        self.offered.load(Ordering::SeqCst)
    }
}
