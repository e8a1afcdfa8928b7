//! In-memory client/server pair with fake time: the connector's `ControlClient`
//! talking to the simulator's `ControlServer` over a byte pipe.

#![allow(
    clippy::disallowed_methods,
    reason = "tests give the sans-IO core real instants"
)]

use std::time::{Duration, Instant};

use super::*;
use crate::registration::unregister_params;
use crate::registration::{
    ClientInfo, ConnectionDetails, ConnectionError, ConnectionOptions, ConnectionResponse,
    RegisterConnection, RegistrationError, TunnelAuth,
};
use crate::rpc::{Call, Message, Payload, ReturnBody, SendResultsTo, Target};
use crate::schema::{REGISTRATION_SERVER_ID, SESSION_MANAGER_ID};

const SECRET: &[u8] = b"the right secret";

struct Pair {
    client: ControlClient,
    server: ControlServer,
    now: Instant,
    /// Every message the client sent, decoded, in order.
    client_sent: Vec<Message>,
    /// Every message the server sent, decoded, in order.
    server_sent: Vec<Message>,
}

fn decode_all(mut bytes: &[u8]) -> Vec<Message> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        match Message::decode(bytes).unwrap() {
            Decoded::Complete { value, consumed } => {
                out.push(value);
                bytes = &bytes[consumed..];
            }
            Decoded::Incomplete { .. } => panic!("partial message in transmit"),
        }
    }
    out
}

impl Pair {
    fn new() -> Self {
        Self {
            client: ControlClient::new(DEFAULT_RPC_TIMEOUT),
            server: ControlServer::new(),
            now: Instant::now(),
            client_sent: Vec::new(),
            server_sent: Vec::new(),
        }
    }

    /// Moves bytes both ways until neither side has anything to send.
    fn pump(&mut self) {
        loop {
            let mut to_server = Vec::new();
            self.client.poll_transmit(&mut to_server);
            let mut to_client = Vec::new();
            self.server.poll_transmit(&mut to_client);
            if to_server.is_empty() && to_client.is_empty() {
                return;
            }
            self.client_sent.extend(decode_all(&to_server));
            self.server_sent.extend(decode_all(&to_client));
            self.server.handle_input(&to_server, self.now).unwrap();
            self.client.handle_input(&to_client, self.now).unwrap();
        }
    }

    fn advance(&mut self, by: Duration) {
        self.now += by;
        if self.client.poll_timeout().is_some_and(|t| t <= self.now) {
            self.client.handle_timeout(self.now);
        }
    }

    fn server_events(&mut self) -> Vec<ServerEvent> {
        std::iter::from_fn(|| self.server.poll_event()).collect()
    }

    fn client_events(&mut self) -> Vec<ClientEvent> {
        std::iter::from_fn(|| self.client.poll_event()).collect()
    }

    /// Plays a simple edge: checks the secret and answers registrations at once.
    fn edge_answers_registrations(&mut self) {
        for event in self.server_events() {
            let ServerEvent::RegisterConnection { call, request } = event else {
                panic!("unexpected event {event:?}");
            };
            let response = if request.auth.tunnel_secret == SECRET {
                ConnectionResponse::Details(details())
            } else {
                ConnectionResponse::Error(ConnectionError {
                    cause: "Unauthorized: Tunnel not found".to_owned(),
                    retry_after_nanos: 0,
                    should_retry: false,
                })
            };
            self.server.respond_register(call, &response).unwrap();
        }
    }
}

fn request(secret: &[u8], conn_index: u8) -> RegisterConnection {
    RegisterConnection {
        auth: TunnelAuth {
            account_tag: "0123456789abcdef0123456789abcdef".to_owned(),
            tunnel_secret: secret.to_vec(),
        },
        tunnel_id: vec![0xab; 16],
        conn_index,
        options: ConnectionOptions {
            client: ClientInfo {
                client_id: vec![0x11; 16],
                features: vec![
                    "allow_remote_config".to_owned(),
                    "serialized_headers".to_owned(),
                    "support_datagram_v2".to_owned(),
                    "support_quic_eof".to_owned(),
                    "management_logs".to_owned(),
                ],
                version: "culvert-0.1.0".to_owned(),
                arch: "linux_amd64".to_owned(),
            },
            origin_local_ip: vec![127, 0, 0, 1],
            ..ConnectionOptions::default()
        },
    }
}

