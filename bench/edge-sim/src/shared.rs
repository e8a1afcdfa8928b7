//! What the simulator's tasks share: the start-up token, the settings they read,
//! the connection registry and the account, each behind its own lock; and the
//! status snapshot built from them. Below every listener and handler.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use culvert_tunnel_proto::TunnelToken;
use serde::Serialize;

use crate::api::state::{ApiFault, Cloud};
use crate::config::SimConfig;
use crate::registry::{Registry, SimConnection, SimConnectionState};

/// The simulator's status, as `GET /_sim/status` serves it.
#[derive(Debug, Clone, Serialize)]
pub struct SimStatus {
    /// The start-up tunnel (more may be created through the API).
    pub tunnel_id: String,
    /// Its account tag.
    pub account_tag: String,
    /// Every connection, registered or not.
    pub connections: Vec<SimConnection>,
    /// The event log (registrations, refusals, unregisters, closes), oldest first.
    pub events: Vec<String>,
}

impl SimStatus {
    /// Connections currently registered (not draining).
    pub fn registered(&self) -> usize {
        self.connections
            .iter()
            .filter(|c| c.state == SimConnectionState::Registered)
            .count()
    }
}

/// State shared by the simulator's tasks.
pub(crate) struct SimShared {
    /// The start-up tunnel's token (the default route of the front door).
    pub(crate) token: TunnelToken,
    /// `ConnectionDetails.locationName` (and the API's `colo_name`).
    pub(crate) location: String,
    /// Bound on how long an unregister reply waits for in-flight streams.
    pub(crate) unregister_timeout: Duration,
    /// The largest `per_page` of API lists.
    pub(crate) api_max_per_page: u32,
    registry: Mutex<Registry>,
    /// The account: tunnels, zones, records. Never held across an `.await`; when
    /// both are needed, this one is taken after the registry's guard was dropped.
    cloud: Mutex<Cloud>,
}

impl SimShared {
    pub(crate) fn new(config: &SimConfig, token: TunnelToken, cloud: Cloud) -> Self {
        Self {
            token,
            location: config.location.clone(),
            unregister_timeout: config.unregister_timeout,
            api_max_per_page: config.api_max_per_page,
            registry: Mutex::new(Registry::new(config.log)),
            cloud: Mutex::new(cloud),
        }
    }

    /// The registry; never hold the guard across an `.await`.
    pub(crate) fn registry(&self) -> MutexGuard<'_, Registry> {
        self.registry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The account; never hold the guard across an `.await`.
    pub(crate) fn cloud(&self) -> MutexGuard<'_, Cloud> {
        self.cloud
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn add_api_faults(&self, faults: impl IntoIterator<Item = ApiFault>) {
        self.cloud().faults.extend(faults);
    }

    pub(crate) fn event(&self, line: String) {
        self.registry().event(line);
    }

    pub(crate) fn status(&self) -> SimStatus {
        let (connections, events) = self.registry().snapshot();
        SimStatus {
            tunnel_id: self.token.tunnel_id.to_string(),
            account_tag: self.token.account_tag.clone(),
            connections,
            events,
        }
    }
}
