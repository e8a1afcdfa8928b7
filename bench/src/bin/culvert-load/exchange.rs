//! One exchange: connect, a TLS handshake for `https`, one request, and the whole
//! response read.

use std::io;
use std::net::SocketAddr;

use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::TlsConnector;

/// Most bytes of a response head read before it counts as malformed.
const MAX_HEAD: usize = 64 * 1024;
/// Header fields a response may have.
const MAX_FIELDS: usize = 64;

/// What a connection is carried on.
pub(crate) enum Transport {
    Plain,
    Tls {
        connector: TlsConnector,
        name: ServerName<'static>,
    },
}

/// What a finished exchange got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Answer {
    /// The response's status code.
    pub(crate) status: u16,
    /// The TLS handshake resumed an earlier session.
    pub(crate) resumed: bool,
    /// When the request started to go out, after the connect and any handshake:
    /// where wrk starts its clock.
    pub(crate) sent: Instant,
}

/// Why an exchange failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ExchangeError {
    #[error("connect: {0}")]
    Connect(io::Error),
    #[error("TLS handshake: {0}")]
    Handshake(io::Error),
    #[error("sending the request: {0}")]
    Send(io::Error),
    #[error("reading the response: {0}")]
    Receive(io::Error),
    #[error("malformed response head")]
    Malformed,
    #[error("the connection closed before the response ended")]
    Cut,
    #[error("timed out")]
    TimedOut,
}

/// Connects to `target` over `transport`, sends `request` and reads the response.
pub(crate) async fn exchange(
    target: SocketAddr,
    transport: &Transport,
    request: &[u8],
) -> Result<Answer, ExchangeError> {
    let tcp = TcpStream::connect(target)
        .await
        .map_err(ExchangeError::Connect)?;
    tcp.set_nodelay(true).map_err(ExchangeError::Connect)?;
    match transport {
        Transport::Plain => {
            let (status, sent) = request_on(tcp, request).await?;
            Ok(Answer {
                status,
                resumed: false,
                sent,
            })
        }
        Transport::Tls { connector, name } => {
            let tls = connector
                .connect(name.clone(), tcp)
                .await
                .map_err(ExchangeError::Handshake)?;
            let resumed = tls.get_ref().1.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
            let (status, sent) = request_on(tls, request).await?;
            Ok(Answer {
                status,
                resumed,
                sent,
            })
        }
    }
}

/// Sends the request and reads the response: its status, and when the request
/// started to go out.
async fn request_on<S>(mut stream: S, request: &[u8]) -> Result<(u16, Instant), ExchangeError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let sent = Instant::now();
    stream
        .write_all(request)
        .await
        .map_err(ExchangeError::Send)?;
    stream.flush().await.map_err(ExchangeError::Send)?;
    Ok((read_response(&mut stream).await?, sent))
}

/// How the end of a response body is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyEnd {
    /// After this many bytes of the stream (head included).
    At(usize),
    /// When the server closes (chunked or unframed; the request asked to close).
    Close,
}

/// Reads one response; its status code.
async fn read_response<S: AsyncRead + Unpin>(stream: &mut S) -> Result<u16, ExchangeError> {
    let mut buf = Vec::with_capacity(4096);
    let (status, end) = loop {
        if read_more(stream, &mut buf).await? == 0 {
            return Err(ExchangeError::Cut);
        }
        if let Some(head) = parse_head(&buf)? {
            break head;
        }
        if buf.len() > MAX_HEAD {
            return Err(ExchangeError::Malformed);
        }
    };
    match end {
        BodyEnd::At(total) => {
            while buf.len() < total {
                if read_more(stream, &mut buf).await? == 0 {
                    return Err(ExchangeError::Cut);
                }
            }
        }
        BodyEnd::Close => while read_more(stream, &mut buf).await? > 0 {},
    }
    Ok(status)
}

/// Appends what the stream has to `buf`; 0 at its end.
async fn read_more<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut Vec<u8>,
) -> Result<usize, ExchangeError> {
    let mut chunk = [0; 16 * 1024];
    let read = stream
        .read(&mut chunk)
        .await
        .map_err(ExchangeError::Receive)?;
    buf.extend_from_slice(&chunk[..read]);
    Ok(read)
}

