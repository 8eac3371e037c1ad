//! Blocking work, kept off the async workers. Dedicated pools for password hashing and for
//! database reads and writes; [`run_blocking`] (tokio's blocking pool) for the rest. Callers wait asynchronously, holding no thread; jobs
//! queue in the pool, not as parked threads, and a thread that finds another job queued runs
//! it without sleeping (tokio's blocking pool cost two context switches per job).
//!
//! Invariants: a job whose caller has gone (a dropped request) before it starts is skipped,
//! as it was when callers queued on a semaphore; a panic in a job is re-raised on the caller,
//! so it is reported like a panicking handler; a pool's queue is bounded, and a job that
//! finds it full is refused at once ([`QueueFull`], which requests answer with 503).

/// Runs blocking work that needs no pool of its own (outbound HTTP, DNS) on tokio's blocking
/// pool, and re-raises its panic on the caller (vaultwarden `run_blocking`).
pub async fn run_blocking<T, F>(f: F) -> T
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(v) => v,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("blocking task was cancelled: {e}"),
    }
}

/// A job as queued: the caller's closure with its answer channel.
type Job = Box<dyn FnOnce() + Send>;

/// A pool's queue was full: the caller answers 503 rather than queueing without bound.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the {0} queue is full")]
pub struct QueueFull(pub &'static str);

/// The pool's queue. The threads end once every clone of it is dropped.
#[derive(Clone)]
pub struct Threads {
    tx: crossbeam_channel::Sender<Job>,
    name: &'static str,
}

impl Threads {
    /// `n` threads named `{name}-{i}`, with room for `queue` jobs waiting for one of them
    /// (at least one); `start` runs first on each.
    pub fn new(
        name: &'static str,
        n: usize,
        queue: usize,
        start: impl Fn() + Send + Sync + 'static,
    ) -> Self {
        // Bounded: under a flood, callers are turned away instead of memory growing.
        let (tx, rx) = crossbeam_channel::bounded::<Job>(queue.max(1));
        let start = std::sync::Arc::new(start);
        for i in 0..n.max(1) {
            let (rx, start) = (rx.clone(), start.clone());
            std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || {
                    start();
                    // A queued job is taken at once; an idle thread parks after a short spin.
                    for job in rx {
                        job();
                    }
                })
                .expect("the pool's threads start");
        }
        Self { tx, name }
    }

    /// Runs `f` on one of the pool's threads; jobs start in arrival order. Fails at once,
    /// without running `f`, when the queue is full.
    pub async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, QueueFull> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            if tx.is_closed() {
                return;
            }
            let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
        });
        match self.tx.try_send(job) {
            Ok(()) => {}
            Err(crossbeam_channel::TrySendError::Full(_)) => return Err(QueueFull(self.name)),
            Err(crossbeam_channel::TrySendError::Disconnected(_)) => {
                unreachable!("the pool's threads live as long as the pool")
            }
        }
        match rx.await.expect("the pool answers every job") {
            Ok(v) => Ok(v),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}
