//! DNS messages (RFC 1035), sans-IO: encodes one query and reads its reply from a
//! `&[u8]`, with no sockets and no clock.
//!
//! Replies are untrusted. Every length and offset is checked before it is used, a
//! compressed name may only point backwards (so pointer chains end) and follows at
//! most [`MAX_POINTERS`] pointers, names are bounded to 255 bytes, and nothing is
//! allocated from a count the message claims. Anything that does not add up is an
//! [`Error::DnsMessage`]; nothing here panics.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::Error;

/// The most compression pointers followed while reading one name.
pub const MAX_POINTERS: usize = 32;
/// The longest name on the wire (RFC 1035 §2.3.4).
const MAX_NAME: usize = 255;
/// The longest label.
const MAX_LABEL: usize = 63;
/// The fixed header size.
const HEADER: usize = 12;
/// Class IN.
const CLASS_IN: u16 = 1;

/// A record type this resolver asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordType {
    /// IPv4 address.
    A,
    /// IPv6 address.
    Aaaa,
    /// Service location (RFC 2782).
    Srv,
}

impl RecordType {
    /// The type code on the wire.
    pub fn code(self) -> u16 {
        match self {
            Self::A => 1,
            Self::Aaaa => 28,
            Self::Srv => 33,
        }
    }
}

/// A domain name in wire form (length-prefixed labels, root label included),
/// ASCII-lowercased so that equal names compare equal.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Name {
    wire: Vec<u8>,
}

impl Name {
    /// Parses a dotted host name (a final dot is optional). Labels are 1 to 63
    /// letters, digits, `-` or `_`; the whole name at most 255 bytes on the wire.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let text = text.strip_suffix('.').unwrap_or(text);
        let mut wire = Vec::with_capacity(text.len() + 2);
        if !text.is_empty() {
            for label in text.split('.') {
                let ok = !label.is_empty()
                    && label.len() <= MAX_LABEL
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
                if !ok {
                    return Err(Error::Config(format!("invalid dns name {text:?}")));
                }
                wire.push(u8::try_from(label.len()).unwrap_or(0));
                wire.extend(label.bytes().map(|b| b.to_ascii_lowercase()));
            }
        }
        wire.push(0);
        if wire.len() > MAX_NAME {
            return Err(Error::Config(format!("dns name too long: {text:?}")));
        }
        Ok(Self { wire })
    }

    /// The root name (`.`), which an SRV target uses to say "no such service".
    pub fn is_root(&self) -> bool {
        self.wire == [0]
    }

    /// The uncompressed wire form.
    pub fn wire(&self) -> &[u8] {
        &self.wire
    }
}

impl fmt::Display for Name {
    /// Dotted, without the final dot; bytes other than letters, digits, `-` and `_`
    /// are written `\DDD`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_root() {
            return f.write_str(".");
        }
        let mut rest = self.wire.as_slice();
        let mut first = true;
        while let Some((&len, tail)) = rest.split_first() {
            if len == 0 {
                break;
            }
            let (label, tail) = tail.split_at(usize::from(len).min(tail.len()));
            if !first {
                f.write_str(".")?;
            }
            first = false;
            for &b in label {
                if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
                    write!(f, "{}", char::from(b))?;
                } else {
                    write!(f, "\\{b:03}")?;
                }
            }
            rest = tail;
        }
        Ok(())
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Name({self})")
    }
}

/// An SRV record's data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Srv {
    /// Lower is preferred.
    pub priority: u16,
    /// Relative weight among equal priorities.
    pub weight: u16,
    /// The service's port.
    pub port: u16,
    /// The host offering it.
    pub target: Name,
}

/// What a resource record holds (only the types the resolver uses are decoded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordData {
    /// An IPv4 address.
    A(Ipv4Addr),
    /// An IPv6 address.
    Aaaa(Ipv6Addr),
    /// A service location.
    Srv(Srv),
    /// An alias: the owner name stands for this one.
    Cname(Name),
    /// Any other type (its code); the data was bounds-checked and skipped.
    Other(u16),
}

/// One resource record of the answer section (class IN only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The owner name.
    pub name: Name,
    /// Seconds it may be cached.
    pub ttl: u32,
    /// The data.
    pub data: RecordData,
}

