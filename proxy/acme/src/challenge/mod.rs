//! The answers to challenges in flight, shared between a [`Manager`](crate::Manager) that
//! publishes them and the listeners that serve them. Lookups are synchronous and cheap
//! (a read lock on a small map) so a listener can call them on its accept path.
//!
//! An answer is published for as long as its order is being validated: [`Published`]
//! withdraws it when dropped, whatever way the order ended.

mod http01;
mod tls_alpn01;

pub use http01::Http01Challenges;
pub use tls_alpn01::{ACME_TLS_ALPN, TlsAlpnChallenges};

/// Both challenge stores. Clones share the same maps: hand one clone to each
/// [`Manager`](crate::Manager) and the stores to the listeners.
#[derive(Debug, Clone, Default)]
pub struct Challenges {
    http01: Http01Challenges,
    tls_alpn01: TlsAlpnChallenges,
}

impl Challenges {
    /// Empty stores.
    pub fn new() -> Self {
        Self::default()
    }

    /// The HTTP-01 answers, for the port-80 listener.
    pub fn http01(&self) -> &Http01Challenges {
        &self.http01
    }

    /// The TLS-ALPN-01 certificates, for the TLS listeners.
    pub fn tls_alpn01(&self) -> &TlsAlpnChallenges {
        &self.tls_alpn01
    }
}

/// One published answer; dropping it withdraws the answer.
pub(crate) struct Published {
    withdraw: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl Published {
    fn new(withdraw: impl FnOnce() + Send + Sync + 'static) -> Self {
        Self {
            withdraw: Some(Box::new(withdraw)),
        }
    }
}

impl Drop for Published {
    fn drop(&mut self) {
        if let Some(withdraw) = self.withdraw.take() {
            withdraw();
        }
    }
}

/// A map entry tagged with the publication that wrote it, so a withdrawal removes only
/// its own entry even if a later publication replaced it.
type Entry<T> = (u64, T);

fn next_publication() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests;
