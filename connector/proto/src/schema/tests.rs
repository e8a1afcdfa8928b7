use capnp::traits::HasTypeId;

use super::*;
use crate::generated::quic_metadata_protocol_capnp as quic;
use crate::generated::rpc_capnp as rpc;
use crate::generated::tunnelrpc_capnp as tunnelrpc;

const TUNNELRPC: &str = include_str!("../../schema/tunnelrpc.capnp");
const QUIC_METADATA: &str = include_str!("../../schema/quic_metadata_protocol.capnp");
const RPC: &str = include_str!("../../schema/rpc.capnp");

fn declares(schema: &str, name: &str, id: u64) -> bool {
    let needle = format!("@{id:#018x}");
    schema
        .lines()
        .any(|line| line.contains(&needle) && (name.is_empty() || line.contains(name)))
}

#[test]
fn schema_files_carry_the_ids_the_code_uses() {
    assert!(TUNNELRPC.contains(&format!("@{TUNNELRPC_FILE_ID:#018x};")));
    assert!(QUIC_METADATA.contains(&format!("@{QUIC_METADATA_FILE_ID:#018x};")));
    assert!(RPC.contains(&format!("@{RPC_FILE_ID:#018x};")));
    for (name, id) in [
        ("RegistrationServer", REGISTRATION_SERVER_ID),
        ("SessionManager", SESSION_MANAGER_ID),
        ("ConfigurationManager", CONFIGURATION_MANAGER_ID),
        ("CloudflaredServer", CLOUDFLARED_SERVER_ID),
        ("TunnelAuth", TUNNEL_AUTH_ID),
        ("ClientInfo", CLIENT_INFO_ID),
        ("ConnectionOptions", CONNECTION_OPTIONS_ID),
        ("ConnectionResponse", CONNECTION_RESPONSE_ID),
        ("ConnectionError", CONNECTION_ERROR_ID),
        ("ConnectionDetails", CONNECTION_DETAILS_ID),
    ] {
        assert!(declares(TUNNELRPC, name, id), "{name}");
    }
    for (name, id) in [
        ("ConnectRequest", CONNECT_REQUEST_ID),
        ("ConnectionType", CONNECTION_TYPE_ID),
        ("Metadata", METADATA_ID),
        ("ConnectResponse", CONNECT_RESPONSE_ID),
    ] {
        assert!(declares(QUIC_METADATA, name, id), "{name}");
    }
}

#[test]
fn method_ordinals_match_the_schema() {
    for (method, ordinal) in [
        ("registerConnection", METHOD_REGISTER_CONNECTION),
        ("unregisterConnection", METHOD_UNREGISTER_CONNECTION),
        (
            "updateLocalConfiguration",
            METHOD_UPDATE_LOCAL_CONFIGURATION,
        ),
    ] {
        assert!(
            TUNNELRPC.contains(&format!("{method} @{ordinal} ")),
            "{method}"
        );
    }
}

#[test]
fn legacy_tunnel_server_id_is_documented() {
    assert!(TUNNELRPC.contains(&format!("{TUNNEL_SERVER_ID:#018x}")));
}

#[test]
fn generated_code_carries_the_ids_the_code_uses() {
    for (name, generated, id) in [
        (
            "RegistrationServer",
            <tunnelrpc::registration_server::Client as HasTypeId>::TYPE_ID,
            REGISTRATION_SERVER_ID,
        ),
        (
            "SessionManager",
            <tunnelrpc::session_manager::Client as HasTypeId>::TYPE_ID,
            SESSION_MANAGER_ID,
        ),
        (
            "ConfigurationManager",
            <tunnelrpc::configuration_manager::Client as HasTypeId>::TYPE_ID,
            CONFIGURATION_MANAGER_ID,
        ),
        (
            "CloudflaredServer",
            <tunnelrpc::cloudflared_server::Client as HasTypeId>::TYPE_ID,
            CLOUDFLARED_SERVER_ID,
        ),
        (
            "TunnelAuth",
            <tunnelrpc::tunnel_auth::Reader<'_> as HasTypeId>::TYPE_ID,
            TUNNEL_AUTH_ID,
        ),
        (
            "ClientInfo",
            <tunnelrpc::client_info::Reader<'_> as HasTypeId>::TYPE_ID,
            CLIENT_INFO_ID,
        ),
        (
            "ConnectionOptions",
            <tunnelrpc::connection_options::Reader<'_> as HasTypeId>::TYPE_ID,
            CONNECTION_OPTIONS_ID,
        ),
        (
            "ConnectionResponse",
            <tunnelrpc::connection_response::Reader<'_> as HasTypeId>::TYPE_ID,
            CONNECTION_RESPONSE_ID,
        ),
        (
            "ConnectionError",
            <tunnelrpc::connection_error::Reader<'_> as HasTypeId>::TYPE_ID,
            CONNECTION_ERROR_ID,
        ),
        (
            "ConnectionDetails",
            <tunnelrpc::connection_details::Reader<'_> as HasTypeId>::TYPE_ID,
            CONNECTION_DETAILS_ID,
        ),
        (
            "ConnectRequest",
            <quic::connect_request::Reader<'_> as HasTypeId>::TYPE_ID,
            CONNECT_REQUEST_ID,
        ),
        (
            "ConnectionType",
            <quic::ConnectionType as HasTypeId>::TYPE_ID,
            CONNECTION_TYPE_ID,
        ),
        (
            "Metadata",
            <quic::metadata::Reader<'_> as HasTypeId>::TYPE_ID,
            METADATA_ID,
        ),
        (
            "ConnectResponse",
            <quic::connect_response::Reader<'_> as HasTypeId>::TYPE_ID,
            CONNECT_RESPONSE_ID,
        ),
    ] {
        assert_eq!(generated, id, "{name}");
    }
}

#[test]
fn rpc_structs_have_the_standard_ids() {
    // The RPC protocol's IDs, which follow from its file ID and the struct names; a
    // misspelt name in schema/rpc.capnp would change one.
    for (name, generated, id) in [
        (
            "Message",
            <rpc::message::Reader<'_> as HasTypeId>::TYPE_ID,
            0x91b7_9f1f_808d_b032,
        ),
        (
            "Call",
            <rpc::call::Reader<'_> as HasTypeId>::TYPE_ID,
            0x836a_53ce_789d_4cd4,
        ),
        (
            "Return",
            <rpc::return_::Reader<'_> as HasTypeId>::TYPE_ID,
            0x9e19_b28d_3db3_573a,
        ),
        (
            "Payload",
            <rpc::payload::Reader<'_> as HasTypeId>::TYPE_ID,
            0x9a0e_6122_3d96_743b,
        ),
        (
            "CapDescriptor",
            <rpc::cap_descriptor::Reader<'_> as HasTypeId>::TYPE_ID,
            0x8523_ddc4_0b86_b8b0,
        ),
        (
            "PromisedAnswer",
            <rpc::promised_answer::Reader<'_> as HasTypeId>::TYPE_ID,
            0xd800_b1d6_cd6f_1ca0,
        ),
        (
            "Exception",
            <rpc::exception::Reader<'_> as HasTypeId>::TYPE_ID,
            0xd625_b706_3acf_691a,
        ),
    ] {
        assert_eq!(generated, id, "{name}");
    }
}
