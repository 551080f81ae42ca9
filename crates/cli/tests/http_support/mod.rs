//! A scripted HTTP/1.1 server on 127.0.0.1 for the tests of `proxy --upstream` (the remote
//! upstream, its faults, OAuth): a thread with its own tokio runtime accepts connections and
//! hands each request to the test's handler.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use hyper::body::{Body, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

/// Starts the server; `handle` answers every request. Returns its address. The server lives
/// until the test process ends.
pub fn serve<F, Fut, B>(handle: F) -> SocketAddr
where
    F: Fn(Request<Incoming>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Response<B>> + Send + 'static,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let handle = Arc::new(handle);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let _ = tx.send(listener.local_addr().expect("addr"));
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let handle = Arc::clone(&handle);
                tokio::spawn(async move {
                    let service = service_fn(move |request| {
                        let answer = handle(request);
                        async move { Ok::<_, Infallible>(answer.await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
    });
    rx.recv().expect("the server's address")
}
