//! The simulator's book of connections: who is connected, registered (for which
//! tunnel) or draining, how many streams each is serving, and a bounded event log.
//!
//! All access goes through short critical sections of a `std::sync::Mutex` that are
//! never held across an `.await`. Picking a connection for a request counts the
//! stream in the same section, so an unregister never misses a stream that was
//! already handed out.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use serde::Serialize;
use tokio::sync::watch;

use culvert_connector::io::{InFlight, InFlightGuard};
use culvert_tunnel_proto::{RegisterConnection, Uuid};

/// How many log lines the status endpoint keeps.
const MAX_EVENTS: usize = 1000;

/// Where one connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SimConnectionState {
    /// Connected; no successful registration yet.
    Connected,
    /// Registered: eligible for requests.
    Registered,
    /// Unregistered by the connector: no new streams.
    Draining,
}

/// Which transport a connection uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SimTransport {
    /// QUIC (a `--quic` listener).
    Quic,
    /// HTTP/2 over TLS (an `--h2` listener).
    Http2,
}

/// A connection the simulator can open request streams on.
#[derive(Clone)]
pub(crate) enum SimConn {
    Quic(quinn::Connection),
    Http2 {
        /// Opens requests (the simulator is the HTTP/2 client).
        send: h2::client::SendRequest<Bytes>,
        peer: SocketAddr,
        /// Becomes `true` when the connection task ended.
        closed: watch::Receiver<bool>,
    },
}

impl SimConn {
    fn peer(&self) -> SocketAddr {
        match self {
            Self::Quic(conn) => conn.remote_address(),
            Self::Http2 { peer, .. } => *peer,
        }
    }

    fn transport(&self) -> SimTransport {
        match self {
            Self::Quic(_) => SimTransport::Quic,
            Self::Http2 { .. } => SimTransport::Http2,
        }
    }

    fn is_closed(&self) -> bool {
        match self {
            Self::Quic(conn) => conn.close_reason().is_some(),
            Self::Http2 { closed, .. } => *closed.borrow(),
        }
    }
}

/// One connection, as the status endpoint shows it.
#[derive(Debug, Clone, Serialize)]
pub struct SimConnection {
    /// The simulator's own ID for the connection.
    pub id: u64,
    /// The listener it came in on.
    pub listener: SocketAddr,
    /// QUIC or HTTP/2.
    pub transport: SimTransport,
    /// The connector's address.
    pub peer: SocketAddr,
    /// Its state.
    pub state: SimConnectionState,
    /// Its connIndex, once it registered.
    pub conn_index: Option<u8>,
    /// The connector's client UUID.
    pub client_id: Option<String>,
    /// The connector's version.
    pub version: Option<String>,
    /// The connector's arch.
    pub arch: Option<String>,
    /// The features it announced.
    pub features: Vec<String>,
    /// The connection UUID the simulator assigned.
    pub connection_id: Option<String>,
    /// The tunnel it registered for.
    pub tunnel_id: Option<String>,
    /// When it registered (RFC 3339).
    pub registered_at: Option<String>,
    /// How many registration attempts it retried before (from its options).
    pub num_previous_attempts: Option<u8>,
    /// Streams being served now.
    pub in_flight: usize,
    /// Streams opened on it so far.
    pub streams: u64,
    /// The last `updateLocalConfiguration` JSON, if any.
    pub local_config: Option<String>,
}

struct Entry {
    info: SimConnection,
    conn: SimConn,
    in_flight: Arc<InFlight>,
    /// Set when the connection's tunnel was deleted with `cascade`.
    evict: watch::Sender<bool>,
}

/// Registry of the simulator's connections.
pub(crate) struct Registry {
    next_id: u64,
    entries: BTreeMap<u64, Entry>,
    next_pick: usize,
    events: VecDeque<String>,
    log: bool,
}

impl Registry {
    pub(crate) fn new(log: bool) -> Self {
        Self {
            next_id: 1,
            entries: BTreeMap::new(),
            next_pick: 0,
            events: VecDeque::new(),
            log,
        }
    }

    /// Records an event (and prints it when logging is on).
    pub(crate) fn event(&mut self, line: String) {
        if self.log {
            eprintln!("culvert-edge-sim: {line}");
        }
        if self.events.len() == MAX_EVENTS {
            self.events.pop_front();
        }
        self.events.push_back(line);
    }

    pub(crate) fn add(&mut self, listener: SocketAddr, conn: SimConn) -> (u64, Arc<InFlight>) {
        let id = self.next_id;
        self.next_id += 1;
        let in_flight = Arc::new(InFlight::default());
        let peer = conn.peer();
        let transport = conn.transport();
        self.entries.insert(
            id,
            Entry {
                info: SimConnection {
                    id,
                    listener,
                    transport,
                    peer,
                    state: SimConnectionState::Connected,
                    conn_index: None,
                    client_id: None,
                    version: None,
                    arch: None,
                    features: Vec::new(),
                    connection_id: None,
                    tunnel_id: None,
                    registered_at: None,
                    num_previous_attempts: None,
                    in_flight: 0,
                    streams: 0,
                    local_config: None,
                },
                conn,
                in_flight: Arc::clone(&in_flight),
                evict: watch::channel(false).0,
            },
        );
        (id, in_flight)
    }

