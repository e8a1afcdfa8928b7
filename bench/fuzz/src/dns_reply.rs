//! `dns_reply`: a DNS reply to the edge discovery's queries, as the stub resolver
//! of `culvert-connector` reads it from the network, and the `resolv.conf` text
//! it reads its nameservers from.
//!
//! The reply is parsed as the answer to an SRV, an A and an AAAA query with the
//! ID its first two bytes carry (so the fuzzer reaches past the ID check), and a
//! name is read at a few offsets. Whatever the bytes: no panic; a reply holds no
//! more answers than its header counts; every name read prints and parses back to
//! itself when it is a host name; a truncated reply carries no answers.

use culvert_connector::discovery::ResolverConfig;
use culvert_connector::discovery::message::{
    Name, Received, RecordData, RecordType, parse_reply, read_name,
};

/// Parses `data` as a reply and as `resolv.conf`; panics on a violated property.
pub fn dns_reply(data: &[u8]) {
    let id = u16::from_be_bytes([
        data.first().copied().unwrap_or(0),
        data.get(1).copied().unwrap_or(0),
    ]);
    let ancount = data
        .get(6..8)
        .map_or(0, |b| usize::from(u16::from_be_bytes([b[0], b[1]])));
    for (question, rtype) in [
        ("_v2-origintunneld._tcp.argotunnel.com", RecordType::Srv),
        ("region1.v2.argotunnel.com", RecordType::A),
        ("region2.v2.argotunnel.com", RecordType::Aaaa),
    ] {
        let Ok(name) = Name::parse(question) else {
            panic!("{question} is a name");
        };
        if let Ok(Received::Reply(reply)) = parse_reply(data, id, &name, rtype) {
            assert!(reply.answers.len() <= ancount, "more answers than counted");
            if reply.truncated {
                assert!(reply.answers.is_empty(), "a truncated reply's answers");
            }
            for record in &reply.answers {
                round_trips(&record.name);
                if let RecordData::Srv(srv) = &record.data {
                    round_trips(&srv.target);
                }
                if let RecordData::Cname(target) = &record.data {
                    round_trips(target);
                }
            }
        }
    }
    for at in [0, 12, data.len() / 2] {
        if let Ok((name, _)) = read_name(data, at) {
            round_trips(&name);
        }
    }
    let _ = ResolverConfig::parse(&String::from_utf8_lossy(data));
}

/// A name made only of host-name characters prints as text that parses back to it.
fn round_trips(name: &Name) {
    let printed = name.to_string();
    if printed.contains('\\') {
        return;
    }
    if let Ok(again) = Name::parse(&printed) {
        assert_eq!(&again, name, "{printed:?} does not parse back");
    }
}
