//! The simulator's randomness: generated tokens and hex identifiers, from the
//! connector's random source (aws-lc-rs), so both ends of a loopback tunnel draw
//! from one provider.

use culvert_connector::io::{random_bytes, random_uuid};
use culvert_tunnel_proto::TunnelToken;

use crate::error::Error;

/// A new token: random account tag, 32-byte secret and tunnel ID.
pub fn generate_token() -> Result<TunnelToken, Error> {
    Ok(TunnelToken {
        account_tag: random_hex::<16>()?,
        tunnel_secret: random_bytes::<32>()?.to_vec(),
        tunnel_id: random_uuid()?,
        endpoint: None,
    })
}

/// `N` random bytes as lowercase hex.
pub(crate) fn random_hex<const N: usize>() -> Result<String, Error> {
    Ok(random_bytes::<N>()?
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}
