//! What a tunnel connection does between attempts (PROTOCOL.md §6.2), as a state
//! machine without IO: the driver dials and waits, and hands each ended attempt to
//! [`Reconnect::after`], which says whether to stop, and if not, which transport to
//! dial next, at which edge address, after what delay. Before each attempt
//! [`Reconnect::target`] says whether the address held is dialled again or a new one
//! must be taken from the pool (and which one to avoid); the driver reports what the
//! pool gave with [`Reconnect::acquired`] or [`Reconnect::acquire_failed`], which
//! says how long to wait before asking again. Start at [`Reconnect::for_connection`].
//!
//! The rules, as cloudflared has them:
//! - a drain ends the connection; a registration the edge refuses for good stops it;
//! - a connection that had registered starts its backoff over;
//! - an edge that timed out the connection, or reports this connector as a duplicate,
//!   is left for another address; a dial failure moves on too;
//! - with `Auto`, QUIC is left for HTTP/2 (at a fresh address, backoff reset) as soon
//!   as QUIC looks broken on this network (an idle timeout, a socket the system
//!   refuses), or after as many QUIC attempts in a row failed to register as the
//!   backoff's exponent cap (`--retries`). It stays on HTTP/2 from then on;
//! - the address held is kept while the edge says `Same`; `Another` takes a new one
//!   avoiding it (and keeps avoiding it until a transport switch); `Fresh` (the
//!   switch to HTTP/2) gives every address back and takes a new one with nothing
//!   avoided;
//! - when the pool has no address to give, the connection waits on a backoff of its
//!   own, which starts over once an address was had.
//!
//! Nothing here reads a clock: delays come out as durations the driver sleeps for.

use std::net::SocketAddr;
use std::time::Duration;

use crate::backoff::{Backoff, BackoffConfig};
use crate::registration::RegistrationError;

/// The transport a connection is configured for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// QUIC only.
    Quic,
    /// HTTP/2 over TLS only.
    Http2,
    /// QUIC, falling back to HTTP/2 when QUIC cannot connect.
    Auto,
}

/// The transport one attempt dials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dial {
    /// QUIC (UDP).
    Quic,
    /// HTTP/2 over TLS (TCP).
    Http2,
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// Drained or shut down on request.
    Drained,
    /// The edge could not be reached, or the handshake failed.
    DialFailed {
        /// The system refused the socket ("operation not permitted": UDP blocked).
        socket_refused: bool,
    },
    /// The edge refused the registration.
    Refused(RegistrationError),
    /// An established connection ended.
    Lost {
        /// It had registered.
        registered: bool,
        /// The edge stopped answering (idle timeout).
        timed_out: bool,
        /// The system refused the socket.
        socket_refused: bool,
    },
}

/// Which edge address the next attempt dials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    /// The one just tried.
    Same,
    /// Another one of the same transport, avoiding the one just tried.
    Another,
    /// A fresh one of the transport just switched to.
    Fresh,
}

/// Where the next attempt dials, as [`Reconnect::target`] says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The address the connection holds.
    Held(SocketAddr),
    /// A new address from the pool of the transport to dial, other than `avoid`
    /// when the pool has a choice; report it with [`Reconnect::acquired`].
    Acquire {
        /// The address to stay off.
        avoid: Option<SocketAddr>,
    },
}

/// What the driver does after an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Stop: drained.
    Stop,
    /// Stop for good: the edge refused the registration and would again.
    GiveUp(RegistrationError),
    /// Dial again.
    Retry {
        /// The transport to dial (changed when QUIC was given up for HTTP/2).
        dial: Dial,
        /// Where; with [`Edge::Fresh`] the driver gives back every address the
        /// connection holds, in the pools of both transports.
        edge: Edge,
        /// How long to wait first.
        delay: Duration,
        /// QUIC was given up for HTTP/2 with this attempt.
        fell_back: bool,
    },
}

/// The reconnect state of one HA connection.
#[derive(Debug, Clone)]
pub struct Reconnect {
    auto: bool,
    dial: Dial,
    backoff: Backoff,
    /// QUIC attempts in a row that did not register (for `Auto`).
    quic_failures: u32,
    /// After this many, `Auto` falls back.
    fallback_after: u32,
    /// The wait when the pool had no address to give.
    no_addr: Backoff,
    /// The address held; `None` when the next attempt needs a new one.
    held: Option<SocketAddr>,
    /// The address a new one should differ from.
    avoid: Option<SocketAddr>,
}

