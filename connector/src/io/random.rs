//! Randomness from the operating system (through aws-lc-rs, the one crypto
//! provider): connector and connection UUIDs, jitter seeds, DNS query IDs.

use super::tls;
use crate::Error;
use crate::proto::Uuid;

/// `n` random bytes from the operating system (through aws-lc-rs).
pub fn random_bytes<const N: usize>() -> Result<[u8; N], Error> {
    let mut out = [0u8; N];
    tls::crypto_provider()
        .secure_random
        .fill(&mut out)
        .map_err(|e| Error::Rustls {
            what: "random source".to_owned(),
            source: e.into(),
        })?;
    Ok(out)
}

/// A random (version 4) UUID.
pub fn random_uuid() -> Result<Uuid, Error> {
    let mut bytes = random_bytes::<16>()?;
    if let Some(b) = bytes.get_mut(6) {
        *b = (*b & 0x0f) | 0x40;
    }
    if let Some(b) = bytes.get_mut(8) {
        *b = (*b & 0x3f) | 0x80;
    }
    Ok(Uuid::from_bytes(bytes))
}
