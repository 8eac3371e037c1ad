//! The connection loop. axum's `serve` sets no timer, so hyper's header-read timeout never
//! fires and a client that trickles its request head holds a connection forever; this loop
//! is the same thing with the timer set. HTTP/1.1 with upgrades (for WebSockets).
//!
//! Invariants:
//! - At most `max_connections` connections are open; the next one waits in the kernel's
//!   accept queue until one closes.
//! - A request's head and body arrive within the request deadline, counted from its first
//!   byte whatever the pace of the rest: a late head closes the connection (hyper's
//!   header-read timer), a late body is answered 408 `request_timeout` ([`request_deadline`]).
//! - On shutdown it stops accepting and lets each connection finish its in-flight request
//!   until `drain` has passed; then the connections still open are dropped.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper::body::{Body as HttpBody, Bytes, Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::{Service, ServiceExt};

use crate::error::AppError;

/// What the connection loop needs to know.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Longest a client may take to send a request's head, whatever the deadline.
    pub header_read_timeout: Duration,
    /// Longest from a request's first byte to its last (head and body).
    pub request_deadline: Duration,
    pub max_connections: usize,
    /// How long in-flight requests may run on after shutdown begins.
    pub drain: Duration,
}

/// Accepts connections on `listener` until `shutdown`, serving each with `service`, then
/// drains the open connections (for `limits.drain` at most).
pub async fn run<S>(listener: TcpListener, service: S, shutdown: CancellationToken, limits: Limits)
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    let connections = TaskTracker::new();
    let open = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    // Cancelled once the drain period is over: connections still open are dropped.
    let abandon = CancellationToken::new();
    loop {
        // A free slot first: past the cap, new connections wait in the accept queue.
        let slot = tokio::select! {
            slot = open.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
            () = shutdown.cancelled() => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = shutdown.cancelled() => break,
        };
        let _ = stream.set_nodelay(true);
        let arrival = Arc::new(Arrival::default());
        let deadline = limits.request_deadline;
        let on_conn = arrival.clone();
        let svc = service
            .clone()
            .map_request(move |req: hyper::Request<Incoming>| {
                let at = on_conn.started();
                let done = Arc::new(AtomicBool::new(false));
                let (parts, inner) = req.into_parts();
                let body = Tracked {
                    inner,
                    arrival: on_conn.clone(),
                    done: done.clone(),
                };
                body.check_end();
                let mut req = hyper::Request::from_parts(parts, Body::new(body));
                req.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
                req.extensions_mut().insert(RequestDeadline {
                    at: tokio::time::Instant::from_std(at + deadline),
                    body_done: done,
                });
                req
            });
        let (stop, abandon) = (shutdown.clone(), abandon.clone());
        connections.spawn(async move {
            let _slot = slot;
            let io = TokioIo::new(Timed {
                inner: stream,
                arrival,
                write_stall: deadline,
                stalled: None,
            });
            let conn = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_read_timeout.min(limits.request_deadline))
                .serve_connection(io, TowerToHyperService::new(svc))
                .with_upgrades();
            tokio::pin!(conn);
            tokio::select! {
                res = conn.as_mut() => {
                    if let Err(e) = res {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
                    return;
                }
                () = stop.cancelled() => {}
            }
            // Finish the request in flight (if any), then close; give up when the drain
            // period is over (a client sending its body slowly, a long response).
            conn.as_mut().graceful_shutdown();
            tokio::select! {
                _ = conn.as_mut() => {}
                () = abandon.cancelled() => {}
            }
        });
    }
    drop(listener);
    connections.close();
    if tokio::time::timeout(limits.drain, connections.wait())
        .await
        .is_err()
    {
        tracing::warn!("shutdown: closing connections with requests still in flight");
        abandon.cancel();
        connections.wait().await;
    }
}

/// When the request now arriving on a connection sent its first byte: noted by the first
/// read after the previous request's body was done, forgotten when this one's body is.
#[derive(Default)]
struct Arrival(Mutex<Option<Instant>>);

impl Arrival {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn read_some(&self) {
        let mut at = self.lock();
        if at.is_none() {
            *at = Some(Instant::now());
        }
    }

    /// The current request's first byte (now, when it was read with the previous request).
    fn started(&self) -> Instant {
        *self.lock().get_or_insert_with(Instant::now)
    }

    fn forget(&self) {
        *self.lock() = None;
    }
}

/// The connection's socket, noting when each request's first byte is read. A client that
/// takes none of the response for `write_stall` (the request deadline) is cut off: else one
/// that pipelines requests and never reads would hold its connection slot for ever.
struct Timed {
    inner: TcpStream,
    arrival: Arc<Arrival>,
    write_stall: Duration,
    /// Running while a write waits for the client to make room.
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Timed {
    /// Passes a write's progress through, and fails it once it has made none for
    /// `write_stall`.
    fn stall<T>(
        &mut self,
        cx: &mut Context<'_>,
        res: Poll<std::io::Result<T>>,
    ) -> Poll<std::io::Result<T>> {
        if res.is_ready() {
            self.stalled = None;
            return res;
        }
        let stall = self.write_stall;
        let timer = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(stall)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the client took none of the response in time",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncRead for Timed {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let res = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(res, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.arrival.read_some();
        }
        res
    }
}

impl AsyncWrite for Timed {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let res = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.stall(cx, res)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let res = Pin::new(&mut self.inner).poll_flush(cx);
        self.stall(cx, res)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let res = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.stall(cx, res)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// A request body that says when it is done: read to its end, failed, or dropped unread.
struct Tracked {
    inner: Incoming,
    arrival: Arc<Arrival>,
    done: Arc<AtomicBool>,
}

impl Tracked {
    fn check_end(&self) {
        if self.inner.is_end_stream() {
            self.finish();
        }
    }

    fn finish(&self) {
        if !self.done.swap(true, Ordering::SeqCst) {
            // What is read from now on belongs to the next request.
            self.arrival.forget();
        }
    }
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let res = Pin::new(&mut self.inner).poll_frame(cx);
        match &res {
            Poll::Ready(None | Some(Err(_))) => self.finish(),
            Poll::Ready(Some(Ok(_))) => self.check_end(),
            Poll::Pending => {}
        }
        res
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.finish();
    }
}

/// When the request must have arrived whole, and whether its body has.
#[derive(Clone)]
pub struct RequestDeadline {
    at: tokio::time::Instant,
    body_done: Arc<AtomicBool>,
}

/// Answers 408 `request_timeout` (and closes the connection) when the request deadline
/// passes before the body has arrived, however steadily its bytes trickle in; the handler
/// waiting for it is dropped. A handler still running once its body is in is left alone.
pub async fn request_deadline(req: Request, next: Next) -> Response {
    // No timer for a request that has no body left to wait for (most GETs).
    let Some(deadline) = req
        .extensions()
        .get::<RequestDeadline>()
        .filter(|d| !d.body_done.load(Ordering::SeqCst))
        .cloned()
    else {
        return next.run(req).await;
    };
    let late = async {
        tokio::time::sleep_until(deadline.at).await;
        if deadline.body_done.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        res = next.run(req) => res,
        () = late => {
            let mut res = AppError::request_timeout().into_response();
            res.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            res
        }
    }
}
