use std::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::Decoded;
use crate::capnp::{decode_message, encode_message};

fn decode_results(buf: &[u8]) -> ConnectionResponse {
    match decode_message(buf).unwrap() {
        Decoded::Complete { value, .. } => ConnectionResponse::from_results(&value).unwrap(),
        Decoded::Incomplete { .. } => panic!("incomplete"),
    }
}

/// `registerConnection` results `{ result: error{ cause: "EDUPCONN", retryAfter: 1 s,
/// shouldRetry: true } }`, from PROTOCOL.md §3.3:
/// * header: one segment, 9 words;
/// * w0 root: results struct (0 / 1) at w1 -> high half 0x0001_0000;
/// * w1: ConnectionResponse (1 / 1) at w2 -> high half 0x0001_0001;
/// * w2: discriminant 0 (error) at byte 0;
/// * w3: ConnectionError (2 / 1) at w4 -> high half 0x0001_0002;
/// * w4: retryAfter = 1_000_000_000 ns = 0x3b9aca00 (bytes 0..8);
/// * w5: shouldRetry is bit 64, i.e. bit 0 of w5;
/// * w6: cause text at w7 (offset 0), 9 bytes -> low 1, high 2 | 9 << 3 = 0x4a;
/// * w7..w8: "EDUPCONN\0".
const EDUPCONN_GOLDEN: &[u8] = &[
    0, 0, 0, 0, 9, 0, 0, 0, //
    0, 0, 0, 0, 0, 0, 1, 0, //
    0, 0, 0, 0, 1, 0, 1, 0, //
    0, 0, 0, 0, 0, 0, 0, 0, //
    0, 0, 0, 0, 2, 0, 1, 0, //
    0x00, 0xca, 0x9a, 0x3b, 0, 0, 0, 0, //
    1, 0, 0, 0, 0, 0, 0, 0, //
    1, 0, 0, 0, 0x4a, 0, 0, 0, //
    b'E', b'D', b'U', b'P', b'C', b'O', b'N', b'N', //
    0, 0, 0, 0, 0, 0, 0, 0,
];

/// `{ result: connectionDetails{ uuid: 00..0f, locationName: "SFO",
/// tunnelIsRemotelyManaged: true } }`:
/// * header: one segment, 10 words; w0 and w1 as above;
/// * w2: discriminant 1 (connectionDetails);
/// * w3: ConnectionDetails (1 / 2) at w4 -> high half 0x0002_0001;
/// * w4: tunnelIsRemotelyManaged = bit 0;
/// * w5: uuid data at w7 (offset 1), 16 bytes -> low 5, high 2 | 16 << 3 = 0x82;
/// * w6: locationName at w9 (offset 2), 4 bytes -> low 9, high 0x22;
/// * w7..w8: bytes 0..15; w9: "SFO\0".
const DETAILS_GOLDEN: &[u8] = &[
    0, 0, 0, 0, 10, 0, 0, 0, //
    0, 0, 0, 0, 0, 0, 1, 0, //
    0, 0, 0, 0, 1, 0, 1, 0, //
    1, 0, 0, 0, 0, 0, 0, 0, //
    0, 0, 0, 0, 1, 0, 2, 0, //
    1, 0, 0, 0, 0, 0, 0, 0, //
    5, 0, 0, 0, 0x82, 0, 0, 0, //
    9, 0, 0, 0, 0x22, 0, 0, 0, //
    0, 1, 2, 3, 4, 5, 6, 7, //
    8, 9, 10, 11, 12, 13, 14, 15, //
    b'S', b'F', b'O', 0, 0, 0, 0, 0,
];

fn edupconn() -> ConnectionResponse {
    ConnectionResponse::Error(ConnectionError {
        cause: "EDUPCONN".to_owned(),
        retry_after_nanos: 1_000_000_000,
        should_retry: true,
    })
}

fn details() -> ConnectionResponse {
    ConnectionResponse::Details(ConnectionDetails {
        uuid: (0u8..16).collect(),
        location_name: "SFO".to_owned(),
        tunnel_is_remotely_managed: true,
    })
}

#[test]
fn error_result_matches_golden() {
    assert_eq!(encode_message(&edupconn().to_results()), EDUPCONN_GOLDEN);
    assert_eq!(decode_results(EDUPCONN_GOLDEN), edupconn());
}

#[test]
fn details_result_matches_golden() {
    assert_eq!(encode_message(&details().to_results()), DETAILS_GOLDEN);
    assert_eq!(decode_results(DETAILS_GOLDEN), details());
}

#[test]
fn register_params_layout() {
    let request = RegisterConnection {
        auth: TunnelAuth {
            account_tag: "acct".to_owned(),
            tunnel_secret: vec![1, 2, 3],
        },
        tunnel_id: vec![9; 16],
        conn_index: 3,
        options: ConnectionOptions {
            client: ClientInfo {
                client_id: vec![7; 16],
                features: vec![
                    "serialized_headers".to_owned(),
                    "support_quic_eof".to_owned(),
                ],
                version: "2026.8.2".to_owned(),
                arch: "linux_amd64".to_owned(),
            },
            origin_local_ip: vec![127, 0, 0, 1],
            replace_existing: true,
            compression_quality: 4,
            num_previous_attempts: 5,
        },
    };
    let s = request.to_struct();
    // PROTOCOL.md §3.3: params 1 / 3 with connIndex at byte 0.
    assert_eq!((s.data.len(), s.ptrs.len()), (1, 3));
    assert_eq!(s.data[0], 3);
    // ConnectionOptions: replaceExisting bit 0, compressionQuality byte 1,
    // numPreviousAttempts byte 2 -> 0x05_04_01.
    let options = s.struct_at(2, "options").unwrap();
    assert_eq!((options.data.len(), options.ptrs.len()), (1, 2));
    assert_eq!(options.data[0], 0x05_04_01);
    let client = options.struct_at(0, "client").unwrap();
    assert_eq!(client.ptrs.len(), 4);
    assert_eq!(client.text_at(3, "arch").unwrap(), "linux_amd64");

    let buf = encode_message(&s);
    let Decoded::Complete { value, .. } = decode_message(&buf).unwrap() else {
        panic!("incomplete");
    };
    assert_eq!(RegisterConnection::from_struct(&value).unwrap(), request);
}

