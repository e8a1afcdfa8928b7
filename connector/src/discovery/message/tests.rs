use std::net::Ipv4Addr;

use proptest::prelude::*;

use super::*;

fn name(text: &str) -> Name {
    Name::parse(text).expect("valid name")
}

const SRV: &str = "_v2-origintunneld._tcp.argotunnel.com";

/// A reply to `encode_query(id, SRV, Srv)` with two SRV records whose owner names
/// point at the question and whose targets are partly compressed, and one A
/// record for the first target.
fn srv_reply(id: u16) -> Vec<u8> {
    let mut m = encode_query(id, &name(SRV), RecordType::Srv);
    // QR, RD, RA; three answers.
    m[2] = 0x81;
    m[3] = 0x80;
    m[7] = 3;
    let question = 12u8;
    // `argotunnel.com` inside the question: after `_v2-origintunneld` (18) and `_tcp` (5).
    let domain = question + 18 + 5;
    for (i, (label, port)) in [("region1", 7844u16), ("region2", 7845)].iter().enumerate() {
        m.extend_from_slice(&[0xc0, question]);
        m.extend_from_slice(&33u16.to_be_bytes());
        m.extend_from_slice(&1u16.to_be_bytes());
        m.extend_from_slice(&300u32.to_be_bytes());
        // priority, weight, port, then `regionN.v2` + pointer.
        let rdata_len = 6 + 1 + label.len() + 3 + 2;
        m.extend_from_slice(&u16::try_from(rdata_len).expect("small").to_be_bytes());
        m.extend_from_slice(&1u16.to_be_bytes());
        m.extend_from_slice(&u16::try_from(i).expect("small").to_be_bytes());
        m.extend_from_slice(&port.to_be_bytes());
        m.push(u8::try_from(label.len()).expect("small"));
        m.extend_from_slice(label.as_bytes());
        m.extend_from_slice(&[2, b'v', b'2', 0xc0, domain]);
    }
    // An A record owned by `region1.v2.argotunnel.com`, written out in full.
    m.extend_from_slice(name("region1.v2.argotunnel.com").wire());
    m.extend_from_slice(&1u16.to_be_bytes());
    m.extend_from_slice(&1u16.to_be_bytes());
    m.extend_from_slice(&60u32.to_be_bytes());
    m.extend_from_slice(&4u16.to_be_bytes());
    m.extend_from_slice(&[198, 41, 192, 7]);
    m
}

fn parse(m: &[u8]) -> Result<Received, Error> {
    parse_reply(m, 0x1234, &name(SRV), RecordType::Srv)
}

#[test]
fn query_layout() {
    let q = encode_query(0xabcd, &name("a.bc"), RecordType::Aaaa);
    assert_eq!(
        q,
        [
            0xab, 0xcd, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 1, b'a', 2, b'b', b'c', 0, 0, 28, 0, 1
        ]
    );
}

#[test]
fn reads_srv_records_with_compressed_names() {
    let Received::Reply(reply) = parse(&srv_reply(0x1234)).expect("valid") else {
        panic!("not ours");
    };
    assert!(!reply.truncated);
    assert_eq!(reply.rcode, RCODE_NOERROR);
    assert_eq!(reply.answers.len(), 3);
    assert_eq!(reply.answers[0].name, name(SRV));
    assert_eq!(
        reply.answers[1].data,
        RecordData::Srv(Srv {
            priority: 1,
            weight: 1,
            port: 7845,
            target: name("region2.v2.argotunnel.com"),
        })
    );
    assert_eq!(reply.answers[2].ttl, 60);
    assert_eq!(
        reply.answers[2].data,
        RecordData::A(Ipv4Addr::new(198, 41, 192, 7))
    );
}

#[test]
fn names_compare_without_case() {
    let mut m = srv_reply(0x1234);
    // Upper-case the question's `_TCP`.
    for b in &mut m[31..34] {
        b.make_ascii_uppercase();
    }
    assert!(matches!(parse(&m), Ok(Received::Reply(_))));
}