/// A reply to our query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The TC bit: the answer did not fit the UDP datagram; ask again over TCP.
    pub truncated: bool,
    /// The response code (0 no error, 2 server failure, 3 no such name, 5 refused).
    pub rcode: u8,
    /// The answer section's class-IN records (empty when truncated).
    pub answers: Vec<Record>,
}

/// Response code: no error.
pub const RCODE_NOERROR: u8 = 0;
/// Response code: the name does not exist.
pub const RCODE_NXDOMAIN: u8 = 3;

/// What a datagram turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Received {
    /// The reply to our query.
    Reply(Reply),
    /// Not a reply to our query (another ID, not a response, another question):
    /// to be ignored, as a late or forged datagram.
    NotOurs,
}

/// Encodes a recursive query (RD set) for `name`, class IN.
pub fn encode_query(id: u16, name: &Name, rtype: RecordType) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + name.wire.len() + 4);
    out.extend_from_slice(&id.to_be_bytes());
    // QR=0, opcode 0, RD=1.
    out.extend_from_slice(&0x0100u16.to_be_bytes());
    // One question, no records.
    out.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]);
    out.extend_from_slice(&name.wire);
    out.extend_from_slice(&rtype.code().to_be_bytes());
    out.extend_from_slice(&CLASS_IN.to_be_bytes());
    out
}

/// Reads `msg` as the reply to query `id` for `name`/`rtype`.
///
/// A message with another ID, without the QR bit or with another question is
/// [`Received::NotOurs`]; one that claims to be ours but does not parse is an error.
/// A truncated reply is returned without its answers.
pub fn parse_reply(msg: &[u8], id: u16, name: &Name, rtype: RecordType) -> Result<Received, Error> {
    let mut r = Reader { msg, pos: 0 };
    let got_id = r.u16()?;
    let flags = r.u16()?;
    let qdcount = r.u16()?;
    let ancount = r.u16()?;
    let _nscount = r.u16()?;
    let _arcount = r.u16()?;
    let is_response = flags & 0x8000 != 0;
    if got_id != id || !is_response {
        return Ok(Received::NotOurs);
    }
    let opcode = (flags >> 11) & 0x0f;
    if opcode != 0 {
        return Err(Error::DnsMessage("unexpected opcode"));
    }
    let truncated = flags & 0x0200 != 0;
    let rcode = u8::try_from(flags & 0x000f).unwrap_or(0);
    if qdcount != 1 {
        // A truncated reply may leave the question out; anything else must echo it.
        if truncated && qdcount == 0 {
            return Ok(Received::Reply(Reply {
                truncated,
                rcode,
                answers: Vec::new(),
            }));
        }
        return Err(Error::DnsMessage(
            "reply does not carry exactly one question",
        ));
    }
    let qname = r.name()?;
    let qtype = r.u16()?;
    let qclass = r.u16()?;
    if qname != *name || qtype != rtype.code() || qclass != CLASS_IN {
        return Ok(Received::NotOurs);
    }
    if truncated {
        return Ok(Received::Reply(Reply {
            truncated,
            rcode,
            answers: Vec::new(),
        }));
    }
    let mut answers = Vec::new();
    for _ in 0..ancount {
        if let Some(record) = r.record()? {
            answers.push(record);
        }
    }
    Ok(Received::Reply(Reply {
        truncated,
        rcode,
        answers,
    }))
}

