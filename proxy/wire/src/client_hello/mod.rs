//! A TLS ClientHello read without consuming it (RFC 8446 §4.1.2, §5.1; RFC 6066 §3;
//! RFC 7301): what a listener needs to choose where a connection goes before any
//! TLS is done with it (passthrough by SNI), from the bytes the client sent first.
//!
//! [`peek_client_hello`] looks at a buffer that holds the start of a connection and
//! says whether more bytes are needed, that this is not TLS, or what the hello
//! names: the server name and the ALPN protocols. A hello may span several
//! handshake records; one larger than [`MAX_CLIENT_HELLO`] is refused. Nothing a
//! client sends can make it panic.

use std::borrow::Cow;

/// Largest ClientHello read (handshake message body and header). Post-quantum key
/// shares make hellos of 1 to 2 KiB common; 64 KiB leaves room for any real one.
pub const MAX_CLIENT_HELLO: usize = 64 * 1024;

const RECORD_HEADER: usize = 5;
const CONTENT_HANDSHAKE: u8 = 22;
const HANDSHAKE_CLIENT_HELLO: u8 = 1;
const EXTENSION_SERVER_NAME: u16 = 0;
const EXTENSION_ALPN: u16 = 16;
const NAME_TYPE_HOST: u8 = 0;

/// What a ClientHello names.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClientHello {
    /// The `server_name` host name, lower-cased; `None` when the client sent none.
    pub server_name: Option<String>,
    /// The ALPN protocols offered, in the client's order.
    pub alpn: Vec<Vec<u8>>,
}

/// What the bytes so far say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Peeked {
    /// The hello is not complete: look again once the buffer holds at least
    /// `needed` bytes.
    Incomplete {
        /// The least total length worth looking at.
        needed: usize,
    },
    /// The whole hello was read.
    Hello(ClientHello),
}

/// Why the bytes are not a ClientHello this reader accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HelloError {
    /// The connection does not start with a TLS handshake record.
    #[error("not a TLS handshake")]
    NotTls,
    /// A record or the hello breaks its own length fields or the rules above.
    #[error("malformed TLS ClientHello")]
    Malformed,
    /// The hello is larger than [`MAX_CLIENT_HELLO`].
    #[error("TLS ClientHello too large")]
    TooLarge,
}

/// Reads the ClientHello at the start of `buf` (the connection's first bytes, left
/// where they are).
pub fn peek_client_hello(buf: &[u8]) -> Result<Peeked, HelloError> {
    let handshake = match handshake_bytes(buf)? {
        Reassembled::Incomplete { needed } => return Ok(Peeked::Incomplete { needed }),
        Reassembled::Done(handshake) => handshake,
    };
    parse_hello(&handshake).map(Peeked::Hello)
}

enum Reassembled<'a> {
    Incomplete { needed: usize },
    Done(Cow<'a, [u8]>),
}

/// The handshake message (header and body) from as many handshake records as it
/// takes: borrowed from `buf` when one record holds it (the usual case), copied
/// together only when it spans several.
fn handshake_bytes(buf: &[u8]) -> Result<Reassembled<'_>, HelloError> {
    let mut handshake: Cow<'_, [u8]> = Cow::Borrowed(&[]);
    let mut at = 0;
    loop {
        let Some(header) = buf.get(at..at + RECORD_HEADER) else {
            return Ok(Reassembled::Incomplete {
                needed: at + RECORD_HEADER,
            });
        };
        // A record that is not a handshake, or a version not of the 3.x family (TLS
        // 1.0 to 1.3 all write 3.1 to 3.3 there), is not a TLS client start.
        if header[0] != CONTENT_HANDSHAKE || header[1] != 3 {
            return Err(if at == 0 {
                HelloError::NotTls
            } else {
                HelloError::Malformed
            });
        }
        let length = usize::from(u16::from_be_bytes([header[3], header[4]]));
        if length == 0 || length > 16 * 1024 {
            return Err(HelloError::Malformed);
        }
        let end = at + RECORD_HEADER + length;
        let Some(fragment) = buf.get(at + RECORD_HEADER..end) else {
            return Ok(Reassembled::Incomplete { needed: end });
        };
        if at == 0 {
            handshake = Cow::Borrowed(fragment);
        } else {
            handshake.to_mut().extend_from_slice(fragment);
        }
        at = end;
        if handshake.len() >= 4 {
            if handshake[0] != HANDSHAKE_CLIENT_HELLO {
                return Err(HelloError::Malformed);
            }
            let body = usize::from(handshake[1]) << 16
                | usize::from(handshake[2]) << 8
                | usize::from(handshake[3]);
            let total = 4 + body;
            if total > MAX_CLIENT_HELLO {
                return Err(HelloError::TooLarge);
            }
            if handshake.len() >= total {
                // Bytes past the hello in its last record belong to no other
                // message a client may send before the server answers.
                if handshake.len() > total {
                    return Err(HelloError::Malformed);
                }
                return Ok(Reassembled::Done(handshake));
            }
        }
    }
}