impl Reconnect {
    /// The state of connIndex `index` of a tunnel whose jitter is drawn from
    /// `tunnel_seed`: each index gets a seed of its own, so HA connections that
    /// fail together do not retry in step.
    pub fn for_connection(
        start: Start,
        backoff: BackoffConfig,
        tunnel_seed: u64,
        index: u8,
    ) -> Self {
        let seed = tunnel_seed ^ u64::from(index + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        Self::new(start, backoff, seed)
    }

    /// The state before the first attempt, the backoff's jitter drawn from `seed`.
    pub fn new(start: Start, backoff: BackoffConfig, seed: u64) -> Self {
        Self {
            auto: start == Start::Auto,
            dial: match start {
                Start::Http2 => Dial::Http2,
                Start::Quic | Start::Auto => Dial::Quic,
            },
            backoff: Backoff::new(backoff, seed),
            quic_failures: 0,
            fallback_after: backoff.max_exponent.max(1),
            no_addr: Backoff::new(backoff, seed.rotate_left(17)),
            held: None,
            avoid: None,
        }
    }

    /// Where the next attempt dials: the address held, or a new one.
    pub fn target(&self) -> Target {
        match self.held {
            Some(addr) => Target::Held(addr),
            None => Target::Acquire { avoid: self.avoid },
        }
    }

    /// The pool gave `addr` for [`Target::Acquire`]: it is held from now on, and
    /// the wait for an address starts over.
    pub fn acquired(&mut self, addr: SocketAddr) {
        self.no_addr.reset();
        self.held = Some(addr);
    }

    /// The pool had no address for [`Target::Acquire`] (none free, discovery
    /// failed): how long to wait before asking again.
    pub fn acquire_failed(&mut self) -> Duration {
        self.no_addr.next_delay()
    }

    /// The transport the next attempt dials.
    pub fn dial(&self) -> Dial {
        self.dial
    }

    /// Failed attempts since the last registration (sent with the next one).
    pub fn attempts(&self) -> u32 {
        self.backoff.attempts()
    }

    /// Takes an ended attempt and says what follows.
    pub fn after(&mut self, ended: Ended) -> Next {
        let fall_back = self.auto && self.dial == Dial::Quic && self.quic_gives_up(&ended);
        let rotate = match ended {
            Ended::Drained => return Next::Stop,
            Ended::DialFailed { .. } => true,
            Ended::Lost {
                registered,
                timed_out,
                ..
            } => {
                if registered {
                    self.backoff.reset();
                }
                timed_out
            }
            Ended::Refused(RegistrationError::Duplicate) => true,
            Ended::Refused(error) if error.should_retry() => false,
            Ended::Refused(error) => return Next::GiveUp(error),
        };
        let edge = if fall_back {
            self.dial = Dial::Http2;
            self.backoff.reset();
            self.held = None;
            self.avoid = None;
            Edge::Fresh
        } else if rotate {
            // The address just dialled; kept when the attempt had none.
            if let Some(addr) = self.held.take() {
                self.avoid = Some(addr);
            }
            Edge::Another
        } else {
            Edge::Same
        };
        Next::Retry {
            dial: self.dial,
            edge,
            delay: self.backoff.next_delay(),
            fell_back: fall_back,
        }
    }

    /// Counts a QUIC attempt for `Auto`; whether QUIC should be given up now.
    fn quic_gives_up(&mut self, ended: &Ended) -> bool {
        let broken = match *ended {
            Ended::DialFailed { socket_refused } => {
                self.quic_failures += 1;
                socket_refused
            }
            Ended::Lost {
                registered,
                timed_out,
                socket_refused,
            } => {
                if registered {
                    self.quic_failures = 0;
                } else {
                    self.quic_failures += 1;
                }
                timed_out || socket_refused
            }
            Ended::Drained | Ended::Refused(_) => false,
        };
        broken || self.quic_failures >= self.fallback_after
    }
}

#[cfg(test)]
mod tests;
