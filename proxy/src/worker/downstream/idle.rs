//! When an HTTP/2 connection has gone idle: no stream open for the keep-alive
//! timeout. Its requests count themselves in and out; the connection waits on
//! [`StreamActivity::idle_for`] beside its serving future and, when that ends,
//! says GOAWAY and finishes.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use tokio::time::{Instant, sleep_until};

/// The streams one connection has open, and when the last one closed (meaningful
/// only while none is open).
#[derive(Debug)]
pub(crate) struct StreamActivity {
    open: Cell<usize>,
    last_closed: Cell<Instant>,
}

impl StreamActivity {
    /// A connection that opened now, with no stream.
    pub(crate) fn new() -> Rc<Self> {
        Rc::new(Self {
            open: Cell::new(0),
            last_closed: Cell::new(Instant::now()),
        })
    }

    /// Counts a stream open until the guard drops.
    pub(crate) fn open(self: &Rc<Self>) -> OpenStream {
        self.open.set(self.open.get() + 1);
        OpenStream(Rc::clone(self))
    }

    /// Ends once no stream has been open for `timeout`.
    pub(crate) async fn idle_for(&self, timeout: Duration) {
        loop {
            let since = self.last_closed.get();
            if self.open.get() == 0 && since.elapsed() >= timeout {
                return;
            }
            // A stream open (or one closed meanwhile) pushes the check later; it
            // is made again at most once per timeout while streams stay open.
            let wake = if self.open.get() == 0 {
                since + timeout
            } else {
                Instant::now() + timeout
            };
            sleep_until(wake).await;
        }
    }
}

/// A stream counted open in its connection's [`StreamActivity`].
#[derive(Debug)]
pub(crate) struct OpenStream(Rc<StreamActivity>);

impl Drop for OpenStream {
    fn drop(&mut self) {
        let activity = &self.0;
        let open = activity.open.get() - 1;
        activity.open.set(open);
        // Only the last stream's end starts the idle time: the clock is read once
        // per busy spell, not once per stream.
        if open == 0 {
            activity.last_closed.set(Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn idle_only_after_the_last_stream_closed_for_the_timeout() {
        let activity = StreamActivity::new();
        let timeout = Duration::from_millis(100);
        let start = Instant::now();
        let stream = activity.open();
        let closer = async {
            tokio::time::sleep(Duration::from_millis(250)).await;
            drop(stream);
        };
        let ((), ()) = tokio::join!(activity.idle_for(timeout), closer);
        // Open for 250 ms, then idle for 100.
        assert!(start.elapsed() >= Duration::from_millis(350));
        let again = Instant::now();
        drop(activity.open());
        activity.idle_for(timeout).await;
        assert!(again.elapsed() >= timeout);
    }
}
