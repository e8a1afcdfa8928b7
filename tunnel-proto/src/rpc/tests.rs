use proptest::prelude::*;

use super::*;
use crate::Decoded;
use crate::capnp::decode_message;
use crate::schema::REGISTRATION_SERVER_ID;

fn decode(buf: &[u8]) -> Message {
    match decode_message(buf).unwrap() {
        Decoded::Complete { value, consumed } => {
            assert_eq!(consumed, buf.len());
            Message::from_struct(&value).unwrap()
        }
        Decoded::Incomplete { .. } => panic!("incomplete"),
    }
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
    assert_eq!(message.encode(), BOOTSTRAP_GOLDEN);
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
        params: Payload::of_struct(StructValue::default()),
        send_results_to: 0,
    });
    assert_eq!(message.encode(), CALL_GOLDEN);
    assert_eq!(decode(CALL_GOLDEN), message);
}

#[test]
fn finish_matches_golden() {
    let message = Message::Finish(Finish {
        question_id: 1,
        release_result_caps: true,
    });
    assert_eq!(message.encode(), FINISH_GOLDEN);
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
    let s = message.to_struct();
    let ret = s.struct_at(0, "return").unwrap();
    // answerId bytes 0..4; releaseParamCaps bit 32 stored XOR true -> 1; noFinishNeeded
    // bit 33 -> 1; discriminant 1 (exception) at byte 6.
    assert_eq!(ret.data[0], 0x0001_0003_0102_0304);
    assert_eq!(decode(&message.encode()), message);
}

#[test]
fn bootstrap_return_carries_the_capability() {
    let message = Message::Return(Return {
        answer_id: 0,
        release_param_caps: true,
        body: ReturnBody::Results(Payload {
            content: Pointer::Capability(0),
            cap_table: vec![CapDescriptor::SenderHosted(0)],
        }),
        no_finish_needed: false,
    });
    let s = message.to_struct();
    let payload = s
        .struct_at(0, "return")
        .unwrap()
        .struct_at(0, "payload")
        .unwrap();
    let caps = payload.struct_list_at(1, "caps").unwrap();
    // CapDescriptor: discriminant 1 (senderHosted) at byte 0, id at byte 4.
    assert_eq!(caps[0].data, vec![1]);
    assert_eq!(decode(&message.encode()), message);
}

#[test]
fn unknown_message_kinds_are_reported_not_rejected() {
    let mut root = StructValue::new(1, 1);
    root.set_u16(0, 13); // disembargo
    assert_eq!(
        Message::from_struct(&root).unwrap(),
        Message::Unsupported(13)
    );
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

fn payload() -> impl Strategy<Value = Payload> {
    (
        prop_oneof![
            Just(Pointer::Null),
            any::<u32>().prop_map(Pointer::Capability),
            any::<u64>().prop_map(|w| Pointer::Struct(StructValue {
                data: vec![w],
                ptrs: Vec::new()
            })),
        ],
        proptest::collection::vec(
            prop_oneof![
                Just(CapDescriptor::None),
                any::<u32>().prop_map(CapDescriptor::SenderHosted),
                any::<u32>().prop_map(CapDescriptor::SenderPromise),
                any::<u32>().prop_map(CapDescriptor::ReceiverHosted),
            ],
            0..3,
        ),
    )
        .prop_map(|(content, cap_table)| Payload { content, cap_table })
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
            0u16..3
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
        prop_assert_eq!(decode(&message.encode()), message);
    }

    #[test]
    fn arbitrary_roots_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        // Whatever decodes must re-encode to the same typed message.
        if let Ok(Decoded::Complete { value, .. }) = decode_message(&bytes) {
            if let Ok(message) = Message::from_struct(&value) {
                if !matches!(message, Message::Unsupported(_)) {
                    prop_assert_eq!(decode(&message.encode()), message);
                }
            }
        }
    }
}
