//! The body type of every response the simulator's HTTP listeners answer with
//! (front door, status endpoint, API), and the plain-text answer. The bottom of the
//! crate: it imports nothing of the simulator.

use bytes::Bytes;
use culvert_connector::io::BoxError;
use http::header::{CONTENT_TYPE, HeaderValue};
use http::{Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full};

/// A response body of the simulator's listeners.
pub(crate) type SimBody = BoxBody<Bytes, BoxError>;

/// A `text/plain` answer.
pub(crate) fn text(status: StatusCode, body: String) -> Response<SimBody> {
    let mut response = Response::new(Full::new(Bytes::from(body)).map_err(|e| match e {}).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
