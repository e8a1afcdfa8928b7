//! The registration structures on the wire: each type's mapping to and from its
//! generated `tunnelrpc.capnp` reader and builder, and the params and results
//! structs of `RegistrationServer`'s methods as [`Object`]s for RPC payloads.
//!
//! Encoding writes fields in pointer order and depth first, so a message has the
//! layout PROTOCOL.md §3.3 derives by hand; empty `Text` and `Data` are written as
//! null, which reads back as empty. Decoding reads every field into owned values.

use super::{
    ClientInfo, ConnectionDetails, ConnectionError, ConnectionOptions, ConnectionResponse,
    RegisterConnection, TunnelAuth,
};
use crate::Error;
use crate::codec::{Object, data, field, field_error, list_len, text};
use crate::generated::tunnelrpc_capnp::registration_server::{
    register_connection_params, register_connection_results, unregister_connection_params,
    unregister_connection_results, update_local_configuration_params as update_params,
};
use crate::generated::tunnelrpc_capnp::{
    client_info, connection_details, connection_error, connection_options, connection_response,
    tunnel_auth,
};

/// `registerConnection`'s params struct for `request`.
pub(crate) fn register_params(request: &RegisterConnection) -> Object {
    Object::build::<register_connection_params::Owned>(|b| request.write(b))
}

/// `registerConnection`'s results struct carrying `response`.
pub(crate) fn register_results(response: &ConnectionResponse) -> Object {
    Object::build::<register_connection_results::Owned>(|b| {
        response.write(b.init_result());
    })
}

/// `unregisterConnection`'s params: an empty struct.
pub(crate) fn unregister_params() -> Object {
    Object::build::<unregister_connection_params::Owned>(|_| {})
}

/// The results of `unregisterConnection` and `updateLocalConfiguration`: an empty
/// struct.
pub(crate) fn empty_results() -> Object {
    Object::build::<unregister_connection_results::Owned>(|_| {})
}

/// `updateLocalConfiguration`'s params: `config :Data` in ptr 0.
pub(crate) fn update_local_configuration_params(config: &[u8]) -> Object {
    Object::build::<update_params::Owned>(|mut b| {
        if !config.is_empty() {
            b.set_config(config);
        }
    })
}

/// Reads `updateLocalConfiguration`'s `config`.
pub(crate) fn read_update_local_configuration(
    params: update_params::Reader<'_>,
) -> Result<Vec<u8>, Error> {
    data("updateLocalConfiguration.config", params.get_config())
}

fn set_text(value: &str, set: impl FnOnce(&str)) {
    if !value.is_empty() {
        set(value);
    }
}

fn set_data(value: &[u8], set: impl FnOnce(&[u8])) {
    if !value.is_empty() {
        set(value);
    }
}

impl TunnelAuth {
    fn write(&self, mut b: tunnel_auth::Builder<'_>) {
        set_text(&self.account_tag, |v| b.set_account_tag(v));
        set_data(&self.tunnel_secret, |v| b.set_tunnel_secret(v));
    }

    fn read(r: tunnel_auth::Reader<'_>) -> Result<Self, Error> {
        Ok(Self {
            account_tag: text("TunnelAuth.accountTag", r.get_account_tag())?,
            tunnel_secret: data("TunnelAuth.tunnelSecret", r.get_tunnel_secret())?,
        })
    }
}

impl ClientInfo {
    fn write(&self, mut b: client_info::Builder<'_>) {
        set_data(&self.client_id, |v| b.set_client_id(v));
        let mut features = b.reborrow().init_features(list_len(self.features.len()));
        for (i, feature) in (0..).zip(&self.features) {
            set_text(feature, |v| features.set(i, v));
        }
        set_text(&self.version, |v| b.set_version(v));
        set_text(&self.arch, |v| b.set_arch(v));
    }

    fn read(r: client_info::Reader<'_>) -> Result<Self, Error> {
        const FEATURES: &str = "ClientInfo.features";
        let features = field(FEATURES, r.get_features())?
            .iter()
            .map(|feature| text(FEATURES, feature))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            client_id: data("ClientInfo.clientId", r.get_client_id())?,
            features,
            version: text("ClientInfo.version", r.get_version())?,
            arch: text("ClientInfo.arch", r.get_arch())?,
        })
    }
}

