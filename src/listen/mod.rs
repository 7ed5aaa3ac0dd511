//! The accept loop: each connection is served by hyper's HTTP/1 server, as
//! `axum::serve` serves it (the peer's address as `ConnectInfo`, a
//! graceful shutdown that lets requests under way finish), except a
//! connection whose first request asks for an event stream (see
//! [`stream`]).

mod stream;

use std::future::Future;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::http::Request;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Accepts connections on `listener` and serves `app` on them until
/// `shutdown` completes; then waits for the requests under way.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let graceful = GracefulShutdown::new();
    // Ends the connections still waiting for their first request.
    let closing = CancellationToken::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (socket, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    accept_failed(&err).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let app = app.clone();
        let watcher = graceful.watcher();
        let closing = closing.clone();
        tokio::spawn(async move {
            let first = tokio::select! {
                first = stream::first_request(&socket) => first,
                // As hyper closes a connection that has not sent a request.
                () = closing.cancelled() => return,
            };
            if let Some(request) = first {
                // Held until the stream ends: the shutdown waits for it.
                let _watching = watcher;
                stream::serve(socket, request, peer, app).await;
                return;
            }
            let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
                request.extensions_mut().insert(ConnectInfo(peer));
                tower::ServiceExt::oneshot(app.clone(), request)
            });
            let connection = http1::Builder::new().serve_connection(TokioIo::new(socket), service);
            if let Err(err) = watcher.watch(connection).await {
                tracing::trace!(error = %err, "connection ended with an error");
            }
        });
    }
    drop(listener);
    closing.cancel();
    graceful.shutdown().await;
    Ok(())
}

/// As `axum::serve` does: a connection that failed while being accepted is
/// skipped; anything else (out of file descriptors) is logged and retried
/// after a second.
async fn accept_failed(err: &std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        err.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %err, "accepting a connection failed; retrying in 1 s");
    tokio::time::sleep(Duration::from_secs(1)).await;
}