fn details() -> ConnectionDetails {
    ConnectionDetails {
        uuid: (0u8..16).collect(),
        location_name: "SIM".to_owned(),
        tunnel_is_remotely_managed: false,
    }
}

#[test]
fn register_pipelines_on_bootstrap_and_succeeds() {
    let mut p = Pair::new();
    p.client.register(&request(SECRET, 0), p.now).unwrap();

    // The first flight is Bootstrap(q0) and, without waiting, the call on its answer.
    let mut first = Vec::new();
    p.client.poll_transmit(&mut first);
    let first = decode_all(&first);
    assert_eq!(first[0], Message::Bootstrap { question_id: 0 });
    let Message::Call(call) = &first[1] else {
        panic!("expected a call, got {:?}", first[1]);
    };
    assert_eq!(call.question_id, 1);
    assert_eq!(
        call.target,
        Target::PromisedAnswer {
            question_id: 0,
            transform: vec![]
        }
    );
    assert_eq!(call.interface_id, 0xf716_95ec_7fe8_5497);
    assert_eq!(call.method_id, 0);
    // Feed it to the server one byte at a time: framing must cope with any split.
    let mut bytes = Vec::new();
    for m in &first {
        bytes.extend(m.encode().unwrap());
    }
    for b in &bytes {
        p.server
            .handle_input(std::slice::from_ref(b), p.now)
            .unwrap();
    }
    let events = p.server_events();
    let [ServerEvent::RegisterConnection { call, request: got }] = &events[..] else {
        panic!("unexpected events {events:?}");
    };
    assert_eq!(*got, request(SECRET, 0));
    p.server
        .respond_register(*call, &ConnectionResponse::Details(details()))
        .unwrap();
    p.pump();

    assert_eq!(p.client_events(), vec![ClientEvent::Registered(details())]);
    // The client finished the bootstrap question keeping the capability, and the call.
    assert!(p.client_sent.iter().any(|m| matches!(
        m,
        Message::Finish(f) if f.question_id == 0 && !f.release_result_caps
    )));
    assert!(p.client_sent.iter().any(|m| matches!(
        m,
        Message::Finish(f) if f.question_id == 1 && f.release_result_caps
    )));
    assert_eq!(p.server.bootstrap_references(), 1);
    assert_eq!(p.client.poll_timeout(), None);
}

#[test]
fn wrong_secret_is_a_permanent_unauthorized_error() {
    let mut p = Pair::new();
    p.client.register(&request(b"wrong", 0), p.now).unwrap();
    p.pump();
    p.edge_answers_registrations();
    p.pump();
    let events = p.client_events();
    let [ClientEvent::RegistrationFailed(error)] = &events[..] else {
        panic!("unexpected events {events:?}");
    };
    assert!(
        matches!(error, RegistrationError::Permanent { cause } if cause.contains("Unauthorized"))
    );
    // cloudflared retries Unauthorized even on a first connection.
    assert!(error.is_unauthorized());
    assert!(error.should_retry());
}

#[test]
fn duplicate_connection_is_classified() {
    let mut p = Pair::new();
    p.client.register(&request(SECRET, 2), p.now).unwrap();
    p.pump();
    let events = p.server_events();
    let [ServerEvent::RegisterConnection { call, .. }] = &events[..] else {
        panic!("unexpected events {events:?}");
    };
    let dup = ConnectionResponse::Error(ConnectionError {
        cause: "EDUPCONN".to_owned(),
        retry_after_nanos: 0,
        should_retry: true,
    });
    p.server.respond_register(*call, &dup).unwrap();
    p.pump();
    assert_eq!(
        p.client_events(),
        vec![ClientEvent::RegistrationFailed(
            RegistrationError::Duplicate
        )]
    );
}

