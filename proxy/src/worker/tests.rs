use super::exchange::splitmix64;
use std::time::Duration;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

#[test]
fn splitmix_matches_reference() {
    // First output of splitmix64 seeded with 0 (state advanced once).
    assert_eq!(splitmix64(0x9E37_79B9_7F4A_7C15), 0xE220_A839_7B1D_CDAF);
}

#[tokio::test]
async fn accepted_sockets_inherit_nodelay_from_the_listener() {
    let listener = super::listen::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
    client.write_all(b"G").await.unwrap();
    let (accepted, _) = listener.accept().await.unwrap();
    assert!(accepted.nodelay().unwrap());
}

/// A client that has connected but sent nothing is held by the kernel; its first
/// bytes hand it over.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn connections_are_accepted_once_their_first_bytes_are_in() {
    let listener = super::listen::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    assert!(super::listen::defer_accept::get(&listener).unwrap() > 0);
    let addr = listener.local_addr().unwrap();
    let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
    let early = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
    assert!(early.is_err(), "accepted before the client sent anything");
    client.write_all(b"GET").await.unwrap();
    let (mut accepted, _) = tokio::time::timeout(Duration::from_secs(5), listener.accept())
        .await
        .expect("accepted once bytes arrived")
        .unwrap();
    let mut first = [0; 3];
    accepted.read_exact(&mut first).await.unwrap();
    assert_eq!(&first, b"GET");
}

#[test]
fn a_grpc_status_other_than_ok_makes_a_request_failed() {
    use super::exchange::record::Record;
    use crate::metrics::WorkerStats;
    use http::{Method, Version};
    let stats = WorkerStats::new();
    let client = std::net::IpAddr::from([127, 0, 0, 1]);
    let mut record = Record::start(&stats, Method::POST, None, Version::HTTP_2, client);
    record.grpc = true;
    assert!(!record.failed(), "no status yet");
    record.grpc_status = Some(0);
    assert!(!record.failed());
    let line: serde_json::Value = serde_json::from_str(&record.line(0, 0, true)).unwrap();
    assert_eq!(line["grpcStatus"], 0);
    record.grpc_status = Some(14);
    assert!(record.failed(), "logged whatever the sampling");
    let plain = Record::start(&stats, Method::GET, None, Version::HTTP_11, client);
    let line: serde_json::Value = serde_json::from_str(&plain.line(0, 0, true)).unwrap();
    assert!(line["grpcStatus"].is_null());
}

/// What a test subscriber saw of one span: its name, its fields (recorded later
/// ones too) and its parent.
#[derive(Debug)]
struct SeenSpan {
    name: &'static str,
    fields: std::collections::BTreeMap<&'static str, String>,
    parent: Option<u64>,
}

type SeenSpans = std::sync::Arc<std::sync::Mutex<std::collections::HashMap<u64, SeenSpan>>>;

/// A layer keeping every span's [`SeenSpan`].
struct CaptureSpans(SeenSpans);

struct FieldText<'a>(&'a mut std::collections::BTreeMap<&'static str, String>);

impl tracing::field::Visit for FieldText<'_> {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name(), value.to_owned());
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name(), format!("{value:?}"));
    }
}

impl<S> tracing_subscriber::Layer<S> for CaptureSpans
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_new_span(
        &self,
        attributes: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        context: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let parent = context
            .span(id)
            .and_then(|span| span.parent())
            .map(|parent| parent.id().into_u64());
        let mut fields = std::collections::BTreeMap::new();
        attributes.record(&mut FieldText(&mut fields));
        let name = attributes.metadata().name();
        let seen = SeenSpan {
            name,
            fields,
            parent,
        };
        self.0.lock().unwrap().insert(id.into_u64(), seen);
    }

    fn on_record(
        &self,
        id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if let Some(seen) = self.0.lock().unwrap().get_mut(&id.into_u64()) {
            values.record(&mut FieldText(&mut seen.fields));
        }
    }
}

