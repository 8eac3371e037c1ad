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

/// Lowers the calling thread's CPU priority to `nice` (Linux: 0 normal, 19 lowest), so its
/// work takes what the machine has spare. Only for threads that end with their work: an
/// unprivileged process cannot raise it back.
pub fn lower_current_priority(nice: i8) {
    use thread_priority::{ThreadPriority, ThreadPriorityValue, set_current_thread_priority};
    // thread-priority maps its 0..=99 scale onto nice 19..=-20 (two steps a nice level).
    let value = u8::try_from((19 - i16::from(nice.clamp(-20, 19))) * 99 / 39).unwrap_or(0);
    let set = ThreadPriorityValue::try_from(value)
        .map_err(|e| e.to_string())
        .and_then(|v| {
            set_current_thread_priority(ThreadPriority::Crossplatform(v)).map_err(|e| e.to_string())
        });
    if let Err(e) = set {
        tracing::debug!(error = %e, nice, "thread keeps normal priority");
    }
}

/// A job as queued: the caller's closure with its answer channel.
type Job = Box<dyn FnOnce() + Send>;

/// A pool's queue was full: the caller answers 503 rather than queueing without bound.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the {0} queue is full")]
pub struct QueueFull(pub &'static str);

/// A bounded queue of work of type `J` for one pool's threads: past its limit, new work is
/// refused ([`QueueFull`]); as much room again is kept for work that finishes what was
/// begun. The pool's threads end once every clone of it is dropped.
pub struct Queue<J> {
    tx: crossbeam_channel::Sender<J>,
    name: &'static str,
    /// Jobs waiting past which new work is refused. The channel holds as many again, kept
    /// for work that finishes what was already begun ([`Queue::submit_to_finish`]).
    limit: usize,
    /// Where each job's wait for a thread is recorded, once metrics are on.
    wait: std::sync::Arc<std::sync::OnceLock<metrics::Histogram>>,
}

impl<J> Clone for Queue<J> {
    fn clone(&self) -> Self {
        Self {
            tx: self.tx.clone(),
            name: self.name,
            limit: self.limit,
            wait: self.wait.clone(),
        }
    }
}

impl<J: Send + 'static> Queue<J> {
    /// A queue with room for `queue` jobs (at least one), and the receiving end its
    /// threads take jobs from.
    pub fn new(name: &'static str, queue: usize) -> (Self, crossbeam_channel::Receiver<J>) {
        // Bounded: under a flood, callers are turned away instead of memory growing.
        let limit = queue.max(1);
        let (tx, rx) = crossbeam_channel::bounded::<J>(limit.saturating_mul(2));
        let q = Self {
            tx,
            name,
            limit,
            wait: std::sync::Arc::default(),
        };
        (q, rx)
    }

    /// Jobs waiting for a thread now.
    pub fn queued(&self) -> usize {
        self.tx.len()
    }

    /// Records each job's wait for a thread in `h` from now on (the first call wins).
    pub fn observe_wait(&self, h: metrics::Histogram) {
        let _ = self.wait.set(h);
    }

    /// Call as a job is queued; the returned closure, called as it starts, records its wait.
    pub fn wait_clock(&self) -> impl FnOnce() + Send + 'static {
        let (wait, queued) = (self.wait.clone(), std::time::Instant::now());
        move || {
            if let Some(h) = wait.get() {
                h.record(queued.elapsed());
            }
        }
    }

    /// Queues `job`; fails at once, without queueing it, when the queue holds its limit.
    pub fn submit(&self, job: J) -> Result<(), QueueFull> {
        if self.tx.len() >= self.limit {
            return Err(QueueFull(self.name));
        }
        match self.tx.try_send(job) {
            Ok(()) => Ok(()),
            Err(crossbeam_channel::TrySendError::Full(_)) => Err(QueueFull(self.name)),
            Err(crossbeam_channel::TrySendError::Disconnected(_)) => {
                unreachable!("the pool's threads live as long as the pool")
            }
        }
    }

    /// Queues `job` like [`Queue::submit`], but never refuses it: for work that finishes
    /// what was already begun (a response to remember, a refund the provider confirmed, a
    /// job's outcome), where a refusal would leave it half done. It uses the room kept past
    /// the limit, and waits for a free place in the rare case that is full too.
    pub async fn submit_to_finish(&self, mut job: J) {
        loop {
            match self.tx.try_send(job) {
                Ok(()) => return,
                Err(crossbeam_channel::TrySendError::Full(j)) => {
                    job = j;
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                }
                Err(crossbeam_channel::TrySendError::Disconnected(_)) => {
                    unreachable!("the pool's threads live as long as the pool")
                }
            }
        }
    }
}

