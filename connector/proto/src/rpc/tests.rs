use capnp::raw;
use proptest::prelude::*;

use super::*;
use crate::Decoded;
use crate::codec;
use crate::generated::rpc_capnp::{message, return_};
use crate::generated::tunnelrpc_capnp::connection_error;
use crate::registration::unregister_params;
use crate::schema::REGISTRATION_SERVER_ID;

fn decode(buf: &[u8]) -> Message {
    match Message::decode(buf).unwrap() {
        Decoded::Complete { value, consumed } => {
            assert_eq!(consumed, buf.len());
            value
        }
        Decoded::Incomplete { .. } => panic!("incomplete"),
    }
}

fn encode(message: &Message) -> Vec<u8> {
    message.encode().unwrap()
}

/// The data section of the `Return` in an encoded `Message`.
fn return_data(buf: &[u8]) -> Vec<u8> {
    let Decoded::Complete { value: frame, .. } = codec::read(buf).unwrap() else {
        panic!("incomplete");
    };
    let root: message::Reader<'_> = codec::root(&frame).unwrap();
    let Ok(message::Return(ret)) = root.which() else {
        panic!("not a return");
    };
    let ret: return_::Reader<'_> = ret.unwrap();
    raw::get_struct_data_section(ret).to_vec()
}

/// `Bootstrap { questionId: 0 }` from rpc.capnp's layouts:
/// * header: one segment, 5 words;
/// * w0 root: Message (1 / 1) at w1 -> high half 0x0001_0001;
/// * w1: discriminant 8 (bootstrap) at byte 0;
/// * w2: Bootstrap (1 / 1) at w3 -> high half 0x0001_0001;
/// * w3: questionId 0; w4: deprecatedObjectId null.
const BOOTSTRAP_GOLDEN: &[u8] = &[
    0, 0, 0, 0, 5, 0, 0, 0, //
    0, 0, 0, 0, 1, 0, 1, 0, //
    8, 0, 0, 0, 0, 0, 0, 0, //
    0, 0, 0, 0, 1, 0, 1, 0, //
    0, 0, 0, 0, 0, 0, 0, 0, //
    0, 0, 0, 0, 0, 0, 0, 0,
];

/// `Call { questionId: 1, target: promisedAnswer{0, []}, interfaceId:
/// RegistrationServer, methodId: 1 (unregisterConnection), params: {} }`:
/// * header: one segment, 15 words;
/// * w0 root: Message at w1; w1: discriminant 2 (call);
/// * w2: Call (3 / 3) at w3 -> high half 0x0003_0003;
/// * w3: questionId 1 (bytes 0..4), methodId 1 (bytes 4..6), sendResultsTo 0 (caller);
/// * w4: interfaceId 0xf71695ec7fe85497 little-endian; w5: the bools, all false;
/// * w6: target, MessageTarget (1 / 1) at w9 (offset 2) -> low 2 << 2 = 8;
/// * w7: params, Payload (0 / 2) at w13 (offset 5) -> low 5 << 2 = 0x14;
/// * w8: sendResultsTo.thirdParty null;
/// * w9: MessageTarget data: discriminant 1 (promisedAnswer) at byte 4;
/// * w10: PromisedAnswer (1 / 1) at w11; w11: questionId 0; w12: empty transform, null;
/// * w13: content: the empty params struct, offset -1 -> 0xfffffffc; w14: no cap table.
const CALL_GOLDEN: &[u8] = &[
    0, 0, 0, 0, 15, 0, 0, 0, //
    0, 0, 0, 0, 1, 0, 1, 0, //
    2, 0, 0, 0, 0, 0, 0, 0, //
    0, 0, 0, 0, 3, 0, 3, 0, //
    1, 0, 0, 0, 1, 0, 0, 0, //
    0x97, 0x54, 0xe8, 0x7f, 0xec, 0x95, 0x16, 0xf7, //
    0, 0, 0, 0, 0, 0, 0, 0, //
    8, 0, 0, 0, 1, 0, 1, 0, //
    0x14, 0, 0, 0, 0, 0, 2, 0, //
    0, 0, 0, 0, 0, 0, 0, 0, //
    0, 0, 0, 0, 1, 0, 0, 0, //
    0, 0, 0, 0, 1, 0, 1, 0, //
    0, 0, 0, 0, 0, 0, 0, 0, //
    0, 0, 0, 0, 0, 0, 0, 0, //
    0xfc, 0xff, 0xff, 0xff, 0, 0, 0, 0, //
    0, 0, 0, 0, 0, 0, 0, 0,
];

