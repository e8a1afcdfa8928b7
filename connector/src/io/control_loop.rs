//! The transport-independent half of a connection's serving loop, shared by the
//! QUIC driver (`connection.rs`) and the HTTP/2 driver (`http2/`): what a drain
//! request does, and what each control-stream event (registration, configuration,
//! unregistration, closure) does to the connection. The drivers keep the sockets,
//! streams and timers; this only decides, and says when the loop must end.

use std::fmt::Display;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::watch;
use tokio::time::{Instant, sleep_until};

use super::attempt::{Outcome, lost};
use super::body::InFlight;
use super::shared::Shared;
use super::status::ConnectionState;
use crate::proto::{ClientEvent, ControlClient};

/// What happened on a connection's drain side.
#[derive(Debug)]
pub(crate) enum DrainEvent {
    /// The drain channel changed: drain with this deadline (`None`: nothing to do).
    Signal(Option<Instant>),
    /// Unregistered, and the last in-flight stream ended.
    Idle,
    /// The grace period for in-flight streams ran out.
    GraceOver,
}

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

    /// Waits for the next drain-side event this connection waits for: the drain
    /// signal (until draining), the last in-flight stream ending (once
    /// unregistered) or the grace period running out; `Some` ends the loop. Holds
    /// no borrow of `self` while it waits, so it sits beside the driver's own arms
    /// in one `select!`; the event is applied with [`Self::on_drain_event`].
    pub(crate) fn next_drain_event<'w>(
        &self,
        drain: &'w mut watch::Receiver<Option<Instant>>,
        in_flight: &'w InFlight,
    ) -> impl Future<Output = DrainEvent> + 'w {
        let (signal, idle, grace) = (!self.draining, self.close_when_idle, self.grace_deadline);
        async move {
            let far = Instant::now() + std::time::Duration::from_secs(86_400 * 365);
            tokio::select! {
                changed = drain.changed(), if signal => DrainEvent::Signal(
                    if changed.is_ok() { *drain.borrow_and_update() } else { None },
                ),
                () = in_flight.wait_idle(), if idle => DrainEvent::Idle,
                () = sleep_until(grace.unwrap_or(far)), if grace.is_some() => DrainEvent::GraceOver,
                else => std::future::pending().await,
            }
        }
    }

    /// Applies a [`Self::next_drain_event`]; `Some` ends the loop. `in_flight` is
    /// the number of streams being served, for the logs.
    pub(crate) fn on_drain_event(
        &mut self,
        client: &mut ControlClient,
        event: DrainEvent,
        in_flight: usize,
    ) -> Option<Outcome> {
        match event {
            DrainEvent::Signal(deadline) => self.on_drain(client, deadline),
            DrainEvent::Idle => Some(Outcome::Drained),
            DrainEvent::GraceOver => {
                tracing::info!(conn_index = self.index, in_flight, "grace period over");
                Some(Outcome::Drained)
            }
        }
    }

    /// The drain channel said `deadline` (`None`: nothing to do). Unregisters a
    /// registered connection; `Some` ends the loop.
    fn on_drain(
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

    /// Applies what a read of the control stream gave: bytes, its end (`None`) or
    /// an error. The end or an error while draining only marks the stream done;
    /// otherwise they end the loop (`Some`), as does input the client refuses.
    pub(crate) fn on_control_read<E: Display>(
        &mut self,
        client: &mut ControlClient,
        read: Option<Result<&[u8], E>>,
    ) -> Option<Outcome> {
        match read {
            Some(Ok(bytes)) => client
                .handle_input(bytes, Instant::now().into_std())
                .err()
                .map(|e| lost(self.registered, format!("control stream: {e}"))),
            None | Some(Err(_)) if self.draining => {
                self.ctrl_done = true;
                None
            }
            None => Some(lost(
                self.registered,
                "the edge closed the control stream".to_owned(),
            )),
            Some(Err(e)) => Some(lost(
                self.registered,
                format!("reading the control stream: {e}"),
            )),
        }
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
                        return Some(lost(
                            self.registered,
                            format!("the edge aborted the control stream: {reason}"),
                        ));
                    }
                }
            }
        }
        None
    }
}
