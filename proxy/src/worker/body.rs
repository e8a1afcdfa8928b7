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

/// The client's request body, counting the bytes read into its record.
pub(crate) struct CountedBody {
    inner: ClientBody,
    read: Rc<Cell<u64>>,
}

impl CountedBody {
    pub(crate) fn new(inner: ClientBody, read: Rc<Cell<u64>>) -> Self {
        Self { inner, read }
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
        if let Poll::Ready(Some(Ok(frame))) = &polled {
            if let Some(data) = frame.data_ref() {
                self.read.set(self.read.get() + data.len() as u64);
            }
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
