//! A waker for unit tests that counts how often it was woken.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Wake, Waker};

/// Counts the wake-ups of the wakers made from it.
pub(crate) struct WakeCount(AtomicUsize);

impl WakeCount {
    /// A new count and a waker that adds to it.
    pub(crate) fn waker() -> (Arc<Self>, Waker) {
        let count = Arc::new(Self(AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&count));
        (count, waker)
    }

    /// Wake-ups so far.
    pub(crate) fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl Wake for WakeCount {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}