/// One request over HTTP/1.1 and one over HTTP/2 (prior knowledge), each answered
/// by a redirect rule: each has a `req` span with its method and route, inside the
/// `conn` span of its connection, which says who connected and what it spoke.
#[test]
fn each_request_has_a_req_span_inside_its_conn_span() {
    use std::rc::Rc;
    use std::sync::Arc;
    use tracing_subscriber::layer::SubscriberExt as _;

    use super::exchange::Worker;
    use crate::{AccessLog, ClientLimits, SnapshotCell};

    let seen = SeenSpans::default();
    let subscriber = tracing_subscriber::registry().with(CaptureSpans(Arc::clone(&seen)));
    let _default = tracing::subscriber::set_default(subscriber);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build_local(tokio::runtime::LocalOptions::default())
        .unwrap();
    let port = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let config = serde_json::json!({
            "version": 1,
            "listeners": [{"name": "web", "port": addr.port(), "protocol": "HTTP"}],
            "httpRoutes": [{"name": "moved", "namespace": "shop", "listeners": ["web"],
                "hostnames": ["a.example"],
                "rules": [{"filters": [{"type": "RequestRedirect",
                    "requestRedirect": {"hostname": "b.example", "statusCode": 301}}]}]}],
        });
        let cell = Arc::new(SnapshotCell::new());
        cell.apply(&serde_json::from_value(config).unwrap())
            .unwrap();
        let worker = Rc::new(Worker::new(
            3,
            cell,
            (super::Forwarding::default(), ClientLimits::default()),
            Arc::new(AccessLog::off()),
            Some(1),
        ));
        let stats = worker.stats().listener(&addr.to_string());

        let http1 = tokio::task::spawn_local(async move {
            let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
            client
                .write_all(b"GET /old HTTP/1.1\r\nhost: a.example\r\nconnection: close\r\n\r\n")
                .await
                .unwrap();
            let mut reply = Vec::new();
            client.read_to_end(&mut reply).await.unwrap();
            reply
        });
        let (stream, peer) = listener.accept().await.unwrap();
        super::connection::spawn(
            Rc::clone(&worker),
            stream,
            peer,
            addr,
            stats.connection_opened(),
        );
        let reply = http1.await.unwrap();
        assert!(reply.starts_with(b"HTTP/1.1 301"), "{reply:?}");

        let http2 = tokio::task::spawn_local(async move {
            let client = tokio::net::TcpStream::connect(addr).await.unwrap();
            let (mut sender, connection) = hyper::client::conn::http2::handshake(
                super::runtime::LocalExec,
                hyper_util::rt::TokioIo::new(client),
            )
            .await
            .unwrap();
            tokio::task::spawn_local(connection);
            let request = http::Request::post("http://a.example/old")
                .body(http_body_util::Empty::<bytes::Bytes>::new())
                .unwrap();
            sender.send_request(request).await.unwrap().status()
        });
        let (stream, peer) = listener.accept().await.unwrap();
        super::connection::spawn(
            Rc::clone(&worker),
            stream,
            peer,
            addr,
            stats.connection_opened(),
        );
        assert_eq!(http2.await.unwrap(), http::StatusCode::MOVED_PERMANENTLY);
        addr.port()
    });
    drop(runtime);

    let seen = seen.lock().unwrap();
    let requests: Vec<&SeenSpan> = seen.values().filter(|span| span.name == "req").collect();
    let mut checked: Vec<(&str, &str)> = Vec::new();
    for request in &requests {
        assert_eq!(request.fields["route"], "shop/moved", "{request:?}");
        let conn = request
            .parent
            .and_then(|parent| seen.get(&parent))
            .unwrap_or_else(|| panic!("{request:?} has no parent"));
        assert_eq!(conn.name, "conn", "{conn:?}");
        assert_eq!(conn.fields["worker"], "3");
        assert_eq!(conn.fields["local"], format!("127.0.0.1:{port}"));
        assert!(conn.fields["peer"].starts_with("127.0.0.1:"), "{conn:?}");
        checked.push((&request.fields["method"], &conn.fields["protocol"]));
    }
    checked.sort_unstable();
    assert_eq!(checked, [("GET", "http/1.1"), ("POST", "h2")]);
}