/// `Finish { questionId: 1, releaseResultCaps: true }`: Message at w1 with
/// discriminant 4; Finish (1 / 0) at w3; releaseResultCaps defaults to true, so bit 32
/// holds `value XOR true` = 0.
const FINISH_GOLDEN: &[u8] = &[
    0, 0, 0, 0, 4, 0, 0, 0, //
    0, 0, 0, 0, 1, 0, 1, 0, //
    4, 0, 0, 0, 0, 0, 0, 0, //
    0, 0, 0, 0, 1, 0, 0, 0, //
    1, 0, 0, 0, 0, 0, 0, 0,
];

#[test]
fn bootstrap_matches_golden() {
    let message = Message::Bootstrap { question_id: 0 };
    assert_eq!(encode(&message), BOOTSTRAP_GOLDEN);
    assert_eq!(decode(BOOTSTRAP_GOLDEN), message);
}

#[test]
fn pipelined_call_matches_golden() {
    let message = Message::Call(Call {
        question_id: 1,
        target: Target::PromisedAnswer {
            question_id: 0,
            transform: Vec::new(),
        },
        interface_id: REGISTRATION_SERVER_ID,
        method_id: 1,
        params: Payload::of_struct(unregister_params()),
        send_results_to: SendResultsTo::Caller,
    });
    assert_eq!(encode(&message), CALL_GOLDEN);
    assert_eq!(decode(CALL_GOLDEN), message);
}

#[test]
fn finish_matches_golden() {
    let message = Message::Finish(Finish {
        question_id: 1,
        release_result_caps: true,
    });
    assert_eq!(encode(&message), FINISH_GOLDEN);
    let Message::Finish(finish) = message else {
        unreachable!()
    };
    assert_eq!(finish.encode(), FINISH_GOLDEN);
    assert_eq!(decode(FINISH_GOLDEN), message);
}

#[test]
fn return_field_positions() {
    let message = Message::Return(Return {
        answer_id: 0x0102_0304,
        release_param_caps: false,
        body: ReturnBody::Exception(Exception::failed("nope")),
        no_finish_needed: true,
    });
    let buf = encode(&message);
    // answerId bytes 0..4; releaseParamCaps bit 32 stored XOR true -> 1; noFinishNeeded
    // bit 33 -> 1; discriminant 1 (exception) at byte 6; word 1 unused.
    let data = return_data(&buf);
    assert_eq!(data[..8], 0x0001_0003_0102_0304u64.to_le_bytes());
    assert_eq!(data[8..], [0; 8]);
    assert_eq!(decode(&buf), message);
}

/// The bootstrap answer the edge sends: `Return { answerId: 0, results: { content:
/// capability 0, capTable: [senderHosted 0] } }`:
/// * header: one segment, 11 words;
/// * w0 root: Message at w1; w1: discriminant 3 (return);
/// * w2: Return (2 / 1) at w3 -> high half 0x0001_0002;
/// * w3, w4: answerId 0, releaseParamCaps true stored as 0, discriminant 0 (results);
/// * w5: results, Payload (0 / 2) at w6 -> high half 0x0002_0000;
/// * w6: content, a capability pointer ("other" kind 3) with cap-table index 0;
/// * w7: capTable, composite list at w8, 2 words -> low 1, high 7 | 2 << 3 = 0x17;
/// * w8: tag, 1 element, 1 data word / 1 pointer;
/// * w9: discriminant 1 (senderHosted), attachedFd 0xff stored as 0, id 0; w10: null.
const BOOTSTRAP_RETURN_GOLDEN: &[u8] = &[
    0, 0, 0, 0, 11, 0, 0, 0, //
    0, 0, 0, 0, 1, 0, 1, 0, //
    3, 0, 0, 0, 0, 0, 0, 0, //
    0, 0, 0, 0, 2, 0, 1, 0, //
    0, 0, 0, 0, 0, 0, 0, 0, //
    0, 0, 0, 0, 0, 0, 0, 0, //
    0, 0, 0, 0, 0, 0, 2, 0, //
    3, 0, 0, 0, 0, 0, 0, 0, //
    1, 0, 0, 0, 0x17, 0, 0, 0, //
    4, 0, 0, 0, 1, 0, 1, 0, //
    1, 0, 0, 0, 0, 0, 0, 0, //
    0, 0, 0, 0, 0, 0, 0, 0,
];

