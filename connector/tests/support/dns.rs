//! A tiny authoritative DNS server for the discovery tests: UDP and TCP on one
//! loopback port, answering from a table. Written here from RFC 1035, on purpose
//! not with the connector's own encoder, so the two check each other.
//!
//! Owner names that equal the question are written as a compression pointer to
//! it; SRV targets are written out in full. Modes make it truncate every UDP
//! answer (TC set, no answers) or answer with a malformed record.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, UdpSocket};
use tokio::task::JoinHandle;

/// One record's data.
#[derive(Debug, Clone)]
pub enum Data {
    A(Ipv4Addr),
    Aaaa(Ipv6Addr),
    Srv { port: u16, target: &'static str },
}

impl Data {
    fn rtype(&self) -> u16 {
        match self {
            Data::A(_) => 1,
            Data::Aaaa(_) => 28,
            Data::Srv { .. } => 33,
        }
    }
}

/// How the server misbehaves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mode {
    /// Answers as it should.
    #[default]
    Normal,
    /// Every UDP answer is truncated; TCP answers in full.
    TruncateUdp,
    /// Every answer claims one record and carries a broken one.
    Malformed,
    /// Every answer is a server failure.
    ServFail,
}

/// A query the server saw: name, type, whether it came over TCP, its ID and
/// source port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub name: String,
    pub rtype: u16,
    pub tcp: bool,
    pub id: u16,
    pub port: u16,
}

struct Table {
    records: Vec<(String, Data)>,
    mode: Mode,
}

