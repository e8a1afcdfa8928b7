//! What a worker thread runs on, below everything it serves: its listening sockets
//! (`listen`), its one-second coarse clock (`tick`), the wall-clock `Date` its
//! responses carry (`date`), its drain signal (`drain`), the
//! waker bookkeeping both share (`counting_waker`) and the executor hyper spawns
//! onto (`LocalExec`).

#[cfg(test)]
mod counting_waker;
pub(crate) mod date;
pub(crate) mod drain;
pub(crate) mod listen;
pub(crate) mod tick;

use std::future::Future;

/// Runs a `!Send` future on the worker's own thread: hyper's HTTP/2 side spawns
/// per-stream tasks through this, so they never leave the core.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LocalExec;

impl<F> hyper::rt::Executor<F> for LocalExec
where
    F: Future + 'static,
{
    fn execute(&self, future: F) {
        tokio::task::spawn_local(future);
    }
}
