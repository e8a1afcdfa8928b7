//! Request bodies from every entry: an HTTP/1 connection (our codec's
//! [`Http1Body`]), an HTTP/2 stream (hyper's `Incoming`) or a tunnel stream
//! (`TunnelBody`), as one type the pipeline forwards, counting the bytes read for
//! the request's record. A body that sends nothing for the body read timeout
//! fails (`BodyFailure::Timeout`): a slow client cannot hold a backend connection
//! open forever.

use std::cell::Cell;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use culvert_connector::io::TunnelBody;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use tokio::time::{Instant, Sleep, sleep};

mod body_enum;
pub(crate) mod http1;

use crate::BoxError;
pub(crate) use body_enum::body_enum;
use http1::Http1Body;

body_enum! {
    /// A request body as the client sends it.
    pub(crate) enum ClientBody {
        /// From an HTTP/1 listener connection.
        Http1(Http1Body),
        /// From an HTTP/2 stream of a listener connection.
        Http2(Incoming),
        /// From a tunnel stream.
        Tunnel(TunnelBody),
    }
}

/// Why a client's request body failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyFailure {
    /// Malformed (a bad chunk) or cut short: 400.
    Broken,
    /// Nothing arrived for the body read timeout: 408.
    Timeout,
}

/// How far a client's request body got, shared by the body and its request's
/// record: the bytes read, and whether reading it failed, which makes a failed
/// exchange the client's fault (400 or 408), not the backend's.
#[derive(Debug, Default)]
pub(crate) struct BodyProgress {
    read: Cell<u64>,
    failed: Cell<Option<BodyFailure>>,
}

impl BodyProgress {
    /// Body bytes read from the client so far.
    pub(crate) fn read(&self) -> u64 {
        self.read.get()
    }

    /// Why the client's body failed, if it did.
    pub(crate) fn failed(&self) -> Option<BodyFailure> {
        self.failed.get()
    }
}

/// A body that sent nothing for the body read timeout.
#[derive(Debug, thiserror::Error)]
#[error("the client sent no body bytes for {0:?}")]
struct BodyTimedOut(Duration);

/// The client's request body, noting its progress in its record.
pub(crate) struct CountedBody {
    inner: ClientBody,
    progress: Rc<BodyProgress>,
    /// Longest wait for the next frame.
    timeout: Duration,
    /// Armed the first time the body has nothing ready, and pushed back whenever
    /// a frame comes: a body that arrives whole never creates a timer.
    idle: Option<Pin<Box<Sleep>>>,
}

impl CountedBody {
    pub(crate) fn new(inner: ClientBody, progress: Rc<BodyProgress>, timeout: Duration) -> Self {
        Self {
            inner,
            progress,
            timeout,
            idle: None,
        }
    }
}

impl Body for CountedBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    let read = &self.progress.read;
                    read.set(read.get() + data.len() as u64);
                }
                let timeout = self.timeout;
                if let Some(idle) = &mut self.idle {
                    idle.as_mut().reset(Instant::now() + timeout);
                }
            }
            Poll::Ready(Some(Err(_))) => self.progress.failed.set(Some(BodyFailure::Broken)),
            Poll::Ready(None) => {}
            Poll::Pending => {
                let timeout = self.timeout;
                let idle = self.idle.get_or_insert_with(|| Box::pin(sleep(timeout)));
                if idle.as_mut().poll(cx).is_ready() {
                    self.progress.failed.set(Some(BodyFailure::Timeout));
                    return Poll::Ready(Some(Err(Box::new(BodyTimedOut(timeout)))));
                }
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