impl ConnectionOptions {
    fn write(&self, mut b: connection_options::Builder<'_>) {
        self.client.write(b.reborrow().init_client());
        set_data(&self.origin_local_ip, |v| b.set_origin_local_ip(v));
        b.set_replace_existing(self.replace_existing);
        b.set_compression_quality(self.compression_quality);
        b.set_num_previous_attempts(self.num_previous_attempts);
    }

    fn read(r: connection_options::Reader<'_>) -> Result<Self, Error> {
        Ok(Self {
            client: ClientInfo::read(field("ConnectionOptions.client", r.get_client())?)?,
            origin_local_ip: data("ConnectionOptions.originLocalIp", r.get_origin_local_ip())?,
            replace_existing: r.get_replace_existing(),
            compression_quality: r.get_compression_quality(),
            num_previous_attempts: r.get_num_previous_attempts(),
        })
    }
}

impl RegisterConnection {
    /// Fills `registerConnection`'s params struct.
    pub(crate) fn write(&self, mut b: register_connection_params::Builder<'_>) {
        self.auth.write(b.reborrow().init_auth());
        set_data(&self.tunnel_id, |v| b.set_tunnel_id(v));
        self.options.write(b.reborrow().init_options());
        b.set_conn_index(self.conn_index);
    }

    /// Reads `registerConnection`'s params struct.
    pub(crate) fn read(r: register_connection_params::Reader<'_>) -> Result<Self, Error> {
        Ok(Self {
            auth: TunnelAuth::read(field("registerConnection.auth", r.get_auth())?)?,
            tunnel_id: data("registerConnection.tunnelId", r.get_tunnel_id())?,
            conn_index: r.get_conn_index(),
            options: ConnectionOptions::read(field(
                "registerConnection.options",
                r.get_options(),
            )?)?,
        })
    }
}

impl ConnectionError {
    fn write(&self, mut b: connection_error::Builder<'_>) {
        set_text(&self.cause, |v| b.set_cause(v));
        b.set_retry_after(self.retry_after_nanos);
        b.set_should_retry(self.should_retry);
    }

    fn read(r: connection_error::Reader<'_>) -> Result<Self, Error> {
        Ok(Self {
            cause: text("ConnectionError.cause", r.get_cause())?,
            retry_after_nanos: r.get_retry_after(),
            should_retry: r.get_should_retry(),
        })
    }
}

impl ConnectionDetails {
    fn write(&self, mut b: connection_details::Builder<'_>) {
        set_data(&self.uuid, |v| b.set_uuid(v));
        set_text(&self.location_name, |v| b.set_location_name(v));
        b.set_tunnel_is_remotely_managed(self.tunnel_is_remotely_managed);
    }

    fn read(r: connection_details::Reader<'_>) -> Result<Self, Error> {
        Ok(Self {
            uuid: data("ConnectionDetails.uuid", r.get_uuid())?,
            location_name: text("ConnectionDetails.locationName", r.get_location_name())?,
            tunnel_is_remotely_managed: r.get_tunnel_is_remotely_managed(),
        })
    }
}

impl ConnectionResponse {
    fn write(&self, b: connection_response::Builder<'_>) {
        let result = b.init_result();
        match self {
            Self::Error(e) => e.write(result.init_error()),
            Self::Details(d) => d.write(result.init_connection_details()),
        }
    }

    fn read(r: connection_response::Reader<'_>) -> Result<Self, Error> {
        use connection_response::result::Which;
        match r.get_result().which() {
            Ok(Which::Error(e)) => Ok(Self::Error(ConnectionError::read(field(
                "ConnectionResponse.error",
                e,
            )?)?)),
            Ok(Which::ConnectionDetails(d)) => Ok(Self::Details(ConnectionDetails::read(field(
                "ConnectionResponse.connectionDetails",
                d,
            )?)?)),
            Err(e) => Err(field_error("ConnectionResponse", e.into())),
        }
    }

    /// Reads `registerConnection`'s results struct.
    pub(crate) fn read_results(r: register_connection_results::Reader<'_>) -> Result<Self, Error> {
        Self::read(field("registerConnection results", r.get_result())?)
    }
}
