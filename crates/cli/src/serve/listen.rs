//! Accepting connections and serving HTTP/1.1 on them with hyper, the
//! router answering each request, until `shutdown` resolves; then no new
//! connection is accepted, idle ones are closed, and the call returns when
//! those with a request in flight have answered it.
//!
//! Not `axum::serve`: it sets no header read timeout (hyper needs a timer
//! for one), so a client that sends its headers one byte a minute would
//! hold a connection for ever. Here headers must arrive within the body's
//! time bound, and the body then has its own (`body::read_body`).

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Serves `router` on `listener` until `shutdown`, then drains.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    header_timeout: Duration,
    shutdown: impl Future<Output = ()>,
) {
    // Every connection task holds a receiver of `open`; the drain waits for
    // the last to be dropped. `stop` tells them to finish gracefully.
    let (open_tx, open_rx) = watch::channel(());
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, _peer) = tokio::select! {
            _ = &mut shutdown => break,
            conn = listener.accept() => match conn {
                Ok(c) => c,
                Err(e) => {
                    // Out of file descriptors, most likely: wait for some
                    // connections to close rather than spin on accept.
                    eprintln!("accept: {e}; retrying in 100 ms");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(router.clone());
        let (open, mut stop) = (open_rx.clone(), stop_rx.clone());
        tokio::spawn(async move {
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout);
            let conn = builder.serve_connection(TokioIo::new(stream), service);
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = async { stop.wait_for(|s| *s).await.is_ok() } => {
                    // Idle: closes now; a request in flight: after its answer.
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
            drop(open);
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    drop(open_rx);
    open_tx.closed().await;
}