/// A bounds-checked cursor over a message.
struct Reader<'a> {
    msg: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], Error> {
        let end = self
            .pos
            .checked_add(n)
            .ok_or(Error::DnsMessage("length overflow"))?;
        let bytes = self
            .msg
            .get(self.pos..end)
            .ok_or(Error::DnsMessage("message ends early"))?;
        self.pos = end;
        Ok(bytes)
    }

    fn u16(&mut self) -> Result<u16, Error> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([
            b.first().copied().unwrap_or(0),
            b.get(1).copied().unwrap_or(0),
        ]))
    }

    fn u32(&mut self) -> Result<u32, Error> {
        let hi = self.u16()?;
        let lo = self.u16()?;
        Ok((u32::from(hi) << 16) | u32::from(lo))
    }

    /// Reads a possibly compressed name at the cursor and moves past it.
    fn name(&mut self) -> Result<Name, Error> {
        let (name, next) = read_name(self.msg, self.pos)?;
        self.pos = next;
        Ok(name)
    }

    /// One resource record; `None` for a class other than IN.
    fn record(&mut self) -> Result<Option<Record>, Error> {
        let name = self.name()?;
        let rtype = self.u16()?;
        let class = self.u16()?;
        let ttl = self.u32()?;
        let rdlength = usize::from(self.u16()?);
        let start = self.pos;
        let rdata = self.take(rdlength)?;
        if class != CLASS_IN {
            return Ok(None);
        }
        let data = match rtype {
            1 => {
                let octets: [u8; 4] = rdata
                    .try_into()
                    .map_err(|_| Error::DnsMessage("a record is not 4 bytes"))?;
                RecordData::A(Ipv4Addr::from(octets))
            }
            28 => {
                let octets: [u8; 16] = rdata
                    .try_into()
                    .map_err(|_| Error::DnsMessage("aaaa record is not 16 bytes"))?;
                RecordData::Aaaa(Ipv6Addr::from(octets))
            }
            33 => {
                let mut inner = Reader {
                    msg: self.msg,
                    pos: start,
                };
                let priority = inner.u16()?;
                let weight = inner.u16()?;
                let port = inner.u16()?;
                let target = inner.name()?;
                if inner.pos != self.pos {
                    return Err(Error::DnsMessage("srv data length does not match"));
                }
                RecordData::Srv(Srv {
                    priority,
                    weight,
                    port,
                    target,
                })
            }
            5 => {
                let mut inner = Reader {
                    msg: self.msg,
                    pos: start,
                };
                let target = inner.name()?;
                if inner.pos != self.pos {
                    return Err(Error::DnsMessage("cname data length does not match"));
                }
                RecordData::Cname(target)
            }
            other => RecordData::Other(other),
        };
        Ok(Some(Record { name, ttl, data }))
    }
}

/// Reads the name starting at `pos`; returns it and the offset just after it in the
/// original position (after the first pointer, if any).
///
/// A pointer must point before the label it replaces, so every chain of pointers
/// strictly moves backwards and ends; [`MAX_POINTERS`] bounds it as well.
pub fn read_name(msg: &[u8], pos: usize) -> Result<(Name, usize), Error> {
    let mut wire = Vec::new();
    let mut at = pos;
    let mut next = None;
    let mut pointers = 0;
    // Offsets before this one may be pointed at.
    let mut limit = pos;
    loop {
        let len = *msg
            .get(at)
            .ok_or(Error::DnsMessage("name runs past the message"))?;
        match len & 0xc0 {
            0x00 => {
                let len = usize::from(len);
                wire.push(u8::try_from(len).unwrap_or(0));
                if len == 0 {
                    if wire.len() > MAX_NAME {
                        return Err(Error::DnsMessage("name longer than 255 bytes"));
                    }
                    let next = match next {
                        Some(next) => next,
                        None => at + 1,
                    };
                    return Ok((Name { wire }, next));
                }
                let label = msg
                    .get(at + 1..at + 1 + len)
                    .ok_or(Error::DnsMessage("label runs past the message"))?;
                wire.extend(label.iter().map(u8::to_ascii_lowercase));
                if wire.len() >= MAX_NAME {
                    return Err(Error::DnsMessage("name longer than 255 bytes"));
                }
                at += 1 + len;
            }
            0xc0 => {
                let low = *msg
                    .get(at + 1)
                    .ok_or(Error::DnsMessage("pointer runs past the message"))?;
                let target = (usize::from(len & 0x3f) << 8) | usize::from(low);
                pointers += 1;
                if pointers > MAX_POINTERS {
                    return Err(Error::DnsMessage("too many compression pointers"));
                }
                if target >= limit {
                    return Err(Error::DnsMessage("compression pointer does not point back"));
                }
                if next.is_none() {
                    next = Some(at + 2);
                }
                limit = target;
                at = target;
            }
            _ => return Err(Error::DnsMessage("unknown label type")),
        }
    }
}

#[cfg(test)]
mod tests;
