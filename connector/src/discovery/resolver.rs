//! The stub resolver's network side: sends a query from [`message`] over UDP (TCP
//! when the reply is truncated) and waits, bounded by the [`ResolverConfig`].
//!
//! Each query gets a random ID and goes out from a fresh socket on a random source
//! port, connected to the nameserver so only its datagrams arrive. A datagram that
//! is not the reply to this query (another ID or question) is dropped and the wait
//! goes on. Every nameserver is tried in turn, `attempts` rounds; a definite answer
//! (no error, or "no such name") ends the search, a server failure or a refusal moves
//! on to the next nameserver.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpStream, UdpSocket};

use super::message::{self, Name, RCODE_NOERROR, RCODE_NXDOMAIN, Received, RecordType, Reply};
use super::resolv_conf::ResolverConfig;
use crate::Error;
use crate::io::random_bytes;

/// The largest DNS message read (UDP or TCP).
const MAX_MESSAGE: usize = 65_535;
/// Random source ports are drawn from here; after this many busy ones the
/// system picks.
const PORT_TRIES: usize = 8;

/// A stub resolver over the configured nameservers.
#[derive(Debug, Clone)]
pub struct Resolver {
    config: ResolverConfig,
}

impl Resolver {
    /// A resolver asking `config`'s nameservers.
    pub fn new(config: ResolverConfig) -> Self {
        Self { config }
    }

    /// Its configuration.
    pub fn config(&self) -> &ResolverConfig {
        &self.config
    }

    /// Asks for `rtype` records of `name`. The reply's rcode is either no error or
    /// "no such name" (then the answers are empty); every other outcome is an error
    /// naming the last failure.
    pub async fn query(&self, name: &Name, rtype: RecordType) -> Result<Reply, Error> {
        let mut last = String::from("no nameserver configured");
        for _ in 0..self.config.attempts.max(1) {
            for &server in &self.config.nameservers {
                match exchange(server, name, rtype, self.config.timeout).await {
                    Ok(reply) if reply.rcode == RCODE_NOERROR => return Ok(reply),
                    Ok(mut reply) if reply.rcode == RCODE_NXDOMAIN => {
                        reply.answers.clear();
                        return Ok(reply);
                    }
                    Ok(reply) => last = format!("{server}: {}", rcode_text(reply.rcode)),
                    Err(error) => last = format!("{server}: {}", describe(&error)),
                }
            }
        }
        Err(Error::Dns {
            name: name.to_string(),
            reason: last,
        })
    }
}

/// An error with its cause, if it has one (an I/O error's message names only
/// what was being done).
fn describe(error: &Error) -> String {
    match std::error::Error::source(error) {
        Some(source) => format!("{error}: {source}"),
        None => error.to_string(),
    }
}

/// A timeout as an error.
fn timed_out(what: String) -> Error {
    Error::Io {
        what,
        source: std::io::ErrorKind::TimedOut.into(),
    }
}

fn rcode_text(rcode: u8) -> String {
    match rcode {
        1 => "format error".to_owned(),
        2 => "server failure".to_owned(),
        4 => "not implemented".to_owned(),
        5 => "refused".to_owned(),
        other => format!("response code {other}"),
    }
}

/// One query to one nameserver: UDP, then TCP if the reply is truncated.
async fn exchange(
    server: SocketAddr,
    name: &Name,
    rtype: RecordType,
    timeout: Duration,
) -> Result<Reply, Error> {
    let id = u16::from_be_bytes(random_bytes::<2>()?);
    let query = message::encode_query(id, name, rtype);
    let reply = tokio::time::timeout(timeout, udp(server, &query, id, name, rtype))
        .await
        .map_err(|_| timed_out(format!("no answer within {timeout:?}")))??;
    if !reply.truncated {
        return Ok(reply);
    }
    let id = u16::from_be_bytes(random_bytes::<2>()?);
    let query = message::encode_query(id, name, rtype);
    let reply = tokio::time::timeout(timeout, tcp(server, &query, id, name, rtype))
        .await
        .map_err(|_| timed_out(format!("no tcp answer within {timeout:?}")))??;
    if reply.truncated {
        return Err(Error::DnsMessage("tcp reply is truncated"));
    }
    Ok(reply)
}

fn io_error(what: &str, server: SocketAddr) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        what: format!("{what} {server}"),
        source,
    }
}

/// A UDP socket on a random port of the nameserver's family.
async fn bind_random(server: SocketAddr) -> Result<UdpSocket, Error> {
    let unspecified = |port| match server {
        SocketAddr::V4(_) => SocketAddr::from((Ipv4Addr::UNSPECIFIED, port)),
        SocketAddr::V6(_) => SocketAddr::from((Ipv6Addr::UNSPECIFIED, port)),
    };
    for _ in 0..PORT_TRIES {
        let port = 1024 + u16::from_be_bytes(random_bytes::<2>()?) % (u16::MAX - 1024);
        if let Ok(socket) = UdpSocket::bind(unspecified(port)).await {
            return Ok(socket);
        }
    }
    UdpSocket::bind(unspecified(0))
        .await
        .map_err(io_error("binding a udp socket for", server))
}

async fn udp(
    server: SocketAddr,
    query: &[u8],
    id: u16,
    name: &Name,
    rtype: RecordType,
) -> Result<Reply, Error> {
    let socket = bind_random(server).await?;
    socket
        .connect(server)
        .await
        .map_err(io_error("connecting udp to", server))?;
    socket
        .send(query)
        .await
        .map_err(io_error("sending a query to", server))?;
    let mut buf = vec![0u8; MAX_MESSAGE];
    loop {
        let n = socket
            .recv(&mut buf)
            .await
            .map_err(io_error("receiving from", server))?;
        let datagram = buf.get(..n).unwrap_or_default();
        match message::parse_reply(datagram, id, name, rtype) {
            Ok(Received::Reply(reply)) => return Ok(reply),
            Ok(Received::NotOurs) => {
                tracing::debug!(%server, "dropped a datagram that is not our reply");
            }
            Err(error) => return Err(error),
        }
    }
}

async fn tcp(
    server: SocketAddr,
    query: &[u8],
    id: u16,
    name: &Name,
    rtype: RecordType,
) -> Result<Reply, Error> {
    let mut stream = TcpStream::connect(server)
        .await
        .map_err(io_error("connecting tcp to", server))?;
    let len = u16::try_from(query.len()).map_err(|_| Error::DnsMessage("query too long"))?;
    let mut framed = Vec::with_capacity(query.len() + 2);
    framed.extend_from_slice(&len.to_be_bytes());
    framed.extend_from_slice(query);
    stream
        .write_all(&framed)
        .await
        .map_err(io_error("sending a query to", server))?;
    let len = stream
        .read_u16()
        .await
        .map_err(io_error("reading the reply length from", server))?;
    let mut buf = vec![0u8; usize::from(len)];
    stream
        .read_exact(&mut buf)
        .await
        .map_err(io_error("reading the reply from", server))?;
    match message::parse_reply(&buf, id, name, rtype)? {
        Received::Reply(reply) => Ok(reply),
        Received::NotOurs => Err(Error::DnsMessage("tcp reply is for another query")),
    }
}