#[test]
fn configuration_then_unregister_then_close() {
    let mut p = Pair::new();
    p.client.register(&request(SECRET, 0), p.now).unwrap();
    p.pump();
    p.edge_answers_registrations();
    p.pump();
    assert_eq!(p.client_events(), vec![ClientEvent::Registered(details())]);

    // connIndex 0 and not remotely managed: push the local configuration. The
    // bootstrap has resolved, so the call targets the import now.
    let config = br#"{"ingress":[{"service":"http_status:404"}]}"#;
    p.client.update_local_configuration(config, p.now).unwrap();
    p.pump();
    let Some(Message::Call(call)) = p
        .client_sent
        .iter()
        .rev()
        .find(|m| matches!(m, Message::Call(_)))
    else {
        panic!("no call sent");
    };
    assert_eq!(call.target, Target::ImportedCap(0));
    let events = p.server_events();
    let [ServerEvent::UpdateLocalConfiguration { call, config: got }] = &events[..] else {
        panic!("unexpected events {events:?}");
    };
    assert_eq!(got, config);
    p.server.respond_empty(*call).unwrap();
    p.pump();
    assert_eq!(
        p.client_events(),
        vec![ClientEvent::LocalConfigurationUpdated]
    );

    // Drain: the edge holds the unregister reply for a while (in-flight streams), but
    // within the RPC timeout.
    p.client.unregister(p.now).unwrap();
    p.pump();
    let events = p.server_events();
    let [ServerEvent::UnregisterConnection { call }] = &events[..] else {
        panic!("unexpected events {events:?}");
    };
    let deadline = p.client.poll_timeout().unwrap();
    assert_eq!(deadline, p.now + DEFAULT_RPC_TIMEOUT);
    p.advance(Duration::from_secs(3));
    assert!(p.client_events().is_empty());
    p.server.respond_empty(*call).unwrap();
    p.pump();
    assert_eq!(p.client_events(), vec![ClientEvent::Unregistered]);

    p.client.close();
    assert!(p.client.is_closed());
    p.pump();
    assert_eq!(
        p.server_events(),
        vec![ServerEvent::Closed {
            reason: SHUTDOWN_REASON.to_owned()
        }]
    );
    assert!(p.server.is_closed());
    assert!(matches!(
        p.client.unregister(p.now),
        Err(Error::ControlClosed)
    ));
}

#[test]
fn unanswered_registration_times_out_and_late_reply_is_dropped() {
    let mut p = Pair::new();
    let start = p.now;
    p.client.register(&request(SECRET, 1), p.now).unwrap();
    p.pump();
    let events = p.server_events();
    let [ServerEvent::RegisterConnection { call, .. }] = &events[..] else {
        panic!("unexpected events {events:?}");
    };
    assert_eq!(
        p.client.poll_timeout(),
        Some(start + Duration::from_secs(5))
    );
    p.advance(Duration::from_millis(4999));
    assert!(p.client_events().is_empty());
    p.advance(Duration::from_millis(1));
    assert_eq!(
        p.client_events(),
        vec![ClientEvent::RegistrationFailed(RegistrationError::Timeout)]
    );
    assert_eq!(p.client.poll_timeout(), None);
    // The client cancelled with Finish; the server may still answer, which the client
    // must drop quietly.
    p.pump();
    p.server
        .respond_register(*call, &ConnectionResponse::Details(details()))
        .unwrap();
    p.pump();
    assert!(p.client_events().is_empty());
    assert!(!p.client.is_closed());
}

#[test]
fn short_connection_uuid_fails_registration() {
    let mut p = Pair::new();
    p.client.register(&request(SECRET, 0), p.now).unwrap();
    p.pump();
    let events = p.server_events();
    let [ServerEvent::RegisterConnection { call, .. }] = &events[..] else {
        panic!("unexpected events {events:?}");
    };
    let bad = ConnectionDetails {
        uuid: vec![1, 2, 3],
        ..details()
    };
    p.server
        .respond_register(*call, &ConnectionResponse::Details(bad))
        .unwrap();
    p.pump();
    let events = p.client_events();
    assert!(matches!(
        &events[..],
        [ClientEvent::RegistrationFailed(
            RegistrationError::InvalidResponse { .. }
        )]
    ));
}

#[test]
fn rpc_exception_is_a_permanent_registration_error() {
    let mut p = Pair::new();
    p.client.register(&request(SECRET, 0), p.now).unwrap();
    p.pump();
    let events = p.server_events();
    let [ServerEvent::RegisterConnection { call, .. }] = &events[..] else {
        panic!("unexpected events {events:?}");
    };
    p.server.respond_exception(*call, "internal error").unwrap();
    // Answering twice is refused.
    assert!(matches!(
        p.server.respond_exception(*call, "again"),
        Err(Error::UnknownCall(_))
    ));
    p.pump();
    let events = p.client_events();
    let [ClientEvent::RegistrationFailed(error)] = &events[..] else {
        panic!("unexpected events {events:?}");
    };
    assert_eq!(
        *error,
        RegistrationError::Exception {
            reason: "internal error".to_owned()
        }
    );
    assert!(!error.should_retry());
}

