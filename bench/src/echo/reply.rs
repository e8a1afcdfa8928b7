//! The body of every answer the echo backend gives: its bytes, then trailers when
//! the answer has them (a gRPC call's status).

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderMap, Response};
use hyper::body::{Body, Frame, SizeHint};

/// One answer.
pub(super) type Reply = Response<ReplyBody>;

/// Bytes known in full, then optional trailers.
#[derive(Debug, Default)]
pub(super) struct ReplyBody {
    data: Option<Bytes>,
    trailers: Option<HeaderMap>,
}

impl ReplyBody {
    /// A body of `data` and nothing after it.
    pub(super) fn new(data: impl Into<Bytes>) -> Self {
        Self {
            data: Some(data.into()),
            trailers: None,
        }
    }

    /// A body of `data`, then `trailers`.
    pub(super) fn with_trailers(data: Bytes, trailers: HeaderMap) -> Self {
        Self {
            data: Some(data),
            trailers: Some(trailers),
        }
    }
}

impl Body for ReplyBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if let Some(data) = this.data.take().filter(|data| !data.is_empty()) {
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        Poll::Ready(
            this.trailers
                .take()
                .map(|trailers| Ok(Frame::trailers(trailers))),
        )
    }

    fn is_end_stream(&self) -> bool {
        self.data.as_ref().is_none_or(Bytes::is_empty) && self.trailers.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.data.as_ref().map_or(0, |data| data.len() as u64))
    }
}
