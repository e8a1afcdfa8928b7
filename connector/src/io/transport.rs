//! Which transport carries a tunnel connection: [`Transport`], cloudflared's
//! `--protocol` (QUIC, HTTP/2, or QUIC falling back to HTTP/2). A plain value at
//! the bottom of `io`: the configuration, the status and the supervisor name it.

use crate::Error;

/// Which transport carries the tunnel (cloudflared's `--protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transport {
    /// QUIC over UDP (`quic.cftunnel.com`, ALPN `argotunnel`).
    #[default]
    Quic,
    /// HTTP/2 over TLS over TCP (`h2.cftunnel.com`, no ALPN); the edge is the
    /// HTTP/2 client.
    Http2,
    /// QUIC first, HTTP/2 when QUIC cannot connect (see [`Tunnel`](super::Tunnel)).
    Auto,
}

impl Transport {
    /// The `--protocol` spelling: `quic`, `http2` or `auto`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Quic => "quic",
            Self::Http2 => "http2",
            Self::Auto => "auto",
        }
    }
}

impl std::fmt::Display for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Transport {
    type Err = Error;

    /// `quic`, `http2` or `auto`; `h2mux` means `http2`, as in cloudflared.
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "quic" => Ok(Self::Quic),
            "http2" | "h2mux" => Ok(Self::Http2),
            "auto" => Ok(Self::Auto),
            other => Err(Error::Config(format!(
                "unknown tunnel protocol {other:?}: expected quic, http2 or auto"
            ))),
        }
    }
}