/// The status and body end of a complete response head at the start of `buf`;
/// `None` while the head is incomplete.
fn parse_head(buf: &[u8]) -> Result<Option<(u16, BodyEnd)>, ExchangeError> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_FIELDS];
    let mut response = httparse::Response::new(&mut fields);
    let head_len = match response.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) => return Err(ExchangeError::Malformed),
    };
    let status = response.code.ok_or(ExchangeError::Malformed)?;
    let mut end = BodyEnd::Close;
    for field in response.headers.iter() {
        if field.name.eq_ignore_ascii_case("transfer-encoding") {
            end = BodyEnd::Close;
            break;
        }
        if field.name.eq_ignore_ascii_case("content-length") {
            let length = std::str::from_utf8(field.value)
                .ok()
                .and_then(|value| value.trim().parse::<usize>().ok())
                .ok_or(ExchangeError::Malformed)?;
            end = BodyEnd::At(head_len + length);
        }
    }
    Ok(Some((status, end)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a test server reads: a request head, up to its blank line.
    async fn read_request_head<S: AsyncRead + Unpin>(stream: &mut S) -> Vec<u8> {
        let mut seen = Vec::new();
        let mut buf = [0; 1024];
        while !seen.ends_with(b"\r\n\r\n") {
            let read = stream.read(&mut buf).await.unwrap();
            assert!(read > 0, "the client closed before its head ended");
            seen.extend_from_slice(&buf[..read]);
        }
        seen
    }

    #[test]
    fn heads_give_the_status_and_where_the_body_ends() {
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel";
        assert_eq!(parse_head(head).unwrap(), Some((200, BodyEnd::At(43))));
        let chunked = b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert_eq!(parse_head(chunked).unwrap(), Some((404, BodyEnd::Close)));
        assert_eq!(parse_head(b"HTTP/1.1 200 OK\r\nConte").unwrap(), None);
        assert!(matches!(
            parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"),
            Err(ExchangeError::Malformed)
        ));
        assert!(matches!(
            parse_head(b"NOT HTTP\r\n\r\n"),
            Err(ExchangeError::Malformed)
        ));
    }

    /// A real exchange over loopback with a server that answers in two writes and
    /// then lingers: the whole body is read, without waiting for the close.
    #[tokio::test]
    async fn an_exchange_reads_the_whole_response_and_no_more() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let target = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let seen = read_request_head(&mut stream).await;
            stream
                .write_all(b"HTTP/1.1 201 Created\r\nContent-Length: 10\r\n\r\n01234")
                .await
                .unwrap();
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            stream.write_all(b"56789").await.unwrap();
            // Holds the connection open: the client must stop at the length.
            tokio::time::sleep(std::time::Duration::from_secs(30)).await;
            seen
        });
        let request = b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        let before = Instant::now();
        let answer = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            exchange(target, &Transport::Plain, request),
        )
        .await
        .expect("done at the length, not at the close")
        .unwrap();
        assert_eq!((answer.status, answer.resumed), (201, false));
        // The request went out after the connect, and the answer took the server's
        // 20 ms pause after that.
        assert!(answer.sent >= before);
        assert!(answer.sent.elapsed() >= std::time::Duration::from_millis(20));
        server.abort();

        let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let target = closed.local_addr().unwrap();
        let cut = tokio::spawn(async move {
            let (mut stream, _) = closed.accept().await.unwrap();
            let mut buf = [0; 1024];
            let _ = stream.read(&mut buf).await.unwrap();
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n012")
                .await
                .unwrap();
        });
        let result = exchange(target, &Transport::Plain, request).await;
        assert!(matches!(result, Err(ExchangeError::Cut)), "{result:?}");
        cut.await.unwrap();
    }

    /// Over real TLS on loopback: the first exchange makes a full handshake, the
    /// next ones resume the session the server handed out, and each reads its answer.
    #[tokio::test]
    async fn tls_exchanges_resume_the_session_of_the_first() {
        use std::sync::Arc;

        use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

        let provider = culvert_tls::crypto_provider();
        let certified = rcgen::generate_simple_self_signed(vec!["load.test".to_owned()]).unwrap();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            certified.signing_key.serialize_der(),
        ));
        let server = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![certified.cert.der().clone()], key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let target = listener.local_addr().unwrap();
        let serving = tokio::spawn(async move {
            loop {
                let (tcp, _) = listener.accept().await.unwrap();
                let mut tls = acceptor.accept(tcp).await.unwrap();
                read_request_head(&mut tls).await;
                tls.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                    .await
                    .unwrap();
                tls.shutdown().await.unwrap();
            }
        });
        let options = crate::options::TlsOptions {
            ca: None,
            server_name: "load.test".to_owned(),
        };
        let transport = crate::run::tls_transport(&options).unwrap();
        let request = b"GET / HTTP/1.1\r\nHost: load.test\r\nConnection: close\r\n\r\n";
        let mut resumed = Vec::new();
        for _ in 0..3 {
            let answer = exchange(target, &transport, request).await.unwrap();
            assert_eq!(answer.status, 200);
            resumed.push(answer.resumed);
        }
        assert_eq!(resumed, [false, true, true]);
        serving.abort();
    }
}
