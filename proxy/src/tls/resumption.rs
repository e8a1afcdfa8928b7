//! Session resumption that holds however many clients come back, and across config
//! swaps.
//!
//! rustls' default is a stateful cache of 256 sessions per server config: with more
//! clients than that coming back (or each TLS 1.3 connection leaving two tickets in
//! it), sessions are evicted before they are used and clients fall back to full
//! handshakes, and a config swap builds a new cache that knows none of them. Instead
//! every server config of the process shares one ticketer (stateless tickets, as
//! nginx and HAProxy issue by default; aws-lc-rs keys, rotated by rustls every six
//! hours) and, for TLS 1.2 clients that do not take tickets, one larger cache.

use std::sync::{Arc, OnceLock};

use rustls::ServerConfig;
use rustls::server::{ProducesTickets, ServerSessionMemoryCache, StoresServerSessions};

use crate::{Error, TlsError};

/// Sessions the shared cache keeps for TLS 1.2 clients without tickets, about as many
/// as nginx's `ssl_session_cache shared:SSL:10m`.
const CACHED_SESSIONS: usize = 32 * 1024;

/// Makes `server` issue and accept the process's tickets and share its session cache.
pub(super) fn enable(server: &mut ServerConfig) -> Result<(), Error> {
    server.ticketer = ticketer()?;
    server.session_storage = cache();
    Ok(())
}

/// The process's ticketer, made on first use.
fn ticketer() -> Result<Arc<dyn ProducesTickets>, Error> {
    static TICKETER: OnceLock<Arc<dyn ProducesTickets>> = OnceLock::new();
    if let Some(ticketer) = TICKETER.get() {
        return Ok(Arc::clone(ticketer));
    }
    let made = rustls::crypto::aws_lc_rs::Ticketer::new()
        .map_err(|err| Error::Tls(TlsError::Ticketer(err)))?;
    // Two first uses at once each make one; the one stored first wins for both.
    Ok(Arc::clone(TICKETER.get_or_init(|| made)))
}

/// The process's session cache, made on first use.
fn cache() -> Arc<dyn StoresServerSessions> {
    static CACHE: OnceLock<Arc<dyn StoresServerSessions>> = OnceLock::new();
    Arc::clone(CACHE.get_or_init(|| ServerSessionMemoryCache::new(CACHED_SESSIONS)))
}
