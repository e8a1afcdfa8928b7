//! The worker's coarse clock: a count its main loop advances every
//! [`TICK`], which tasks wait on instead of arming timers of
//! their own. Waiting puts a waker in a plain list (no lock, no timer, nothing to
//! take out when the wait is dropped), and a task is listed at most once per tick
//! however many waits it holds.

use std::cell::{Cell, RefCell};
use std::task::Waker;
use std::time::Duration;

/// The period of the worker's clock.
pub(crate) const TICK: Duration = Duration::from_secs(1);

/// The tick count and the tasks to wake at the next tick.
#[derive(Default)]
pub(crate) struct Ticks {
    now: Cell<u64>,
    waiting: RefCell<Vec<Waker>>,
}

/// Where a task stands in [`Ticks`]'s list: the tick it was last listed for.
#[derive(Debug, Default)]
pub(crate) struct TickListing(Option<u64>);

impl Ticks {
    /// Ticks so far.
    pub(crate) fn now(&self) -> u64 {
        self.now.get()
    }

    /// One more tick: wakes every listed task. A task whose wait ended meanwhile is
    /// woken for nothing once, which costs it one poll.
    pub(crate) fn advance(&self) {
        self.now.set(self.now.get() + 1);
        let waiting = std::mem::take(&mut *self.waiting.borrow_mut());
        for waker in waiting {
            waker.wake();
        }
    }

    /// Has `waker`'s task woken at the next tick, unless `listing` shows it is
    /// listed for this tick already.
    pub(crate) fn wake_next(&self, waker: &Waker, listing: &mut TickListing) {
        let now = self.now.get();
        if listing.0 != Some(now) {
            self.waiting.borrow_mut().push(waker.clone());
            listing.0 = Some(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::runtime::counting_waker::WakeCount;

    #[test]
    fn a_listed_task_is_woken_once_at_the_next_tick() {
        let ticks = Ticks::default();
        let (counter, waker) = WakeCount::waker();
        let mut listing = TickListing::default();
        ticks.wake_next(&waker, &mut listing);
        ticks.wake_next(&waker, &mut listing);
        assert_eq!(counter.get(), 0);
        ticks.advance();
        assert_eq!(ticks.now(), 1);
        assert_eq!(counter.get(), 1, "listed once per tick");
        ticks.advance();
        assert_eq!(counter.get(), 1, "not listed again");
        ticks.wake_next(&waker, &mut listing);
        ticks.advance();
        assert_eq!(counter.get(), 2);
    }
}
