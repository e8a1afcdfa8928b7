//! A 16-byte UUID in canonical text form (`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`).
//!
//! Tunnel IDs, connector client IDs and connection IDs all travel as 16 raw bytes in
//! `Data` fields; this type parses and prints their text form. It never generates
//! UUIDs: randomness belongs to the caller.

use std::fmt;
use std::str::FromStr;

use crate::Error;

/// A UUID as its 16 raw bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Uuid([u8; 16]);

impl Uuid {
    /// The UUID with these raw bytes.
    pub const fn from_bytes(bytes: [u8; 16]) -> Self {
        Self(bytes)
    }

    /// The raw bytes, as they go on the wire.
    pub const fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// The UUID in `bytes`, which must be exactly 16 long.
    pub fn from_slice(bytes: &[u8]) -> Option<Self> {
        <[u8; 16]>::try_from(bytes).ok().map(Self)
    }
}

impl FromStr for Uuid {
    type Err = Error;

    /// Parses the canonical hyphenated form, in either letter case.
    fn from_str(text: &str) -> Result<Self, Error> {
        let bad = || Error::Uuid(text.to_owned());
        let raw = text.as_bytes();
        if raw.len() != 36 {
            return Err(bad());
        }
        let mut out = [0u8; 16];
        let mut nibbles = 0usize;
        for (i, &c) in raw.iter().enumerate() {
            if matches!(i, 8 | 13 | 18 | 23) {
                if c != b'-' {
                    return Err(bad());
                }
                continue;
            }
            let v = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => return Err(bad()),
            };
            let byte = out.get_mut(nibbles / 2).ok_or_else(bad)?;
            *byte = (*byte << 4) | v;
            nibbles += 1;
        }
        Ok(Self(out))
    }
}

impl fmt::Display for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Uuid({self})")
    }
}

#[cfg(test)]
mod tests;
