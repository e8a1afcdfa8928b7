//! The client's memory of TLS sessions, sized for a load run.
//!
//! rustls' default client store keeps at most 8 TLS 1.3 tickets per server. A run
//! with dozens of connections starting at once takes them all, and the rest make full
//! handshakes, so the share of resumed connections would depend on how bunched the
//! starts are. wrk, by contrast, reuses its session on every connection. This store
//! keeps up to [`MAX_TICKETS`] tickets, newest used first. A run talks to one server,
//! so the server name is not part of the key.

use std::collections::VecDeque;
use std::sync::Mutex;

use rustls::NamedGroup;
use rustls::client::{ClientSessionStore, Tls12ClientSessionValue, Tls13ClientSessionValue};
use rustls::pki_types::ServerName;

/// Most TLS 1.3 tickets kept; the oldest go first.
const MAX_TICKETS: usize = 4096;

/// Sessions for the one server a run talks to.
#[derive(Debug, Default)]
pub(crate) struct RunSessions {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    kx_hint: Option<NamedGroup>,
    tls12: Option<Tls12ClientSessionValue>,
    tls13: VecDeque<Tls13ClientSessionValue>,
}

impl RunSessions {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // One thread uses it; a poisoned lock still holds usable sessions.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl ClientSessionStore for RunSessions {
    fn set_kx_hint(&self, _: ServerName<'static>, group: NamedGroup) {
        self.state().kx_hint = Some(group);
    }

    fn kx_hint(&self, _: &ServerName<'_>) -> Option<NamedGroup> {
        self.state().kx_hint
    }

    fn set_tls12_session(&self, _: ServerName<'static>, value: Tls12ClientSessionValue) {
        self.state().tls12 = Some(value);
    }

    fn tls12_session(&self, _: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        self.state().tls12.clone()
    }

    fn remove_tls12_session(&self, _: &ServerName<'static>) {
        self.state().tls12 = None;
    }

    fn insert_tls13_ticket(&self, _: ServerName<'static>, value: Tls13ClientSessionValue) {
        let mut state = self.state();
        if state.tls13.len() == MAX_TICKETS {
            state.tls13.pop_front();
        }
        state.tls13.push_back(value);
    }

    fn take_tls13_ticket(&self, _: &ServerName<'static>) -> Option<Tls13ClientSessionValue> {
        self.state().tls13.pop_back()
    }
}