    /// Whether another live registration has the same listener, client and index.
    pub(crate) fn is_duplicate(&self, id: u64, request: &RegisterConnection) -> bool {
        let Some(me) = self.entries.get(&id) else {
            return false;
        };
        let client = Uuid::from_slice(&request.options.client.client_id).map(|u| u.to_string());
        self.entries.values().any(|e| {
            e.info.id != id
                && e.info.listener == me.info.listener
                && e.info.state != SimConnectionState::Connected
                && e.info.conn_index == Some(request.conn_index)
                && e.info.client_id == client
        })
    }

    pub(crate) fn register(
        &mut self,
        id: u64,
        request: &RegisterConnection,
        connection_id: Uuid,
        tunnel_id: Uuid,
        at: String,
    ) {
        if let Some(e) = self.entries.get_mut(&id) {
            e.info.tunnel_id = Some(tunnel_id.to_string());
            e.info.registered_at = Some(at);
            let client = &request.options.client;
            e.info.state = SimConnectionState::Registered;
            e.info.conn_index = Some(request.conn_index);
            e.info.client_id = Some(
                Uuid::from_slice(&client.client_id)
                    .map_or_else(|| format!("{:02x?}", client.client_id), |u| u.to_string()),
            );
            e.info.version = Some(client.version.clone());
            e.info.arch = Some(client.arch.clone());
            e.info.features = client.features.clone();
            e.info.connection_id = Some(connection_id.to_string());
            e.info.num_previous_attempts = Some(request.options.num_previous_attempts);
        }
    }

    pub(crate) fn set_local_config(&mut self, id: u64, config: &[u8]) {
        if let Some(e) = self.entries.get_mut(&id) {
            e.info.local_config = Some(String::from_utf8_lossy(config).into_owned());
        }
    }

    /// Becomes `true` when the connection must be closed because its tunnel was
    /// deleted.
    pub(crate) fn evicted(&self, id: u64) -> Option<watch::Receiver<bool>> {
        self.entries.get(&id).map(|e| e.evict.subscribe())
    }

    /// Closes every connection of `tunnel` (through [`Registry::evicted`]); returns
    /// how many.
    pub(crate) fn evict_tunnel(&mut self, tunnel: &str) -> usize {
        let mut count = 0;
        for e in self.entries.values_mut() {
            if e.info.tunnel_id.as_deref() == Some(tunnel) {
                e.info.state = SimConnectionState::Draining;
                e.evict.send_replace(true);
                count += 1;
            }
        }
        count
    }

    /// Marks a connection as draining; it gets no new streams.
    pub(crate) fn unregister(&mut self, id: u64) {
        if let Some(e) = self.entries.get_mut(&id) {
            e.info.state = SimConnectionState::Draining;
        }
    }

    pub(crate) fn remove(&mut self, id: u64) -> Option<SimConnection> {
        self.entries.remove(&id).map(|e| e.info)
    }

    /// The next registered connection of `tunnel`, round robin, with its stream
    /// counted.
    pub(crate) fn pick(&mut self, tunnel: Uuid) -> Option<(u64, SimConn, InFlightGuard)> {
        let tunnel = tunnel.to_string();
        let healthy: Vec<u64> = self
            .entries
            .values()
            .filter(|e| e.info.state == SimConnectionState::Registered && !e.conn.is_closed())
            .filter(|e| e.info.tunnel_id.as_deref() == Some(tunnel.as_str()))
            .map(|e| e.info.id)
            .collect();
        if healthy.is_empty() {
            return None;
        }
        let id = *healthy.get(self.next_pick % healthy.len())?;
        self.next_pick = self.next_pick.wrapping_add(1);
        let entry = self.entries.get_mut(&id)?;
        entry.info.streams += 1;
        Some((id, entry.conn.clone(), entry.in_flight.enter()))
    }

    /// Every QUIC connection handle (for shutdown; HTTP/2 connections end with
    /// their tasks).
    pub(crate) fn quic_connections(&self) -> Vec<quinn::Connection> {
        self.entries
            .values()
            .filter_map(|e| match &e.conn {
                SimConn::Quic(conn) => Some(conn.clone()),
                SimConn::Http2 { .. } => None,
            })
            .collect()
    }

    pub(crate) fn snapshot(&self) -> (Vec<SimConnection>, Vec<String>) {
        let conns = self
            .entries
            .values()
            .map(|e| {
                let mut info = e.info.clone();
                info.in_flight = e.in_flight.count();
                info
            })
            .collect();
        (conns, self.events.iter().cloned().collect())
    }
}