/// A pool of threads that run closures, in arrival order.
#[derive(Clone)]
pub struct Threads {
    queue: Queue<Job>,
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
        let (queue, rx) = Queue::<Job>::new(name, queue);
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
        Self { queue }
    }

    /// Jobs waiting for a thread now.
    pub fn queued(&self) -> usize {
        self.queue.queued()
    }

    /// Records each job's wait for a thread in `h` from now on (the first call wins).
    pub fn observe_wait(&self, h: metrics::Histogram) {
        self.queue.observe_wait(h);
    }

    /// Runs `f` on one of the pool's threads; jobs start in arrival order. Fails at once,
    /// without running `f`, when the queue holds its limit: new work is turned away.
    pub async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, QueueFull> {
        let (job, rx) = self.job(f);
        self.queue.submit(job)?;
        Ok(answer(rx).await)
    }

    /// Runs `f` like [`Threads::run`], but never refuses it (see [`Queue::submit_to_finish`]).
    pub async fn run_to_finish<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> T {
        let (job, rx) = self.job(f);
        self.queue.submit_to_finish(job).await;
        answer(rx).await
    }

    /// `f` wrapped as a queued job that answers on the returned channel (unless its caller
    /// has gone), with its panic caught.
    fn job<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> (Job, Answer<T>) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let started = self.queue.wait_clock();
        let job: Job = Box::new(move || {
            started();
            if tx.is_closed() {
                return;
            }
            let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
        });
        (job, rx)
    }
}

/// Where a job's outcome arrives: its value, or its panic.
pub type Answer<T> = tokio::sync::oneshot::Receiver<std::thread::Result<T>>;

/// The job's answer, its panic re-raised here.
pub async fn answer<T>(rx: Answer<T>) -> T {
    match rx.await.expect("the pool answers every job") {
        Ok(v) => v,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

#[cfg(test)]
mod tests {
    use super::Threads;

    /// The niceness asked for is the one the kernel reports for the thread (password hashing
    /// runs at 10).
    #[test]
    #[cfg(target_os = "linux")]
    fn a_lowered_thread_runs_at_the_niceness_asked_for() {
        for nice in [10, 19] {
            let got = std::thread::spawn(move || {
                super::lower_current_priority(nice);
                let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
                // Field 19 is the nice value; fields count from after the command's ')'.
                let after = &stat[stat.rfind(')').unwrap() + 2..];
                after.split(' ').nth(16).unwrap().parse::<i8>().unwrap()
            })
            .join()
            .unwrap();
            assert_eq!(got, nice);
        }
    }

    /// Issue 13 item 17 (review): past its limit a pool turns new work away, but still takes
    /// work that finishes what was begun, in the room kept for it.
    #[tokio::test]
    async fn a_full_queue_refuses_new_work_but_takes_work_that_finishes() {
        let pool = Threads::new("test", 1, 1, || {});
        let (release, gate) = std::sync::mpsc::channel::<()>();
        let (started, running) = tokio::sync::oneshot::channel::<()>();
        let busy = {
            let pool = pool.clone();
            tokio::spawn(async move {
                pool.run(move || {
                    started.send(()).unwrap();
                    gate.recv().unwrap();
                })
                .await
            })
        };
        running.await.unwrap();
        let queued = {
            let pool = pool.clone();
            tokio::spawn(async move { pool.run(|| 1).await })
        };
        while pool.queue.tx.is_empty() {
            tokio::task::yield_now().await;
        }
        assert!(pool.run(|| 2).await.is_err(), "new work past the limit");
        let finishing = {
            let pool = pool.clone();
            tokio::spawn(async move { pool.run_to_finish(|| 3).await })
        };
        while pool.queue.tx.len() < 2 {
            tokio::task::yield_now().await;
        }
        release.send(()).unwrap();
        busy.await.unwrap().unwrap();
        assert_eq!(queued.await.unwrap().unwrap(), 1);
        assert_eq!(finishing.await.unwrap(), 3);
    }
}