/// A cursor over a message's bytes; every read is bounds-checked.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], HelloError> {
        if self.0.len() < n {
            return Err(HelloError::Malformed);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, HelloError> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, HelloError> {
        let bytes = self.take(2)?;
        Ok(u16::from_be_bytes([bytes[0], bytes[1]]))
    }

    /// A vector with a one-byte length.
    fn vec8(&mut self) -> Result<&'a [u8], HelloError> {
        let len = usize::from(self.u8()?);
        self.take(len)
    }

    /// A vector with a two-byte length.
    fn vec16(&mut self) -> Result<&'a [u8], HelloError> {
        let len = usize::from(self.u16()?);
        self.take(len)
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn parse_hello(handshake: &[u8]) -> Result<ClientHello, HelloError> {
    let mut hello = Reader(handshake.get(4..).ok_or(HelloError::Malformed)?);
    let _legacy_version = hello.u16()?;
    let _random = hello.take(32)?;
    if hello.vec8()?.len() > 32 {
        return Err(HelloError::Malformed);
    }
    let suites = hello.vec16()?;
    if suites.is_empty() || suites.len() % 2 != 0 {
        return Err(HelloError::Malformed);
    }
    if hello.vec8()?.is_empty() {
        return Err(HelloError::Malformed);
    }
    let mut found = ClientHello::default();
    // Hellos of SSL 3.0's shape end here, with no extensions.
    if hello.is_empty() {
        return Ok(found);
    }
    let mut extensions = Reader(hello.vec16()?);
    if !hello.is_empty() {
        return Err(HelloError::Malformed);
    }
    let mut seen = Vec::new();
    while !extensions.is_empty() {
        let kind = extensions.u16()?;
        let data = extensions.vec16()?;
        // The same extension twice is an error (RFC 8446 §4.2).
        if seen.contains(&kind) {
            return Err(HelloError::Malformed);
        }
        seen.push(kind);
        match kind {
            EXTENSION_SERVER_NAME => found.server_name = Some(server_name(data)?),
            EXTENSION_ALPN => found.alpn = alpn(data)?,
            _ => {}
        }
    }
    Ok(found)
}

/// The host name of a `server_name` extension (RFC 6066 §3): one `host_name`
/// entry, a DNS name in ASCII without a trailing dot.
fn server_name(data: &[u8]) -> Result<String, HelloError> {
    let mut extension = Reader(data);
    let mut list = Reader(extension.vec16()?);
    if !extension.is_empty() || list.is_empty() {
        return Err(HelloError::Malformed);
    }
    let mut host = None;
    while !list.is_empty() {
        let kind = list.u8()?;
        let name = list.vec16()?;
        if kind != NAME_TYPE_HOST {
            continue;
        }
        if host.is_some() {
            return Err(HelloError::Malformed);
        }
        let valid = !name.is_empty()
            && name.last() != Some(&b'.')
            && name
                .iter()
                .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
        if !valid {
            return Err(HelloError::Malformed);
        }
        host = Some(String::from_utf8_lossy(name).to_ascii_lowercase());
    }
    host.ok_or(HelloError::Malformed)
}

/// The protocols of an ALPN extension (RFC 7301 §3.1): a non-empty list of
/// non-empty names.
fn alpn(data: &[u8]) -> Result<Vec<Vec<u8>>, HelloError> {
    let mut extension = Reader(data);
    let mut list = Reader(extension.vec16()?);
    if !extension.is_empty() || list.is_empty() {
        return Err(HelloError::Malformed);
    }
    let mut protocols = Vec::new();
    while !list.is_empty() {
        let name = list.vec8()?;
        if name.is_empty() {
            return Err(HelloError::Malformed);
        }
        protocols.push(name.to_vec());
    }
    Ok(protocols)
}

#[cfg(test)]
mod tests;
