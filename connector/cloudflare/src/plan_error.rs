//! Why planning refused a value (a hostname, an owner ID, a Gateway reference, a service
//! URL): the planners' error, apart from [`crate::Error`], which is what a request to
//! Cloudflare can fail with. Values shown in messages are escaped and cut short, since
//! they may come from outside.

/// The longest part of an offending value repeated in a message.
const SHOWN_MAX: usize = 256;

/// Why a value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// A hostname that cannot be a DNS name or an ingress rule's hostname.
    #[error("invalid hostname {hostname:?}: {reason}")]
    InvalidHostname {
        /// The hostname as given (cut short when long).
        hostname: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An owner ID that cannot be written into an ownership record.
    #[error("invalid owner id {owner:?}: {reason}")]
    InvalidOwnerId {
        /// The owner ID as given (cut short when long).
        owner: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A Gateway namespace or name that is not a Kubernetes object name.
    #[error("invalid gateway reference {reference:?}: {reason}")]
    InvalidGatewayRef {
        /// `namespace/name` as given (cut short when long).
        reference: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A tunnel ID that is not a UUID.
    #[error("invalid tunnel id {tunnel_id:?}: {reason}")]
    InvalidTunnelId {
        /// The tunnel ID as given (cut short when long).
        tunnel_id: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A service URL an ingress rule cannot send traffic to.
    #[error("invalid ingress service {service:?}: {reason}")]
    InvalidService {
        /// The service as given (cut short when long).
        service: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// `value` cut to at most [`SHOWN_MAX`] bytes on a character boundary.
pub(crate) fn shown(value: &str) -> String {
    if value.len() <= SHOWN_MAX {
        return value.to_owned();
    }
    let mut end = SHOWN_MAX;
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &value[..end])
}