#[test]
fn other_ids_questions_and_queries_are_not_ours() {
    assert_eq!(
        parse(&srv_reply(0x1235)).expect("parses"),
        Received::NotOurs
    );
    let mut query_only = srv_reply(0x1234);
    query_only[2] &= 0x7f;
    assert_eq!(parse(&query_only).expect("parses"), Received::NotOurs);
    let other = parse_reply(
        &srv_reply(0x1234),
        0x1234,
        &name("other.test"),
        RecordType::Srv,
    )
    .expect("parses");
    assert_eq!(other, Received::NotOurs);
    let other_type = parse_reply(&srv_reply(0x1234), 0x1234, &name(SRV), RecordType::A);
    assert_eq!(other_type.expect("parses"), Received::NotOurs);
}

#[test]
fn truncated_reply_has_no_answers() {
    let mut m = srv_reply(0x1234);
    m[2] |= 0x02;
    // Header and question only.
    m.truncate(12 + name(SRV).wire().len() + 4);
    let Received::Reply(reply) = parse(&m).expect("valid") else {
        panic!("not ours");
    };
    assert!(reply.truncated);
    assert!(reply.answers.is_empty());
}

#[test]
fn rcode_is_reported() {
    let mut m = encode_query(0x1234, &name(SRV), RecordType::Srv);
    m[2] = 0x81;
    m[3] = 0x83;
    let Received::Reply(reply) = parse(&m).expect("valid") else {
        panic!("not ours");
    };
    assert_eq!(reply.rcode, RCODE_NXDOMAIN);
}

#[test]
fn pointer_loops_and_forward_pointers_are_refused() {
    // A name that is a pointer to itself.
    let msg = [0u8, 0, 0xc0, 2];
    assert!(read_name(&msg, 2).is_err());
    // Two pointers pointing at each other.
    let msg = [0xc0, 2, 0xc0, 0];
    assert!(read_name(&msg, 2).is_err());
    // A pointer forward.
    let msg = [0xc0, 2, 0];
    assert!(read_name(&msg, 0).is_err());
    // A backward pointer chain is fine.
    let msg = [1, b'a', 0, 1, b'b', 0xc0, 0, 0xc0, 3];
    let (n, next) = read_name(&msg, 7).expect("valid");
    assert_eq!(n.to_string(), "b.a");
    assert_eq!(next, 9);
}

#[test]
fn bad_lengths_are_errors() {
    // Label past the end.
    assert!(read_name(&[5, b'a'], 0).is_err());
    // Extended label type.
    assert!(read_name(&[0x41, 0], 0).is_err());
    // A name over 255 bytes.
    let mut long = Vec::new();
    for _ in 0..5 {
        long.push(63);
        long.extend_from_slice(&[b'x'; 63]);
    }
    long.push(0);
    assert!(read_name(&long, 0).is_err());
    // An A record of 5 bytes.
    let mut m = srv_reply(0x1234);
    let len = m.len();
    m[len - 5] = 5;
    m.push(1);
    assert!(parse(&m).is_err());
    // An answer count larger than the answers.
    let mut m = srv_reply(0x1234);
    m[7] = 4;
    assert!(parse(&m).is_err());
    // SRV data length that does not match its target.
    let mut m = srv_reply(0x1234);
    let srv_len_at = 12 + name(SRV).wire().len() + 4 + 2 + 2 + 2 + 4;
    m[srv_len_at + 1] += 1;
    assert!(parse(&m).is_err());
}

#[test]
fn invalid_query_names_are_refused() {
    assert!(Name::parse("a..b").is_err());
    assert!(Name::parse("a b").is_err());
    assert!(Name::parse(&"x".repeat(64)).is_err());
    assert!(Name::parse(&["abcdefgh"; 30].join(".")).is_err());
    assert_eq!(name("Example.COM.").to_string(), "example.com");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = parse(&bytes);
        let _ = parse_reply(&bytes, u16::from_be_bytes([bytes.first().copied().unwrap_or(0), bytes.get(1).copied().unwrap_or(0)]), &name(SRV), RecordType::A);
        for start in 0..bytes.len().min(32) {
            let _ = read_name(&bytes, start);
        }
    }

    #[test]
    fn mutated_replies_never_panic(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut m = srv_reply(0x1234);
        for (at, byte) in edits {
            let i = at.index(m.len());
            m[i] = byte;
        }
        let _ = parse(&m);
        m.truncate(cut.index(m.len() + 1));
        let _ = parse(&m);
    }
}