#[test]
fn bootstrap_return_carries_the_capability() {
    let message = Message::Return(Return {
        answer_id: 0,
        release_param_caps: true,
        body: ReturnBody::Results(Payload::of_capability(CapDescriptor::SenderHosted(0))),
        no_finish_needed: false,
    });
    assert_eq!(encode(&message), BOOTSTRAP_RETURN_GOLDEN);
    assert_eq!(decode(BOOTSTRAP_RETURN_GOLDEN), message);
}

#[test]
fn capability_outside_the_cap_table_is_an_error() {
    // The bootstrap answer with its cap table cut off (w7 null, 8 words).
    let mut buf = BOOTSTRAP_RETURN_GOLDEN[..8 + 8 * 8].to_vec();
    buf[4] = 8;
    buf[8 + 7 * 8..].fill(0);
    let err = Message::decode(&buf).unwrap_err();
    assert!(err.to_string().contains("rpc Return.results"), "{err}");
    // Nor can one be written.
    let message = Message::Return(Return {
        answer_id: 0,
        release_param_caps: true,
        body: ReturnBody::Results(Payload {
            content: Content::Capability(1),
            cap_table: vec![CapDescriptor::SenderHosted(0)],
        }),
        no_finish_needed: false,
    });
    assert!(matches!(message.encode(), Err(Error::CapnpLimit(_))));
}

#[test]
fn unknown_message_kinds_are_reported_not_rejected() {
    // A `Resolve` (5), in the schema but not typed: reported with the message kept.
    let mut builder = codec::builder(8);
    builder
        .init_root::<message::Builder<'_>>()
        .init_resolve()
        .set_promise_id(7);
    let buf = codec::write(&builder);
    let Message::Unsupported { which: 5, message } = decode(&buf) else {
        panic!("a resolve is not reported as unsupported");
    };
    // It encodes back to the message it was, which the echo then carries.
    let again = encode(&Message::Unsupported {
        which: 5,
        message: message.clone(),
    });
    assert_eq!(again, buf);
    assert_eq!(
        decode(&encode(&Message::Unimplemented(message.clone()))),
        Message::Unimplemented(message)
    );
}

#[test]
fn unknown_union_members_are_errors() {
    // BOOTSTRAP_RETURN_GOLDEN with the Return discriminant (w3 byte 6) set to 9.
    let mut buf = BOOTSTRAP_RETURN_GOLDEN.to_vec();
    buf[8 + 3 * 8 + 6] = 9;
    assert!(matches!(
        Message::decode(&buf),
        Err(Error::Schema {
            structure: "rpc Return",
            ..
        })
    ));
}

#[test]
fn deeply_nested_echoes_are_refused() {
    // `Unimplemented` echoing an `Unimplemented` echoing ... 100 deep: each Message
    // (1 / 1) is a zero data word and a pointer to the next one right after it.
    let depth = 100;
    let next = 0x0001_0001_0000_0000u64;
    let mut words = vec![next];
    for _ in 1..depth {
        words.extend([0, next]);
    }
    words.extend([0, 0]);
    let mut buf = vec![0, 0, 0, 0];
    buf.extend_from_slice(&(words.len() as u32).to_le_bytes());
    buf.extend(words.iter().flat_map(|w| w.to_le_bytes()));
    let err = Message::decode(&buf).unwrap_err().to_string();
    assert!(err.contains("nested"), "{err}");
}

