use std::time::Duration;

use proptest::prelude::*;

use capnp::raw;
use capnp::serialize::write_message_segments_to_words;

use super::*;
use crate::codec::{self, Object};
use crate::generated::tunnelrpc_capnp::registration_server::{
    register_connection_params, register_connection_results, update_local_configuration_params,
};
use crate::{Decoded, Error};

/// An object as the framed message whose root it is.
fn frame(object: &Object) -> Vec<u8> {
    write_message_segments_to_words(object)
}

/// Decodes a framed message whose root is a `T` with `read`.
fn decode<T: capnp::traits::Owned, R>(
    buf: &[u8],
    read: impl FnOnce(T::Reader<'_>) -> Result<R, Error>,
) -> Result<R, Error> {
    let Decoded::Complete { value, consumed } = codec::read(buf)? else {
        panic!("incomplete");
    };
    assert_eq!(consumed, buf.len());
    read(codec::root(&value)?)
}

fn decode_results(buf: &[u8]) -> ConnectionResponse {
    decode::<register_connection_results::Owned, _>(buf, ConnectionResponse::read_results).unwrap()
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
    assert_eq!(frame(&register_results(&edupconn())), EDUPCONN_GOLDEN);
    assert_eq!(decode_results(EDUPCONN_GOLDEN), edupconn());
}

#[test]
fn details_result_matches_golden() {
    assert_eq!(frame(&register_results(&details())), DETAILS_GOLDEN);
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
    let buf = frame(&register_params(&request));
    let Decoded::Complete { value: frame, .. } = codec::read(&buf).unwrap() else {
        panic!("incomplete");
    };
    let params: register_connection_params::Reader<'_> = codec::root(&frame).unwrap();
    // PROTOCOL.md §3.3: params 1 / 3 with connIndex at byte 0.
    assert_eq!(raw::get_struct_data_section(params), 3u64.to_le_bytes());
    assert_eq!(raw::get_struct_pointer_section(params).len(), 3);
    // ConnectionOptions 1 / 2: replaceExisting bit 0, compressionQuality byte 1,
    // numPreviousAttempts byte 2 -> 0x05_04_01.
    let options = params.get_options().unwrap();
    assert_eq!(
        raw::get_struct_data_section(options),
        0x05_04_01u64.to_le_bytes()
    );
    assert_eq!(raw::get_struct_pointer_section(options).len(), 2);
    // ClientInfo 0 / 4, arch in ptr 3.
    let client = options.get_client().unwrap();
    assert!(raw::get_struct_data_section(client).is_empty());
    let pointers = raw::get_struct_pointer_section(client);
    assert_eq!(pointers.len(), 4);
    let arch: capnp::text::Reader<'_> = pointers.get(3).get_as().unwrap();
    assert_eq!(arch.to_str().unwrap(), "linux_amd64");

    assert_eq!(RegisterConnection::read(params).unwrap(), request);
}

#[test]
fn unknown_response_discriminant_is_an_error() {
    // DETAILS_GOLDEN with the ConnectionResponse discriminant (w2 byte 0) set to 7.
    let mut buf = DETAILS_GOLDEN.to_vec();
    buf[8 + 2 * 8] = 7;
    assert!(matches!(
        decode::<register_connection_results::Owned, _>(&buf, ConnectionResponse::read_results),
        Err(Error::Schema {
            structure: "ConnectionResponse",
            ..
        })
    ));
}

#[test]
fn invalid_utf8_text_is_a_schema_error() {
    // EDUPCONN_GOLDEN with the cause's first byte (w7) not UTF-8.
    let mut buf = EDUPCONN_GOLDEN.to_vec();
    buf[8 + 7 * 8] = 0xff;
    let err =
        decode::<register_connection_results::Owned, _>(&buf, ConnectionResponse::read_results)
            .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Schema {
                structure: "ConnectionError.cause",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn out_of_bounds_pointer_names_the_field() {
    // EDUPCONN_GOLDEN with the cause text (w6) claiming 200 bytes.
    let mut buf = EDUPCONN_GOLDEN.to_vec();
    buf[8 + 6 * 8 + 4] = 2 | (200 << 3) as u8;
    buf[8 + 6 * 8 + 5] = (200 >> 5) as u8;
    let err =
        decode::<register_connection_results::Owned, _>(&buf, ConnectionResponse::read_results)
            .unwrap_err();
    assert!(
        matches!(&err, Error::Capnp { context: Some(c), .. } if c.starts_with("ConnectionError.cause")),
        "{err}"
    );
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
        let buf = frame(&register_params(&request));
        let back = decode::<register_connection_params::Owned, _>(&buf, RegisterConnection::read);
        prop_assert_eq!(back.unwrap(), request);
    }

    #[test]
    fn results_round_trip(response in response()) {
        let buf = frame(&register_results(&response));
        prop_assert_eq!(decode_results(&buf), response);
    }

    #[test]
    fn update_local_configuration_round_trips(config in bytes()) {
        let buf = frame(&update_local_configuration_params(&config));
        let back = decode::<update_local_configuration_params::Owned, _>(
            &buf,
            read_update_local_configuration,
        );
        prop_assert_eq!(back.unwrap(), config);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        // Whatever decodes re-encodes to the same value.
        if let Ok(Decoded::Complete { value, .. }) = codec::read(&bytes) {
            let results = codec::root(&value).and_then(ConnectionResponse::read_results);
            if let Ok(response) = results {
                prop_assert_eq!(decode_results(&frame(&register_results(&response))), response);
            }
            let params = codec::root(&value).and_then(RegisterConnection::read);
            if let Ok(request) = params {
                let buf = frame(&register_params(&request));
                let back = decode::<register_connection_params::Owned, _>(&buf, RegisterConnection::read);
                prop_assert_eq!(back.unwrap(), request);
            }
        }
    }
}
