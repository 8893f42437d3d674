//! A TCP proxy on loopback that counts the connections it forwards, and can turn into a
//! network that drops every byte while keeping the connections open (a peer gone without a
//! FIN), to test what a client does then.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// Forwards every connection to one upstream address.
pub struct TcpProxy {
    port: u16,
    connections: Arc<AtomicUsize>,
    silent: Arc<AtomicBool>,
    accept: JoinHandle<()>,
}

impl TcpProxy {
    /// A proxy on `127.0.0.1` forwarding to `upstream` (`host:port`).
    pub async fn start(upstream: &str) -> TcpProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("proxy binds");
        let port = listener.local_addr().expect("proxy address").port();
        let connections = Arc::new(AtomicUsize::new(0));
        let silent = Arc::new(AtomicBool::new(false));
        let (counted, upstream, muted) = (connections.clone(), upstream.to_string(), silent.clone());
        let accept = tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                let (upstream, muted) = (upstream.clone(), muted.clone());
                tokio::spawn(async move {
                    let Ok(outbound) = TcpStream::connect(&upstream).await else {
                        return;
                    };
                    let (in_read, in_write) = inbound.into_split();
                    let (out_read, out_write) = outbound.into_split();
                    tokio::join!(
                        forward(in_read, out_write, muted.clone()),
                        forward(out_read, in_write, muted)
                    );
                });
            }
        });
        TcpProxy {
            port,
            connections,
            silent,
            accept,
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// From now on nothing passes in either direction, and no connection is closed.
    pub fn go_silent(&self) {
        self.silent.store(true, Ordering::SeqCst);
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Copies `from` to `to` until either ends; once `silent`, holds both open and passes nothing.
async fn forward(mut from: impl AsyncRead + Unpin, mut to: impl AsyncWrite + Unpin, silent: Arc<AtomicBool>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if silent.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}
