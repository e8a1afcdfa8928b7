//! The discovery side of a tunnel without static edges: [`Discovery`] knows the
//! region asked for and until when the pool's addresses are fresh, and lets one
//! connection resolve at a time while the others wait and reuse its answer.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use super::pool::{self, AddrPool};
use crate::Error;
use crate::discovery::{self, DiscoveryConfig, MIN_TTL};

/// The discovery side of a tunnel without static edges.
#[derive(Debug)]
pub(super) struct Discovery {
    config: DiscoveryConfig,
    /// The region asked for: the configured one or the token's endpoint.
    region: Option<String>,
    /// Held while one connection resolves; the others wait and reuse its answer.
    running: tokio::sync::Mutex<()>,
    /// Until when the pool's addresses are fresh.
    fresh_until: Mutex<Option<Instant>>,
}

impl Discovery {
    /// Nothing discovered yet: the first connection to need an address resolves.
    pub(super) fn new(config: DiscoveryConfig, region: Option<String>) -> Self {
        Self {
            config,
            region,
            running: tokio::sync::Mutex::new(()),
            fresh_until: Mutex::new(None),
        }
    }

    /// Discovers the edge into `addrs` if the known addresses are stale. A failure
    /// keeps the old addresses when there are some (and tries again after
    /// [`MIN_TTL`]).
    pub(super) async fn refresh(&self, addrs: &Mutex<AddrPool>) -> Result<(), Error> {
        if !self.stale() {
            return Ok(());
        }
        let _running = self.running.lock().await;
        if !self.stale() {
            return Ok(());
        }
        let found = match self.config.resolver() {
            Ok(resolver) => {
                discovery::discover(&resolver, self.region.as_deref(), self.config.ip_version).await
            }
            Err(error) => Err(error),
        };
        match found {
            Ok(found) => {
                tracing::info!(
                    regions = found.regions.len(),
                    addrs = found.addrs().count(),
                    ttl = ?found.ttl,
                    fallback = found.fallback,
                    "edge discovered"
                );
                pool::with(addrs, |pool| pool.replace(&found));
                self.set_fresh_for(found.ttl.min(self.config.refresh_after));
                Ok(())
            }
            Err(error) if pool::with(addrs, |pool| pool.live()) > 0 => {
                tracing::warn!(%error, "edge discovery failed; keeping the known addresses");
                self.set_fresh_for(MIN_TTL.min(self.config.refresh_after));
                Ok(())
            }
            Err(error) => Err(error),
        }
    }

    fn stale(&self) -> bool {
        let until = match self.fresh_until.lock() {
            Ok(until) => *until,
            Err(poisoned) => *poisoned.into_inner(),
        };
        until.is_none_or(|until| Instant::now() >= until)
    }

    fn set_fresh_for(&self, ttl: Duration) {
        let until = Instant::now() + ttl;
        match self.fresh_until.lock() {
            Ok(mut fresh) => *fresh = Some(until),
            Err(poisoned) => *poisoned.into_inner() = Some(until),
        }
    }
}
