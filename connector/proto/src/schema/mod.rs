//! Schema constants that go on the wire: interface IDs, method ordinals, and the type
//! IDs of `connector/proto/schema/*.capnp` (PROTOCOL.md §3.2, §3.3, §4.2).
//!
//! Only interface IDs and method ordinals appear in messages (in every RPC `Call`);
//! struct IDs are listed so the schema files, the code generated from them and this
//! list can be checked against each other.

/// File ID of `tunnelrpc.capnp`.
pub const TUNNELRPC_FILE_ID: u64 = 0xdb82_74f9_144a_bc7e;
/// File ID of `quic_metadata_protocol.capnp`.
pub const QUIC_METADATA_FILE_ID: u64 = 0xb290_21ef_7421_cc32;
/// File ID of the Cap'n Proto RPC protocol's `rpc.capnp`, whose message types the
/// control stream speaks (the IDs of its structs derive from it and their names).
pub const RPC_FILE_ID: u64 = 0xb312_981b_2552_a250;

/// Interface ID of `RegistrationServer`, carried by every registration `Call`.
pub const REGISTRATION_SERVER_ID: u64 = 0xf716_95ec_7fe8_5497;
/// Interface ID of the legacy `TunnelServer` (extends `RegistrationServer`).
pub const TUNNEL_SERVER_ID: u64 = 0xea58_385c_6541_6035;
/// Interface ID of `SessionManager`.
pub const SESSION_MANAGER_ID: u64 = 0x8394_45a5_9fb0_1686;
/// Interface ID of `ConfigurationManager`.
pub const CONFIGURATION_MANAGER_ID: u64 = 0xb48e_dfbd_aa25_db04;
/// Interface ID of `CloudflaredServer`.
pub const CLOUDFLARED_SERVER_ID: u64 = 0xf548_cef9_dea2_a4a1;

/// `RegistrationServer.registerConnection` ordinal.
pub const METHOD_REGISTER_CONNECTION: u16 = 0;
/// `RegistrationServer.unregisterConnection` ordinal.
pub const METHOD_UNREGISTER_CONNECTION: u16 = 1;
/// `RegistrationServer.updateLocalConfiguration` ordinal.
pub const METHOD_UPDATE_LOCAL_CONFIGURATION: u16 = 2;

/// Struct ID of `TunnelAuth`.
pub const TUNNEL_AUTH_ID: u64 = 0x9496_331a_b9cd_463f;
/// Struct ID of `ClientInfo`.
pub const CLIENT_INFO_ID: u64 = 0x83ce_d014_5b2f_114b;
/// Struct ID of `ConnectionOptions`.
pub const CONNECTION_OPTIONS_ID: u64 = 0xb4bf_9861_fe03_5d04;
/// Struct ID of `ConnectionResponse`.
pub const CONNECTION_RESPONSE_ID: u64 = 0xdbaa_9d03_d52b_62dc;
/// Struct ID of `ConnectionError`.
pub const CONNECTION_ERROR_ID: u64 = 0xf5f3_83d2_785e_db86;
/// Struct ID of `ConnectionDetails`.
pub const CONNECTION_DETAILS_ID: u64 = 0xb5f3_9f08_2b9a_c18a;
/// Struct ID of `ConnectRequest`.
pub const CONNECT_REQUEST_ID: u64 = 0xc471_16a1_045e_4061;
/// Enum ID of `ConnectionType`.
pub const CONNECTION_TYPE_ID: u64 = 0xc52e_1bac_26d3_79c8;
/// Struct ID of `Metadata`.
pub const METADATA_ID: u64 = 0xe144_6b97_bfd1_cd37;
/// Struct ID of `ConnectResponse`.
pub const CONNECT_RESPONSE_ID: u64 = 0xb103_2ec9_1cef_8727;

#[cfg(test)]
mod tests;
