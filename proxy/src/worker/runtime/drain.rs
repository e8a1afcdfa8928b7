//! The worker's drain signal as its connections see it: a flag the worker's main
//! loop sets once, and the tasks to wake when it does. A connection takes one slot
//! in the list for its whole life ([`DrainWatch`]) and puts its waker there again
//! only when the waker changed, so waiting for the next request on a kept-alive
//! connection costs a compare, not a registration (a `tokio::sync::watch` wait
//! takes a lock and registers a waiter every time).

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::task::{Context, Poll, Waker};

/// Whether the worker drains, and the connections waiting to hear it.
#[derive(Default)]
pub(crate) struct Drain {
    started: Cell<bool>,
    /// One slot per watching connection; `None` once woken or given back.
    slots: RefCell<Vec<Option<Waker>>>,
    /// Slots given back, to be taken again.
    free: RefCell<Vec<usize>>,
}

impl Drain {
    /// Whether the worker has started draining.
    pub(crate) fn started(&self) -> bool {
        self.started.get()
    }

    /// The worker drains from now on: every watching connection is woken.
    pub(crate) fn start(&self) {
        if self.started.replace(true) {
            return;
        }
        // Taken out first: a waker run while the list is borrowed must not find it
        // borrowed.
        let wakers: Vec<Waker> = self
            .slots
            .borrow_mut()
            .iter_mut()
            .filter_map(Option::take)
            .collect();
        wakers.into_iter().for_each(Waker::wake);
    }

    /// A watch for one connection, holding no slot until it first waits.
    pub(crate) fn watch(&self) -> DrainWatch<'_> {
        DrainWatch {
            drain: self,
            slot: None,
        }
    }
}

/// One connection's wait for the drain; gives its slot back when dropped.
pub(crate) struct DrainWatch<'a> {
    drain: &'a Drain,
    slot: Option<usize>,
}

impl DrainWatch<'_> {
    /// Whether the worker has started draining.
    pub(crate) fn started(&self) -> bool {
        self.drain.started()
    }

    /// Ready once the worker drains; until then the task's waker is in its slot.
    pub(crate) fn poll_started(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.drain.started() {
            return Poll::Ready(());
        }
        let mut slots = self.drain.slots.borrow_mut();
        match self.slot {
            Some(slot) => {
                let waiting = &mut slots[slot];
                if !waiting.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    *waiting = Some(cx.waker().clone());
                }
            }
            None => {
                let waker = Some(cx.waker().clone());
                let slot = match self.drain.free.borrow_mut().pop() {
                    Some(slot) => {
                        slots[slot] = waker;
                        slot
                    }
                    None => {
                        slots.push(waker);
                        slots.len() - 1
                    }
                };
                self.slot = Some(slot);
            }
        }
        Poll::Pending
    }

    /// Resolves once the worker drains.
    pub(crate) async fn drained(&mut self) {
        poll_fn(|cx| self.poll_started(cx)).await;
    }
}

impl Drop for DrainWatch<'_> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            self.drain.slots.borrow_mut()[slot] = None;
            self.drain.free.borrow_mut().push(slot);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::runtime::counting_waker::WakeCount;

    #[test]
    fn watching_connections_are_woken_once_when_the_drain_starts() {
        let drain = Drain::default();
        let (first, first_waker) = WakeCount::waker();
        let (second, second_waker) = WakeCount::waker();
        let mut one = drain.watch();
        let mut two = drain.watch();
        let mut cx = Context::from_waker(&first_waker);
        // Waiting again with the same waker keeps the one slot.
        assert!(one.poll_started(&mut cx).is_pending());
        assert!(one.poll_started(&mut cx).is_pending());
        assert!(
            two.poll_started(&mut Context::from_waker(&second_waker))
                .is_pending()
        );
        assert_eq!(drain.slots.borrow().len(), 2);
        drain.start();
        drain.start();
        assert_eq!(first.get(), 1);
        assert_eq!(second.get(), 1);
        assert!(one.started());
        assert!(one.poll_started(&mut cx).is_ready());
        // A connection opened after the drain started sees it at once.
        assert!(drain.watch().poll_started(&mut cx).is_ready());
    }

    #[test]
    fn a_closed_connection_gives_its_slot_back() {
        let drain = Drain::default();
        let (woken, waker) = WakeCount::waker();
        let mut cx = Context::from_waker(&waker);
        {
            let mut gone = drain.watch();
            assert!(gone.poll_started(&mut cx).is_pending());
        }
        let mut next = drain.watch();
        assert!(next.poll_started(&mut cx).is_pending());
        assert_eq!(drain.slots.borrow().len(), 1, "the slot was reused");
        drop(next);
        drain.start();
        assert_eq!(woken.get(), 0, "no connection was waiting");
    }
}
