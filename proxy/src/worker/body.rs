//! Request bodies from every entry: an HTTP/1 connection (our codec's
//! [`RequestBody`]), an HTTP/2 stream (hyper's `Incoming`) or a tunnel stream
//! (`TunnelBody`), as one type the pipeline forwards, counting the bytes read for
//! the request's record.

use std::cell::Cell;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use bytes::Bytes;
use culvert_connector::io::TunnelBody;
use hyper::body::{Body, Frame, Incoming, SizeHint};

use super::http1::RequestBody;

/// The error of a client body.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A request body as the client sends it.
pub(crate) enum ClientBody {
    /// From an HTTP/1 listener connection.
    Http1(RequestBody),
    /// From an HTTP/2 stream of a listener connection.
    Http2(Incoming),
    /// From a tunnel stream.
    Tunnel(TunnelBody),
}

/// How far a client's request body got, shared by the body and its request's
/// record: the bytes read, and whether reading it failed (a malformed chunk, a
/// body cut short), which makes a failed exchange the client's fault (400), not
/// the backend's.
#[derive(Debug, Default)]
pub(crate) struct BodyProgress {
    read: Cell<u64>,
    failed: Cell<bool>,
}

impl BodyProgress {
    /// Body bytes read from the client so far.
    pub(crate) fn read(&self) -> u64 {
        self.read.get()
    }

    /// Whether the client's body failed.
    pub(crate) fn failed(&self) -> bool {
        self.failed.get()
    }
}

/// The client's request body, noting its progress in its record.
pub(crate) struct CountedBody {
    inner: ClientBody,
    progress: Rc<BodyProgress>,
}

impl CountedBody {
    pub(crate) fn new(inner: ClientBody, progress: Rc<BodyProgress>) -> Self {
        Self { inner, progress }
    }
}

impl Body for CountedBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let polled: Poll<Option<Result<Frame<Bytes>, BoxError>>> = match &mut self.inner {
            ClientBody::Http1(body) => Pin::new(body)
                .poll_frame(cx)
                .map(|frame| frame.map(|result| result.map_err(Into::into))),
            ClientBody::Http2(body) => Pin::new(body)
                .poll_frame(cx)
                .map(|frame| frame.map(|result| result.map_err(Into::into))),
            ClientBody::Tunnel(body) => Pin::new(body)
                .poll_frame(cx)
                .map(|frame| frame.map(|result| result.map_err(Into::into))),
        };
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    let read = &self.progress.read;
                    read.set(read.get() + data.len() as u64);
                }
            }
            Poll::Ready(Some(Err(_))) => self.progress.failed.set(true),
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        match &self.inner {
            ClientBody::Http1(body) => body.is_end_stream(),
            ClientBody::Http2(body) => body.is_end_stream(),
            ClientBody::Tunnel(body) => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            ClientBody::Http1(body) => body.size_hint(),
            ClientBody::Http2(body) => body.size_hint(),
            ClientBody::Tunnel(body) => body.size_hint(),
        }
    }
}