fn raw_call(question_id: u32, target: Target, interface_id: u64, method_id: u16) -> Vec<u8> {
    Message::Call(Call {
        question_id,
        target,
        interface_id,
        method_id,
        params: Payload::of_struct(unregister_params()),
        send_results_to: SendResultsTo::Caller,
    })
    .encode()
    .unwrap()
}

fn returns(bytes: &[u8]) -> Vec<(u32, ReturnBody)> {
    decode_all(bytes)
        .into_iter()
        .filter_map(|m| match m {
            Message::Return(r) => Some((r.answer_id, r.body)),
            _ => None,
        })
        .collect()
}

#[test]
fn server_refuses_bad_targets_interfaces_and_methods() {
    let now = Instant::now();
    let mut server = ControlServer::new();
    // Before any bootstrap, the import does not exist.
    server
        .handle_input(
            &raw_call(5, Target::ImportedCap(0), REGISTRATION_SERVER_ID, 1),
            now,
        )
        .unwrap();
    server
        .handle_input(
            &Message::Bootstrap { question_id: 0 }.encode().unwrap(),
            now,
        )
        .unwrap();
    // Wrong interface, unknown method, pipelining with a transform.
    server
        .handle_input(
            &raw_call(6, Target::ImportedCap(0), SESSION_MANAGER_ID, 0),
            now,
        )
        .unwrap();
    server
        .handle_input(
            &raw_call(7, Target::ImportedCap(0), REGISTRATION_SERVER_ID, 9),
            now,
        )
        .unwrap();
    server
        .handle_input(
            &raw_call(
                8,
                Target::PromisedAnswer {
                    question_id: 0,
                    transform: vec![0],
                },
                REGISTRATION_SERVER_ID,
                1,
            ),
            now,
        )
        .unwrap();
    let mut out = Vec::new();
    server.poll_transmit(&mut out);
    let returns = returns(&out);
    let exceptions: Vec<u32> = returns
        .iter()
        .filter(|(_, body)| matches!(body, ReturnBody::Exception(_)))
        .map(|(id, _)| *id)
        .collect();
    assert_eq!(exceptions, vec![5, 6, 7, 8]);
    assert!(
        returns
            .iter()
            .any(|(id, body)| *id == 0 && matches!(body, ReturnBody::Results(_)))
    );
    assert_eq!(server.poll_event(), None);
}

#[test]
fn server_aborts_on_garbage_and_duplicate_questions() {
    let now = Instant::now();
    let mut server = ControlServer::new();
    // One segment of one word: a root pointer claiming 9 data words it does not have.
    let garbage = [0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0];
    assert!(server.handle_input(&garbage, now).is_err());
    assert!(server.is_closed());
    let mut out = Vec::new();
    server.poll_transmit(&mut out);
    assert!(matches!(decode_all(&out)[..], [Message::Abort(_)]));

    let mut server = ControlServer::new();
    let bootstrap = Message::Bootstrap { question_id: 0 }.encode().unwrap();
    server.handle_input(&bootstrap, now).unwrap();
    let err = server.handle_input(&bootstrap, now).unwrap_err();
    assert!(matches!(err, Error::RpcProtocol(_)));
}

#[test]
fn unknown_message_kinds_get_unimplemented_back() {
    let now = Instant::now();
    let mut server = ControlServer::new();
    // A `Disembargo` (discriminant 13, past the schema's last member): root Message
    // (1 / 1) at w1, discriminant at byte 0, its body (1 / 1) at w3, all zero.
    let disembargo: &[u8] = &[
        0, 0, 0, 0, 5, 0, 0, 0, //
        0, 0, 0, 0, 1, 0, 1, 0, //
        13, 0, 0, 0, 0, 0, 0, 0, //
        0, 0, 0, 0, 1, 0, 1, 0, //
        0, 0, 0, 0, 0, 0, 0, 0, //
        0, 0, 0, 0, 0, 0, 0, 0,
    ];
    let Ok(Decoded::Complete {
        value: Message::Unsupported { which: 13, message },
        ..
    }) = Message::decode(disembargo)
    else {
        panic!("a disembargo is not read as unsupported");
    };
    server.handle_input(disembargo, now).unwrap();
    let mut out = Vec::new();
    server.poll_transmit(&mut out);
    assert_eq!(decode_all(&out), vec![Message::Unimplemented(message)]);
    // The echo (from w2, the `unimplemented` pointer) is the message as it came,
    // word for word.
    assert_eq!(&out[24..], &disembargo[8..]);
    assert!(!server.is_closed());
}

