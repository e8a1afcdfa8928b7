//! The control stream: both sides of its two-party RPC, fed the input as what the
//! peer sent.
//!
//! [`ControlServer`] (the edge) reads the input as the connector's messages and
//! answers every call it reports; [`ControlClient`] (the connector) has registered,
//! pushed a configuration and unregistered, all unanswered, and reads the input as
//! the edge's answers. Either side must end the same whether the bytes come in one
//! read, two, or one byte at a time: the same first error, events and bytes sent.
//! The registration structures are decoded on these paths.

#![allow(
    clippy::disallowed_methods,
    reason = "the fuzz target gives the sans-IO core a base instant"
)]

use std::time::Instant;

use culvert_connector::proto::{
    ClientEvent, ClientInfo, ConnectionDetails, ConnectionOptions, ConnectionResponse,
    ControlClient, ControlServer, RegisterConnection, ServerEvent, TunnelAuth,
    control::DEFAULT_RPC_TIMEOUT,
};

/// Inputs up to this long are also fed one byte at a time.
const BYTEWISE_MAX: usize = 512;

/// How one side took the input.
#[derive(Debug, PartialEq, Eq)]
struct Run<E> {
    /// The first error `handle_input` returned, as text.
    error: Option<String>,
    events: Vec<E>,
    /// Everything the side sent after its own first calls.
    sent: Vec<u8>,
    closed: bool,
}

/// The reads to compare: whole, cut in two where the input says, and bytewise.
fn feeds(payload: &[u8]) -> Vec<Vec<&[u8]>> {
    let cut = usize::from(payload.first().copied().unwrap_or(0)) % (payload.len() + 1);
    let (first, second) = payload.split_at(cut);
    let mut feeds = vec![vec![payload], vec![first, second]];
    if payload.len() <= BYTEWISE_MAX {
        feeds.push(payload.chunks(1).collect());
    }
    feeds
}

/// The edge's side.
pub(super) fn server(payload: &[u8]) {
    let now = Instant::now();
    let mut feeds = feeds(payload).into_iter();
    let Some(whole) = feeds.next().map(|reads| run_server(&reads, now)) else {
        return;
    };
    for reads in feeds {
        assert_eq!(
            run_server(&reads, now),
            whole,
            "the edge reads {} pieces otherwise than one",
            reads.len()
        );
    }
}

fn run_server(reads: &[&[u8]], now: Instant) -> Run<ServerEvent> {
    let mut server = ControlServer::new();
    let mut error = None;
    for read in reads {
        if let Err(e) = server.handle_input(read, now) {
            error.get_or_insert(e.to_string());
        }
    }
    let mut events = Vec::new();
    while let Some(event) = server.poll_event() {
        // Answers may be refused (a call already finished); they must not panic.
        let _ = match &event {
            ServerEvent::RegisterConnection { call, .. } => {
                server.respond_register(*call, &ConnectionResponse::Details(details()))
            }
            ServerEvent::UnregisterConnection { call } => server.respond_empty(*call),
            ServerEvent::UpdateLocalConfiguration { call, .. } => {
                server.respond_exception(*call, "not now")
            }
            ServerEvent::Closed { .. } => Ok(()),
        };
        events.push(event);
    }
    let mut sent = Vec::new();
    server.poll_transmit(&mut sent);
    server.bootstrap_references();
    Run {
        error,
        events,
        sent,
        closed: server.is_closed(),
    }
}

/// The connector's side, every call outstanding.
pub(super) fn client(payload: &[u8]) {
    let now = Instant::now();
    let mut feeds = feeds(payload).into_iter();
    let Some(whole) = feeds.next().map(|reads| run_client(&reads, now)) else {
        return;
    };
    for reads in feeds {
        assert_eq!(
            run_client(&reads, now),
            whole,
            "the connector reads {} pieces otherwise than one",
            reads.len()
        );
    }
}

fn run_client(reads: &[&[u8]], now: Instant) -> Run<ClientEvent> {
    let mut client = ControlClient::new(DEFAULT_RPC_TIMEOUT);
    // Calls on a fresh client cannot fail; the fuzz input answers them.
    let calls = [
        client.register(&register_request(), now),
        client.update_local_configuration(br#"{"ingress":[]}"#, now),
        client.unregister(now),
    ];
    assert!(calls.iter().all(Result::is_ok), "calls refused: {calls:?}");
    client.poll_transmit(&mut Vec::new());
    let mut error = None;
    for read in reads {
        if let Err(e) = client.handle_input(read, now) {
            error.get_or_insert(e.to_string());
        }
    }
    // Whatever is still unanswered times out.
    client.handle_timeout(now + DEFAULT_RPC_TIMEOUT);
    assert_eq!(client.poll_timeout(), None, "a call outlived its deadline");
    let events = std::iter::from_fn(|| client.poll_event()).collect();
    let mut sent = Vec::new();
    client.poll_transmit(&mut sent);
    Run {
        error,
        events,
        sent,
        closed: client.is_closed(),
    }
}

/// The registration the seed corpus answers.
fn register_request() -> RegisterConnection {
    RegisterConnection {
        auth: TunnelAuth {
            account_tag: "0123456789abcdef0123456789abcdef".to_owned(),
            tunnel_secret: b"the right secret".to_vec(),
        },
        tunnel_id: vec![0xab; 16],
        conn_index: 0,
        options: ConnectionOptions {
            client: ClientInfo {
                client_id: vec![0x11; 16],
                features: vec!["serialized_headers".to_owned()],
                version: "culvert-fuzz".to_owned(),
                arch: "linux_amd64".to_owned(),
            },
            origin_local_ip: vec![127, 0, 0, 1],
            ..ConnectionOptions::default()
        },
    }
}

/// What the edge answers a registration with.
fn details() -> ConnectionDetails {
    ConnectionDetails {
        uuid: (0u8..16).collect(),
        location_name: "SIM".to_owned(),
        tunnel_is_remotely_managed: false,
    }
}
