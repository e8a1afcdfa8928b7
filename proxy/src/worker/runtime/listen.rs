//! A worker's listening sockets: one per address per worker (SO_REUSEPORT, so the
//! kernel spreads connections over the workers), with the options every accepted
//! connection should start with set once on the listener instead of per connection.

use std::net::SocketAddr;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::TcpListener;

use crate::Error;

/// Pending connections per listening socket.
const BACKLOG: i32 = 1024;

/// How long the kernel holds a connection that has sent nothing before handing it
/// over anyway; the worker's header timeout then applies. The same as the header
/// timeout's default, as nginx's `deferred` takes its `client_header_timeout`.
pub(crate) const DEFER_ACCEPT: Duration = crate::ClientLimits::HEADER_READ_TIMEOUT;

/// A non-blocking listening socket on `addr` with SO_REUSEADDR and SO_REUSEPORT, so
/// every worker can bind the same address, and with TCP_NODELAY, which Linux copies
/// to every accepted socket (no setsockopt per connection; checked by a test).
///
/// On Linux also TCP_DEFER_ACCEPT (nginx's `listen ... deferred`, HAProxy's
/// `defer-accept`): HTTP and TLS clients speak first, so a connection is handed to
/// the worker only once its first bytes are in. Accepting and reading then take one
/// wake-up of the worker instead of two, and a client that connects and says nothing
/// costs no task until [`DEFER_ACCEPT`] has passed.
pub(crate) fn bind(addr: SocketAddr) -> Result<TcpListener, Error> {
    let bind = |addr: SocketAddr| -> std::io::Result<TcpListener> {
        let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
        socket.set_reuse_address(true)?;
        #[cfg(unix)]
        socket.set_reuse_port(true)?;
        if addr.is_ipv6() {
            socket.set_only_v6(true)?;
        }
        socket.set_nonblocking(true)?;
        socket.set_tcp_nodelay(true)?;
        #[cfg(target_os = "linux")]
        defer_accept::set(&socket, DEFER_ACCEPT)?;
        socket.bind(&addr.into())?;
        socket.listen(BACKLOG)?;
        TcpListener::from_std(socket.into())
    };
    bind(addr).map_err(|source| Error::Bind { addr, source })
}

/// TCP_DEFER_ACCEPT, which socket2 does not cover.
#[cfg(target_os = "linux")]
#[allow(unsafe_code, reason = "setsockopt and getsockopt are foreign calls")]
pub(crate) mod defer_accept {
    use std::io;
    use std::os::fd::AsRawFd;
    use std::time::Duration;

    use socket2::Socket;

    /// Sets TCP_DEFER_ACCEPT to `wait` (whole seconds; the kernel rounds it to its
    /// SYN-ACK retransmissions).
    pub(in crate::worker) fn set(socket: &Socket, wait: Duration) -> io::Result<()> {
        let seconds = libc::c_int::try_from(wait.as_secs()).unwrap_or(libc::c_int::MAX);
        // SAFETY: the descriptor is open (borrowed from `socket`), and the value is a
        // `c_int` whose size is passed with it.
        let result = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_DEFER_ACCEPT,
                (&raw const seconds).cast(),
                socklen(),
            )
        };
        if result == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// The TCP_DEFER_ACCEPT a socket has, in seconds (0: off).
    #[cfg(test)]
    pub(in crate::worker) fn get(socket: &impl AsRawFd) -> io::Result<libc::c_int> {
        let mut seconds: libc::c_int = 0;
        let mut len = socklen();
        // SAFETY: the descriptor is open, and the kernel writes at most `len` bytes
        // into `seconds`, which is that large.
        let result = unsafe {
            libc::getsockopt(
                socket.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_DEFER_ACCEPT,
                (&raw mut seconds).cast(),
                &raw mut len,
            )
        };
        if result == 0 {
            Ok(seconds)
        } else {
            Err(io::Error::last_os_error())
        }
    }

    fn socklen() -> libc::socklen_t {
        // A `c_int` is 4 bytes; this cannot truncate.
        libc::socklen_t::try_from(size_of::<libc::c_int>()).unwrap_or(4)
    }
}