#[test]
fn client_aborts_on_return_for_unknown_question() {
    let now = Instant::now();
    let mut client = ControlClient::new(DEFAULT_RPC_TIMEOUT);
    let stray = Message::Return(crate::rpc::Return {
        answer_id: 42,
        release_param_caps: true,
        body: ReturnBody::Canceled,
        no_finish_needed: false,
    });
    assert!(matches!(
        client.handle_input(&stray.encode().unwrap(), now),
        Err(Error::RpcProtocol(_))
    ));
    assert!(client.is_closed());
    let mut out = Vec::new();
    client.poll_transmit(&mut out);
    assert!(matches!(decode_all(&out)[..], [Message::Abort(_)]));
}

#[test]
fn edge_abort_closes_the_client() {
    let mut p = Pair::new();
    p.client.register(&request(SECRET, 0), p.now).unwrap();
    p.pump();
    p.server.close("edge going away");
    p.pump();
    let events = p.client_events();
    assert_eq!(
        events,
        vec![ClientEvent::Closed {
            reason: "edge going away".to_owned()
        }]
    );
    assert!(p.client.is_closed());
    assert_eq!(p.client.poll_timeout(), None);
}

#[test]
fn import_stays_callable_after_bootstrap_finish_releasing_caps() {
    // Some peers finish the bootstrap question with releaseResultCaps = true and
    // still call the import; the simulator must accept that.
    let now = Instant::now();
    let mut server = ControlServer::new();
    server
        .handle_input(
            &Message::Bootstrap { question_id: 0 }.encode().unwrap(),
            now,
        )
        .unwrap();
    let finish = Message::Finish(crate::rpc::Finish {
        question_id: 0,
        release_result_caps: true,
    });
    server.handle_input(&finish.encode().unwrap(), now).unwrap();
    assert_eq!(server.bootstrap_references(), 0);
    server
        .handle_input(
            &raw_call(1, Target::ImportedCap(0), REGISTRATION_SERVER_ID, 1),
            now,
        )
        .unwrap();
    assert!(matches!(
        server.poll_event(),
        Some(ServerEvent::UnregisterConnection { call }) if call.question_id() == 1
    ));
}

proptest::proptest! {
    #[test]
    fn any_chunking_of_the_stream_gives_the_same_result(
        cuts in proptest::collection::vec(1usize..40, 1..64),
    ) {
        let now = Instant::now();
        let mut client = ControlClient::new(DEFAULT_RPC_TIMEOUT);
        let mut server = ControlServer::new();
        client.register(&request(SECRET, 0), now).unwrap();
        let mut up = Vec::new();
        client.poll_transmit(&mut up);
        let mut chunks = cuts.iter().cycle();
        let mut rest = &up[..];
        while !rest.is_empty() {
            let n = (*chunks.next().unwrap()).min(rest.len());
            server.handle_input(&rest[..n], now).unwrap();
            rest = &rest[n..];
        }
        let Some(ServerEvent::RegisterConnection { call, request: got }) = server.poll_event() else {
            panic!("no registration");
        };
        proptest::prop_assert_eq!(got, request(SECRET, 0));
        server.respond_register(call, &ConnectionResponse::Details(details())).unwrap();
        let mut down = Vec::new();
        server.poll_transmit(&mut down);
        let mut rest = &down[..];
        while !rest.is_empty() {
            let n = (*chunks.next().unwrap()).min(rest.len());
            client.handle_input(&rest[..n], now).unwrap();
            rest = &rest[n..];
        }
        proptest::prop_assert_eq!(client.poll_event(), Some(ClientEvent::Registered(details())));
        proptest::prop_assert_eq!(client.poll_event(), None);
    }

    #[test]
    fn arbitrary_input_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
        let now = Instant::now();
        let mut server = ControlServer::new();
        let mut client = ControlClient::new(DEFAULT_RPC_TIMEOUT);
        // An error must leave the side closed with an Abort queued.
        if server.handle_input(&bytes, now).is_err() {
            proptest::prop_assert!(server.is_closed());
            let mut out = Vec::new();
            server.poll_transmit(&mut out);
            proptest::prop_assert!(matches!(decode_all(&out).last(), Some(Message::Abort(_))));
        }
        if client.handle_input(&bytes, now).is_err() {
            proptest::prop_assert!(client.is_closed());
        }
    }
}