/// The running server; stops when dropped.
pub struct DnsServer {
    pub addr: SocketAddr,
    table: Arc<Mutex<Table>>,
    seen: Arc<Mutex<Vec<Seen>>>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for DnsServer {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl DnsServer {
    /// Serves `records` (name without final dot, data) on 127.0.0.1.
    pub async fn start(records: Vec<(&str, Data)>, mode: Mode) -> Self {
        let table = Arc::new(Mutex::new(Table {
            records: lowercase(records),
            mode,
        }));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (udp, tcp) = bind_pair().await;
        let addr = udp.local_addr().unwrap();
        let udp_task = tokio::spawn({
            let table = Arc::clone(&table);
            let seen = Arc::clone(&seen);
            async move {
                let mut buf = vec![0u8; 65_535];
                loop {
                    let Ok((n, peer)) = udp.recv_from(&mut buf).await else {
                        return;
                    };
                    if let Some(reply) = answer(&table, &seen, &buf[..n], false, peer.port()) {
                        let _ = udp.send_to(&reply, peer).await;
                    }
                }
            }
        });
        let tcp_task = tokio::spawn({
            let table = Arc::clone(&table);
            let seen = Arc::clone(&seen);
            async move {
                loop {
                    let Ok((mut stream, peer)) = tcp.accept().await else {
                        return;
                    };
                    let len = usize::from(stream.read_u16().await.unwrap());
                    let mut query = vec![0u8; len];
                    stream.read_exact(&mut query).await.unwrap();
                    if let Some(reply) = answer(&table, &seen, &query, true, peer.port()) {
                        let len = u16::try_from(reply.len()).unwrap();
                        stream.write_all(&len.to_be_bytes()).await.unwrap();
                        stream.write_all(&reply).await.unwrap();
                    }
                }
            }
        });
        Self {
            addr,
            table,
            seen,
            tasks: vec![udp_task, tcp_task],
        }
    }

    /// Answers from `records` from now on.
    pub fn set_records(&self, records: Vec<(&str, Data)>) {
        self.table.lock().unwrap().records = lowercase(records);
    }

    /// Every query so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn lowercase(records: Vec<(&str, Data)>) -> Vec<(String, Data)> {
    records
        .into_iter()
        .map(|(n, d)| (n.to_ascii_lowercase(), d))
        .collect()
}

/// A UDP socket and a TCP listener on the same free loopback port.
async fn bind_pair() -> (UdpSocket, TcpListener) {
    for _ in 0..20 {
        let udp = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = udp.local_addr().unwrap();
        if let Ok(tcp) = TcpListener::bind(addr).await {
            return (udp, tcp);
        }
    }
    panic!("no free port for both udp and tcp");
}

/// Reads the question's name (uncompressed, as queries are) and returns it with
/// the offset after it.
fn question_name(msg: &[u8], mut at: usize) -> Option<(String, usize)> {
    let mut labels = Vec::new();
    loop {
        let len = usize::from(*msg.get(at)?);
        at += 1;
        if len == 0 {
            return Some((labels.join("."), at));
        }
        labels.push(String::from_utf8(msg.get(at..at + len)?.to_vec()).ok()?);
        at += len;
    }
}

fn encode_name(out: &mut Vec<u8>, name: &str) {
    for label in name.split('.') {
        out.push(u8::try_from(label.len()).unwrap());
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
}

fn answer(
    table: &Mutex<Table>,
    seen: &Mutex<Vec<Seen>>,
    query: &[u8],
    tcp: bool,
    port: u16,
) -> Option<Vec<u8>> {
    let table = table.lock().unwrap();
    let (name, end) = question_name(query, 12)?;
    let rtype = u16::from_be_bytes([*query.get(end)?, *query.get(end + 1)?]);
    let question = query.get(12..end + 4)?;
    seen.lock().unwrap().push(Seen {
        name: name.to_ascii_lowercase(),
        rtype,
        tcp,
        id: u16::from_be_bytes([*query.first()?, *query.get(1)?]),
        port,
    });
    let name = name.to_ascii_lowercase();
    let matching: Vec<&Data> = table
        .records
        .iter()
        .filter(|(n, d)| *n == name && d.rtype() == rtype)
        .map(|(_, d)| d)
        .collect();
    let exists = table.records.iter().any(|(n, _)| *n == name);
    let truncate = table.mode == Mode::TruncateUdp && !tcp;
    let rcode: u8 = match table.mode {
        Mode::ServFail => 2,
        _ if !exists => 3,
        _ => 0,
    };
    let mut out = Vec::new();
    out.extend_from_slice(&query[..2]);
    // QR, AA, RD copied, TC when truncating; RA; rcode.
    out.push(0x84 | (query[2] & 0x01) | if truncate { 0x02 } else { 0 });
    out.push(0x80 | rcode);
    let ancount = match table.mode {
        Mode::Malformed => 1,
        _ if truncate || rcode != 0 => 0,
        _ => matching.len(),
    };
    out.extend_from_slice(&[0, 1]);
    out.extend_from_slice(&u16::try_from(ancount).unwrap().to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]);
    out.extend_from_slice(question);
    if table.mode == Mode::Malformed {
        // Owner is a pointer to itself.
        let here = u8::try_from(out.len()).unwrap();
        out.extend_from_slice(&[0xc0, here, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1]);
        return Some(out);
    }
    if ancount == 0 {
        return Some(out);
    }
    for data in matching {
        // The owner is the question's name: a pointer to offset 12.
        out.extend_from_slice(&[0xc0, 12]);
        out.extend_from_slice(&data.rtype().to_be_bytes());
        out.extend_from_slice(&[0, 1]);
        out.extend_from_slice(&60u32.to_be_bytes());
        let mut rdata = Vec::new();
        match data {
            Data::A(ip) => rdata.extend_from_slice(&ip.octets()),
            Data::Aaaa(ip) => rdata.extend_from_slice(&ip.octets()),
            Data::Srv { port, target } => {
                rdata.extend_from_slice(&[0, 1, 0, 1]);
                rdata.extend_from_slice(&port.to_be_bytes());
                encode_name(&mut rdata, target);
            }
        }
        out.extend_from_slice(&u16::try_from(rdata.len()).unwrap().to_be_bytes());
        out.extend_from_slice(&rdata);
    }
    Some(out)
}
