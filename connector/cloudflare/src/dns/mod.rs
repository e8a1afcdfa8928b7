//! DNS records for a Gateway's hostnames, planned without IO.
//!
//! Each hostname a Gateway serves through a tunnel gets, in the zone of the account that
//! holds it ([`Zones::zone_for`]), a proxied CNAME to `<tunnel-id>.cfargotunnel.com` and
//! a TXT ownership record next to it ([`ownership`]). Culvert touches a record only when
//! the TXT says it is Culvert's, under this installation's owner ID; a name held by any
//! other record is reported as a conflict, never overwritten.
//!
//! - [`name`]: the validated [`Hostname`];
//! - [`zone`]: the zone a hostname belongs to;
//! - [`ownership`]: the TXT record's name and content, written and parsed;
//! - [`plan`](mod@plan): desired names and existing records to a [`Plan`].
//!
//! Start at [`plan()`].

pub mod name;
pub mod ownership;
pub mod plan;
pub mod zone;

pub use name::Hostname;
pub use ownership::{GatewayRef, OwnerId, Ownership};
pub use plan::{
    CONFLICT_REASON, Conflict, ConflictKind, DesiredName, ExistingRecord, Plan, PlannedChange,
    RecordSpec, RecordType, SkipReason, Skipped, plan,
};
pub use zone::{Zone, Zones};
