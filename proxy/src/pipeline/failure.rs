//! Why a request forwarded nowhere, or nowhere useful, was answered here: one type
//! from which both the status the client gets and the metric label come.

use http::StatusCode;
use http::header::{self, HeaderValue};

use culvert_router::outcome::grpc_status_for_http;

/// Why a request was answered without a usable upstream response; the `reason`
/// label of `culvert_backend_errors_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum BackendFailure {
    /// The chosen backend reference is invalid, or no backend has weight: 500.
    InvalidBackend,
    /// The backend has no endpoints: 503.
    NoEndpoints,
    /// Connecting to the endpoint failed or timed out: 502.
    Connect,
    /// The endpoint broke the protocol or closed the connection mid-exchange: 502.
    Protocol,
    /// The rule's timeout ran out before the response head arrived: 504.
    Timeout,
}

impl BackendFailure {
    /// Every reason, in label order.
    pub(crate) const ALL: [Self; 5] = [
        Self::InvalidBackend,
        Self::NoEndpoints,
        Self::Connect,
        Self::Protocol,
        Self::Timeout,
    ];

    /// The `reason` label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::InvalidBackend => "invalid_backend",
            Self::NoEndpoints => "no_endpoints",
            Self::Connect => "connect",
            Self::Protocol => "protocol",
            Self::Timeout => "timeout",
        }
    }

    /// The status the client is answered with for this failure.
    pub(crate) fn status(self) -> StatusCode {
        match self {
            Self::InvalidBackend => StatusCode::INTERNAL_SERVER_ERROR,
            Self::NoEndpoints => StatusCode::SERVICE_UNAVAILABLE,
            Self::Connect | Self::Protocol => StatusCode::BAD_GATEWAY,
            Self::Timeout => StatusCode::GATEWAY_TIMEOUT,
        }
    }

    /// Position in [`Self::ALL`] and in the per-route error counters.
    pub(crate) fn index(self) -> usize {
        match self {
            Self::InvalidBackend => 0,
            Self::NoEndpoints => 1,
            Self::Connect => 2,
            Self::Protocol => 3,
            Self::Timeout => 4,
        }
    }
}

/// Turns the head of a local error answer to a gRPC call into a Trailers-Only gRPC
/// response: 200, with the `grpc-status` that the HTTP status stands for (404 is
/// `UNIMPLEMENTED`, 502, 503 and 504 are `UNAVAILABLE`) and a `grpc-message`
/// naming it and the backend failure, if one caused it. gRPC clients read the
/// status from there rather than guessing it from a bare HTTP status.
pub(crate) fn grpc_local_answer(
    parts: &mut http::response::Parts,
    failure: Option<BackendFailure>,
) {
    let code = grpc_status_for_http(parts.status.as_u16());
    let reason = parts.status.canonical_reason().unwrap_or("error");
    let message = match failure {
        Some(failure) => HeaderValue::try_from(format!("{reason}: {}", failure.as_str())),
        None => HeaderValue::try_from(reason),
    };
    parts.status = StatusCode::OK;
    let headers = &mut parts.headers;
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    headers.insert("grpc-status", HeaderValue::from(code));
    if let Ok(message) = message {
        headers.insert("grpc-message", message);
    }
}