#[test]
fn unknown_response_discriminant_is_an_error() {
    let mut s = details().to_struct();
    s.set_u16(0, 7);
    assert!(matches!(
        ConnectionResponse::from_struct(&s),
        Err(Error::Schema { .. })
    ));
}

#[test]
fn registration_errors_are_classified_like_cloudflared() {
    let error = |cause: &str, should_retry: bool, nanos: i64| ConnectionError {
        cause: cause.to_owned(),
        retry_after_nanos: nanos,
        should_retry,
    };
    let dup = RegistrationError::from_connection_error(&error("EDUPCONN", false, 0));
    assert_eq!(dup, RegistrationError::Duplicate);
    assert!(dup.should_retry());

    let retry = RegistrationError::from_connection_error(&error("overloaded", true, 2_000_000_000));
    assert_eq!(
        retry,
        RegistrationError::Retryable {
            cause: "overloaded".to_owned(),
            retry_after: Some(Duration::from_secs(2))
        }
    );
    assert!(retry.should_retry());

    let permanent = RegistrationError::from_connection_error(&error("tunnel deleted", false, 0));
    assert!(!permanent.should_retry());
    assert!(!permanent.is_unauthorized());

    let unauthorized =
        RegistrationError::from_connection_error(&error("Unauthorized: bad secret", false, 0));
    assert!(unauthorized.is_unauthorized());
    assert!(unauthorized.should_retry());

    let negative = RegistrationError::from_connection_error(&error("x", true, -5));
    assert!(matches!(
        negative,
        RegistrationError::Retryable {
            retry_after: None,
            ..
        }
    ));
    assert!(
        !RegistrationError::Exception {
            reason: "boom".to_owned()
        }
        .should_retry()
    );
}

#[test]
fn connection_id_requires_sixteen_bytes() {
    let mut d = ConnectionDetails {
        uuid: vec![1; 16],
        ..ConnectionDetails::default()
    };
    assert!(d.connection_id().is_some());
    d.uuid.pop();
    assert!(d.connection_id().is_none());
}

#[test]
fn auth_debug_hides_the_secret() {
    let auth = TunnelAuth {
        account_tag: "acct".to_owned(),
        tunnel_secret: b"topsecret".to_vec(),
    };
    let shown = format!("{auth:?}");
    assert!(!shown.contains("116"), "{shown}");
    assert!(shown.contains("<9 bytes>"));
}

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..24)
}

fn register() -> impl Strategy<Value = RegisterConnection> {
    (
        (".{0,16}", bytes(), bytes(), any::<u8>()),
        (
            bytes(),
            proptest::collection::vec(".{0,8}", 0..4),
            ".{0,8}",
            ".{0,8}",
        ),
        (bytes(), any::<bool>(), any::<u8>(), any::<u8>()),
    )
        .prop_map(
            |(
                (tag, secret, tunnel_id, conn_index),
                (client_id, features, version, arch),
                (ip, replace, quality, attempts),
            )| {
                RegisterConnection {
                    auth: TunnelAuth {
                        account_tag: tag,
                        tunnel_secret: secret,
                    },
                    tunnel_id,
                    conn_index,
                    options: ConnectionOptions {
                        client: ClientInfo {
                            client_id,
                            features,
                            version,
                            arch,
                        },
                        origin_local_ip: ip,
                        replace_existing: replace,
                        compression_quality: quality,
                        num_previous_attempts: attempts,
                    },
                }
            },
        )
}

fn response() -> impl Strategy<Value = ConnectionResponse> {
    prop_oneof![
        (".{0,16}", any::<i64>(), any::<bool>()).prop_map(|(cause, nanos, retry)| {
            ConnectionResponse::Error(ConnectionError {
                cause,
                retry_after_nanos: nanos,
                should_retry: retry,
            })
        }),
        (bytes(), ".{0,16}", any::<bool>()).prop_map(|(uuid, location, managed)| {
            ConnectionResponse::Details(ConnectionDetails {
                uuid,
                location_name: location,
                tunnel_is_remotely_managed: managed,
            })
        }),
    ]
}

proptest! {
    #[test]
    fn register_params_round_trip(request in register()) {
        let buf = encode_message(&request.to_struct());
        let Decoded::Complete { value, consumed } = decode_message(&buf).unwrap() else {
            panic!("incomplete");
        };
        prop_assert_eq!(consumed, buf.len());
        prop_assert_eq!(RegisterConnection::from_struct(&value).unwrap(), request);
    }

    #[test]
    fn results_round_trip(response in response()) {
        let buf = encode_message(&response.to_results());
        prop_assert_eq!(decode_results(&buf), response);
    }

    #[test]
    fn update_local_configuration_round_trips(config in bytes()) {
        let buf = encode_message(&update_local_configuration_params(&config));
        let Decoded::Complete { value, .. } = decode_message(&buf).unwrap() else {
            panic!("incomplete");
        };
        prop_assert_eq!(decode_update_local_configuration(&value).unwrap(), config);
    }
}
