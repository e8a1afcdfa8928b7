use super::*;

const TUNNELRPC: &str = include_str!("../../schema/tunnelrpc.capnp");
const QUIC_METADATA: &str = include_str!("../../schema/quic_metadata_protocol.capnp");

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
