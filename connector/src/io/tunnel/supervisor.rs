//! The supervisor of one connection index: [`run_index`] waits for its turn, then
//! dials, serves and re-dials until drained or refused for good. Every decision
//! (which transport, which edge address, how long to wait) is the sans-IO
//! [`Reconnect`] state machine's; this only acquires addresses, runs the
//! transport's driver, sleeps, and reports on the status channel.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::io::connection;
use crate::io::handler::TunnelHandler;
use crate::io::http2;
use crate::io::shared::Shared;
use crate::io::status::{ConnectionState, TunnelStatus};
use crate::io::transport::Transport;
use crate::proto::reconnect::{Dial, Edge, Next, Reconnect, Start, Target};

fn should_stop(status: &TunnelStatus) -> bool {
    status.draining || status.failure.is_some()
}

/// One connection index: wait for its turn, then connect, serve and reconnect.
pub(super) async fn run_index(shared: Arc<Shared>, index: u8, handler: Rc<dyn TunnelHandler>) {
    let mut drain = shared.drain.subscribe();
    if !wait_for_turn(&shared, index, &mut drain).await {
        shared.set_state(index, ConnectionState::Stopped);
        return;
    }
    let start = start_of(shared.config.transport);
    let mut reconnect = Reconnect::for_connection(start, shared.config.backoff, shared.seed, index);
    loop {
        if should_stop(&shared.status.borrow()) {
            break;
        }
        let transport = transport_of(reconnect.dial());
        let addr = match reconnect.target() {
            Target::Held(addr) => addr,
            Target::Acquire { avoid } => {
                shared.set_state(index, ConnectionState::Connecting);
                let acquired = tokio::select! {
                    acquired = shared.acquire(index, avoid, transport) => acquired,
                    _ = drain.changed() => continue,
                };
                match acquired {
                    Ok(addr) => {
                        reconnect.acquired(addr);
                        addr
                    }
                    Err(error) => {
                        let delay = reconnect.acquire_failed();
                        tracing::warn!(conn_index = index, %error, ?delay, "no edge address; retrying");
                        shared.update(index, |c| {
                            c.state = ConnectionState::Backoff { delay };
                            c.last_error = Some(error.to_string());
                        });
                        sleep_unless_drained(delay, &mut drain).await;
                        continue;
                    }
                }
            }
        };
        shared.update(index, |c| {
            c.state = ConnectionState::Connecting;
            c.edge = Some(addr);
            c.transport = Some(transport);
        });
        let attempts = reconnect.attempts();
        let outcome = match transport {
            Transport::Http2 => {
                http2::run(&shared, index, addr, attempts, &handler, &mut drain).await
            }
            Transport::Quic | Transport::Auto => {
                connection::run(&shared, index, addr, attempts, &handler, &mut drain).await
            }
        };
        let (ended, error) = outcome.ended();
        let (edge, delay) = match reconnect.after(ended) {
            Next::Stop => break,
            Next::GiveUp(error) => {
                tracing::error!(conn_index = index, %error, "registration refused for good");
                shared.refused(index, error);
                break;
            }
            Next::Retry {
                edge,
                delay,
                fell_back,
                ..
            } => {
                if fell_back {
                    tracing::info!(conn_index = index, %error, "quic cannot connect; falling back to http/2");
                }
                (edge, delay)
            }
        };
        if should_stop(&shared.status.borrow()) {
            break;
        }
        if edge == Edge::Fresh {
            // The other transport's pool: the address held in this one goes back.
            shared.release_addr(index);
        }
        tracing::info!(conn_index = index, %error, ?delay, "connection failed; retrying");
        shared.update(index, |c| {
            c.state = ConnectionState::Backoff { delay };
            c.attempts = reconnect.attempts();
            c.last_error = Some(error);
        });
        sleep_unless_drained(delay, &mut drain).await;
    }
    shared.release_addr(index);
    shared.set_state(index, ConnectionState::Stopped);
}

/// Waits for connection `index`'s turn: connIndex 0 goes at once, the others once
/// anything registered, `ha_stagger` apart. `false`: the tunnel stopped first.
async fn wait_for_turn(
    shared: &Shared,
    index: u8,
    drain: &mut watch::Receiver<Option<Instant>>,
) -> bool {
    if index == 0 {
        return true;
    }
    let ready = shared
        .status
        .subscribe()
        .wait_for(|s| s.ever_registered || should_stop(s))
        .await
        .map(|s| should_stop(&s));
    if !matches!(ready, Ok(false)) {
        return false;
    }
    let stagger = shared.config.ha_stagger.saturating_mul(u32::from(index));
    sleep_unless_drained(stagger, drain).await;
    true
}

/// Sleeps for `delay`, or until the drain channel changes.
async fn sleep_unless_drained(delay: Duration, drain: &mut watch::Receiver<Option<Instant>>) {
    tokio::select! {
        () = tokio::time::sleep(delay) => {}
        _ = drain.changed() => {}
    }
}

/// What the reconnect state starts with for the configured transport.
fn start_of(transport: Transport) -> Start {
    match transport {
        Transport::Quic => Start::Quic,
        Transport::Http2 => Start::Http2,
        Transport::Auto => Start::Auto,
    }
}

/// The driver's transport for what the reconnect state says to dial.
fn transport_of(dial: Dial) -> Transport {
    match dial {
        Dial::Quic => Transport::Quic,
        Dial::Http2 => Transport::Http2,
    }
}
