//! The order in which Gateways hold tunnels and data-plane slots, which both
//! admission rules (`caps`, `tunnel_claims`) follow.

use crate::model::ObjectMeta;
use crate::store::NamespacedName;
use culvert_router::parse_rfc3339;

/// The order in which Gateways hold tunnels and slots: oldest first by creation
/// time (as RFC 3339, an unreadable one counting as newest), then UID, then name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Seniority {
    pub(crate) created: i64,
    pub(crate) uid: String,
    pub(crate) key: NamespacedName,
}

impl Seniority {
    pub(crate) fn of(key: &NamespacedName, metadata: &ObjectMeta) -> Self {
        Self {
            created: metadata
                .creation_timestamp
                .as_deref()
                .and_then(|t| parse_rfc3339(t).ok())
                .unwrap_or(i64::MAX),
            uid: metadata.uid.clone().unwrap_or_default(),
            key: key.clone(),
        }
    }
}
