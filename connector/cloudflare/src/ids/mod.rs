//! Validated identifiers. Every id that goes into a request path is checked first, so a
//! value from a manifest or an answer can never change which URL is asked for: account
//! and zone ids are 32 lowercase hex characters, tunnel ids are UUIDs, DNS record ids are
//! short runs of letters, digits, `-` and `_`.

use std::fmt;
use std::str::FromStr;

use culvert_tunnel_proto::Uuid;
use serde::{Deserialize, Serialize};

use crate::Error;

/// The longest value repeated in an error message.
const SHOWN: usize = 80;

/// The longest DNS record id accepted (Cloudflare's are 32 characters).
const MAX_RECORD_ID: usize = 64;

fn invalid(kind: &'static str, value: &str, expected: &str) -> Error {
    let shown: String = value.chars().take(SHOWN).collect();
    let more = if shown.len() < value.len() { "…" } else { "" };
    Error::Invalid {
        kind,
        reason: format!("{shown:?}{more} is not {expected}"),
    }
}

fn is_hex32(value: &str) -> bool {
    value.len() == 32
        && value
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Defines an id of 32 lowercase hex characters.
macro_rules! hex32_id {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl FromStr for $name {
            type Err = Error;

            fn from_str(value: &str) -> Result<Self, Error> {
                if is_hex32(value) {
                    Ok(Self(value.to_owned()))
                } else {
                    Err(invalid($kind, value, "32 lowercase hex characters"))
                }
            }
        }

        impl TryFrom<String> for $name {
            type Error = Error;

            fn try_from(value: String) -> Result<Self, Error> {
                if is_hex32(&value) {
                    Ok(Self(value))
                } else {
                    Err(invalid($kind, &value, "32 lowercase hex characters"))
                }
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.0)
            }
        }
    };
}

hex32_id!(
    /// A Cloudflare account id (the `a` of a connector token).
    AccountId,
    "account id"
);

hex32_id!(
    /// A Cloudflare zone id.
    ZoneId,
    "zone id"
);

/// A Cloudflare Tunnel id. Printed in lowercase canonical form, as Cloudflare does.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TunnelId(Uuid);

impl TunnelId {
    /// The UUID.
    pub fn uuid(&self) -> Uuid {
        self.0
    }

    /// The name a proxied CNAME points at to reach this tunnel:
    /// `<tunnel-id>.cfargotunnel.com`.
    pub fn cname_target(&self) -> String {
        format!("{}.cfargotunnel.com", self.0)
    }
}

impl From<Uuid> for TunnelId {
    fn from(uuid: Uuid) -> Self {
        Self(uuid)
    }
}

impl FromStr for TunnelId {
    type Err = Error;

    fn from_str(value: &str) -> Result<Self, Error> {
        value
            .parse::<Uuid>()
            .map(Self)
            .map_err(|_| invalid("tunnel id", value, "a uuid"))
    }
}

impl TryFrom<String> for TunnelId {
    type Error = Error;

    fn try_from(value: String) -> Result<Self, Error> {
        value.parse()
    }
}

impl From<TunnelId> for String {
    fn from(id: TunnelId) -> String {
        id.to_string()
    }
}

impl fmt::Display for TunnelId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Debug for TunnelId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TunnelId({})", self.0)
    }
}

/// A DNS record id: 1 to 64 ASCII letters, digits, `-` or `_`.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RecordId(String);

impl RecordId {
    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn check(value: &str) -> Result<(), Error> {
        let fits = !value.is_empty()
            && value.len() <= MAX_RECORD_ID
            && value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if fits {
            Ok(())
        } else {
            Err(invalid(
                "dns record id",
                value,
                "1 to 64 ascii letters, digits, '-' or '_'",
            ))
        }
    }
}

impl FromStr for RecordId {
    type Err = Error;

    fn from_str(value: &str) -> Result<Self, Error> {
        Self::check(value)?;
        Ok(Self(value.to_owned()))
    }
}

impl TryFrom<String> for RecordId {
    type Error = Error;

    fn try_from(value: String) -> Result<Self, Error> {
        Self::check(&value)?;
        Ok(Self(value))
    }
}

impl From<RecordId> for String {
    fn from(id: RecordId) -> String {
        id.0
    }
}

impl fmt::Display for RecordId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for RecordId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RecordId({})", self.0)
    }
}

#[cfg(test)]
mod tests;
