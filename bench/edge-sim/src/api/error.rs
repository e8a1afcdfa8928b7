//! The API's error answer: HTTP status, v4 envelope code and message, and the
//! answers several handlers share. The bottom of the API: it imports nothing of it.

use http::StatusCode;

use crate::error::Error;

/// An API answer that is an error: HTTP status, envelope code and message. The
/// message is all a client gets (it becomes the envelope's `errors[0].message`), so
/// it stays text.
#[derive(Debug, Clone)]
pub(crate) struct ApiError {
    pub(crate) status: StatusCode,
    pub(crate) code: u32,
    pub(crate) message: String,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, code: u32, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    pub(crate) fn bad_request(code: u32, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }
}

/// A failure of the simulator itself (its random source), as a `500` (code 10001).
pub(crate) fn internal(e: &Error) -> ApiError {
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        10001,
        format!("internal error: {e}"),
    )
}

/// The 404 of an unknown route or object identifier (code 7003).
pub(crate) fn route_not_found(path: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        7003,
        format!("Could not route to {path}, perhaps your object identifier is invalid?"),
    )
}
