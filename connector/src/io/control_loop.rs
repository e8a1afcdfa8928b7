//! The transport-independent half of a connection's serving loop, shared by the
//! QUIC driver (`connection.rs`) and the HTTP/2 driver (`http2/`): what a drain
//! request does, and what each control-stream event (registration, configuration,
//! unregistration, closure) does to the connection. The drivers keep the sockets,
//! streams and timers; this only decides, and says when the loop must end.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::time::Instant;

use super::connection::Outcome;
use super::tunnel::{ConnectionState, Shared};
use crate::proto::{ClientEvent, ControlClient};

/// Registration and drain state of one connection.
pub(crate) struct ControlLoop<'a> {
    shared: &'a Arc<Shared>,
    index: u8,
    addr: SocketAddr,
    transport: &'static str,
    /// The edge accepted the registration.
    pub(crate) registered: bool,
    /// A drain was requested.
    pub(crate) draining: bool,
    /// Unregistered: close once no stream is in flight.
    pub(crate) close_when_idle: bool,
    /// The control stream is over (closed while draining).
    pub(crate) ctrl_done: bool,
    /// When in-flight streams stop being waited for.
    pub(crate) grace_deadline: Option<Instant>,
}

impl<'a> ControlLoop<'a> {
    pub(crate) fn new(
        shared: &'a Arc<Shared>,
        index: u8,
        addr: SocketAddr,
        transport: &'static str,
    ) -> Self {
        Self {
            shared,
            index,
            addr,
            transport,
            registered: false,
            draining: false,
            close_when_idle: false,
            ctrl_done: false,
            grace_deadline: None,
        }
    }

    /// The drain channel said `deadline` (`None`: nothing to do). Unregisters a
    /// registered connection; `Some` ends the loop.
    pub(crate) fn on_drain(
        &mut self,
        client: &mut ControlClient,
        deadline: Option<Instant>,
    ) -> Option<Outcome> {
        let deadline = deadline?;
        self.draining = true;
        self.grace_deadline = Some(deadline);
        if !self.registered {
            return Some(Outcome::Drained);
        }
        tracing::info!(conn_index = self.index, "unregistering connection");
        self.shared.set_state(self.index, ConnectionState::Draining);
        client
            .unregister(Instant::now().into_std())
            .is_err()
            .then_some(Outcome::Drained)
    }

    /// Handles every pending control event; `Some` ends the loop. `in_flight` is the
    /// number of streams being served, for the logs.
    pub(crate) fn on_events(
        &mut self,
        client: &mut ControlClient,
        in_flight: usize,
    ) -> Option<Outcome> {
        let index = self.index;
        while let Some(event) = client.poll_event() {
            match event {
                ClientEvent::Registered(details) => {
                    self.registered = true;
                    tracing::info!(
                        conn_index = index,
                        addr = %self.addr,
                        location = %details.location_name,
                        transport = self.transport,
                        "connection registered"
                    );
                    self.shared.mark_registered(index, &details);
                    let now = Instant::now().into_std();
                    if index == 0 && !details.tunnel_is_remotely_managed {
                        let _ = client
                            .update_local_configuration(&self.shared.config.local_config, now);
                    }
                    if self.draining {
                        // A drain started while registering: unregister right away.
                        let _ = client.unregister(now);
                    }
                }
                ClientEvent::RegistrationFailed(error) => {
                    return Some(Outcome::Registration(error));
                }
                ClientEvent::LocalConfigurationUpdated => {}
                ClientEvent::LocalConfigurationFailed(reason) => {
                    tracing::warn!(conn_index = index, %reason, "updateLocalConfiguration failed");
                }
                ClientEvent::Unregistered => {
                    tracing::info!(
                        conn_index = index,
                        in_flight,
                        "unregistered; serving in-flight streams"
                    );
                    self.close_when_idle = true;
                }
                ClientEvent::UnregisterFailed(reason) => {
                    tracing::warn!(conn_index = index, %reason, "unregisterConnection failed; closing");
                    return Some(Outcome::Drained);
                }
                ClientEvent::Closed { reason } => {
                    if self.draining {
                        self.ctrl_done = true;
                    } else {
                        return Some(Outcome::Lost {
                            registered: self.registered,
                            rotate: false,
                            reason: format!("the edge aborted the control stream: {reason}"),
                        });
                    }
                }
            }
        }
        None
    }
}