fn exception() -> impl Strategy<Value = Exception> {
    (".{0,16}", any::<u16>()).prop_map(|(reason, kind)| Exception {
        reason,
        kind: match kind % 5 {
            0 => ExceptionType::Failed,
            1 => ExceptionType::Overloaded,
            2 => ExceptionType::Disconnected,
            3 => ExceptionType::Unimplemented,
            _ => ExceptionType::Other(kind.max(4)),
        },
    })
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        any::<u32>().prop_map(Target::ImportedCap),
        (any::<u32>(), proptest::collection::vec(any::<u16>(), 0..3)).prop_map(|(q, t)| {
            Target::PromisedAnswer {
                question_id: q,
                transform: t,
            }
        }),
    ]
}

fn cap_descriptor() -> impl Strategy<Value = CapDescriptor> {
    prop_oneof![
        Just(CapDescriptor::None),
        any::<u32>().prop_map(CapDescriptor::SenderHosted),
        any::<u32>().prop_map(CapDescriptor::SenderPromise),
        any::<u32>().prop_map(CapDescriptor::ReceiverHosted),
        Just(CapDescriptor::ReceiverAnswer),
        Just(CapDescriptor::ThirdPartyHosted),
    ]
}

fn payload() -> impl Strategy<Value = Payload> {
    (
        proptest::collection::vec(cap_descriptor(), 0..3),
        any::<prop::sample::Index>(),
        any::<i64>(),
        0u8..3,
    )
        .prop_map(|(cap_table, index, word, kind)| {
            let content = match kind {
                0 => Content::Null,
                1 if !cap_table.is_empty() => {
                    Content::Capability(index.index(cap_table.len()) as u32)
                }
                _ => Content::Object(Object::build::<connection_error::Owned>(|mut b| {
                    b.set_retry_after(word);
                })),
            };
            Payload { content, cap_table }
        })
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        exception().prop_map(Message::Abort),
        (
            any::<u32>(),
            target(),
            any::<u64>(),
            any::<u16>(),
            payload(),
            prop_oneof![
                Just(SendResultsTo::Caller),
                Just(SendResultsTo::Yourself),
                Just(SendResultsTo::ThirdParty),
            ]
        )
            .prop_map(
                |(q, target, iface, method, params, to)| Message::Call(Call {
                    question_id: q,
                    target,
                    interface_id: iface,
                    method_id: method,
                    params,
                    send_results_to: to,
                })
            ),
        (
            any::<u32>(),
            any::<bool>(),
            any::<bool>(),
            prop_oneof![
                payload().prop_map(ReturnBody::Results),
                exception().prop_map(ReturnBody::Exception),
                Just(ReturnBody::Canceled),
                Just(ReturnBody::ResultsSentElsewhere),
                any::<u32>().prop_map(ReturnBody::TakeFromOtherQuestion),
                Just(ReturnBody::AcceptFromThirdParty),
            ]
        )
            .prop_map(|(id, release, no_finish, body)| Message::Return(Return {
                answer_id: id,
                release_param_caps: release,
                body,
                no_finish_needed: no_finish,
            })),
        (any::<u32>(), any::<bool>()).prop_map(|(q, r)| Message::Finish(Finish {
            question_id: q,
            release_result_caps: r,
        })),
        any::<u32>().prop_map(|q| Message::Bootstrap { question_id: q }),
        (any::<u32>(), any::<u32>()).prop_map(|(id, n)| Message::Release {
            id,
            reference_count: n,
        }),
    ]
}

proptest! {
    #[test]
    fn messages_round_trip(message in message()) {
        prop_assert_eq!(decode(&encode(&message)), message);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        // Whatever decodes re-encodes to the same typed message.
        if let Ok(Decoded::Complete { value, consumed }) = Message::decode(&bytes) {
            prop_assert!(consumed <= bytes.len());
            prop_assert_eq!(decode(&encode(&value)), value);
        }
    }
}
