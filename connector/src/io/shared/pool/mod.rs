//! Which connection holds which edge address: [`AddrPool`], one per transport's
//! address list. Pure bookkeeping, touched in short locked sections by `Shared`:
//! connIndex `i` prefers region `i mod regions` and a free address other than the
//! one it was told to avoid; addresses gone from a new discovery stay with their
//! holder until released.

use std::net::SocketAddr;
use std::sync::Mutex;

use crate::discovery::EdgeRegions;

/// One edge address in a pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Slot {
    addr: SocketAddr,
    region: usize,
    owner: Option<u8>,
    /// Gone from the latest discovery but still held by `owner`: given to nobody
    /// else, dropped once released.
    retired: bool,
}

/// Which connection holds which edge address.
#[derive(Debug, Default)]
pub(crate) struct AddrPool {
    slots: Vec<Slot>,
    regions: usize,
}

impl AddrPool {
    /// Static addresses, dealt alternately into two regions.
    pub(crate) fn from_static(addrs: &[SocketAddr]) -> Self {
        Self {
            slots: addrs
                .iter()
                .enumerate()
                .map(|(i, &addr)| Slot {
                    addr,
                    region: i % 2,
                    owner: None,
                    retired: false,
                })
                .collect(),
            regions: addrs.len().clamp(1, 2),
        }
    }

    /// Discovered addresses, one list per region.
    pub(crate) fn from_regions(regions: &[Vec<SocketAddr>]) -> Self {
        let mut slots: Vec<Slot> = Vec::new();
        for (region, addrs) in regions.iter().enumerate() {
            for &addr in addrs {
                if !slots.iter().any(|s| s.addr == addr) {
                    slots.push(Slot {
                        addr,
                        region,
                        owner: None,
                        retired: false,
                    });
                }
            }
        }
        Self {
            slots,
            regions: regions.len().max(1),
        }
    }

    /// How many addresses may be handed out.
    pub(crate) fn live(&self) -> usize {
        self.slots.iter().filter(|s| !s.retired).count()
    }

    /// Replaces the addresses with a new discovery's, keeping who holds what.
    pub(crate) fn replace(&mut self, found: &EdgeRegions) {
        let mut next = Self::from_regions(&found.regions);
        for old in &self.slots {
            let Some(owner) = old.owner else { continue };
            match next.slots.iter_mut().find(|s| s.addr == old.addr) {
                Some(slot) if slot.owner.is_none() => slot.owner = Some(owner),
                _ => next.slots.push(Slot {
                    retired: true,
                    ..*old
                }),
            }
        }
        *self = next;
    }

    /// An address for `index`, preferring its region (`index mod regions`) and a
    /// free one other than `avoid`. With no free address, `share` gives a taken
    /// one (static edges); otherwise `None`.
    pub(crate) fn take(
        &mut self,
        index: u8,
        avoid: Option<SocketAddr>,
        share: bool,
    ) -> Option<SocketAddr> {
        self.release(index);
        let live: Vec<usize> = (0..self.slots.len())
            .filter(|&i| self.slots.get(i).is_some_and(|s| !s.retired))
            .collect();
        let n = live.len();
        if n == 0 {
            return None;
        }
        let start = usize::from(index) % n;
        let order: Vec<usize> = (0..n)
            .filter_map(|i| live.get((start + i) % n).copied())
            .collect();
        let slot = |pos: &usize| self.slots.get(*pos);
        let free = |pos: &usize| slot(pos).is_some_and(|s| s.owner.is_none());
        let not_avoided = |pos: &usize| slot(pos).is_some_and(|s| Some(s.addr) != avoid);
        let region = usize::from(index) % self.regions.max(1);
        let in_region = |pos: &usize| slot(pos).is_some_and(|s| s.region == region);
        let pick = order
            .iter()
            .copied()
            .find(|p| free(p) && not_avoided(p) && in_region(p))
            .or_else(|| order.iter().copied().find(|p| free(p) && not_avoided(p)))
            .or_else(|| order.iter().copied().find(free))
            .or_else(|| share.then(|| order.first().copied()).flatten())?;
        let slot = self.slots.get_mut(pick)?;
        slot.owner = Some(index);
        Some(slot.addr)
    }

    pub(crate) fn release(&mut self, index: u8) {
        for slot in &mut self.slots {
            if slot.owner == Some(index) {
                slot.owner = None;
            }
        }
        self.slots.retain(|s| !s.retired || s.owner.is_some());
    }
}

/// Runs `f` on a pool. The pools are only touched in these short, non-async
/// sections, so a poisoned lock still holds consistent bookkeeping.
pub(crate) fn with<T>(pool: &Mutex<AddrPool>, f: impl FnOnce(&mut AddrPool) -> T) -> T {
    match pool.lock() {
        Ok(mut pool) => f(&mut pool),
        Err(poisoned) => f(&mut poisoned.into_inner()),
    }
}

#[cfg(test)]
mod tests;
