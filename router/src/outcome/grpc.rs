//! gRPC-shaped local answers: when the proxy itself answers a gRPC call (no route,
//! no endpoints, a failed backend), the client gets the error as a `grpc-status`
//! in a Trailers-Only response, as Envoy answers, instead of a bare HTTP status it
//! would have to interpret. The code for each HTTP status is the one gRPC clients
//! infer themselves (`grpc/doc/http-grpc-status-mapping.md`), so either way a
//! client sees the same code.

/// gRPC status codes (`grpc/doc/statuscodes.md`), the ones Culvert names.
pub mod grpc_code {
    /// The call succeeded.
    pub const OK: u32 = 0;
    /// An error with no better code.
    pub const UNKNOWN: u32 = 2;
    /// The caller may not do this.
    pub const PERMISSION_DENIED: u32 = 7;
    /// No such method (or no route to one).
    pub const UNIMPLEMENTED: u32 = 12;
    /// Something broke inside the server, or the framing.
    pub const INTERNAL: u32 = 13;
    /// The service cannot be reached now; a retry may work.
    pub const UNAVAILABLE: u32 = 14;
    /// The caller did not authenticate.
    pub const UNAUTHENTICATED: u32 = 16;
}

/// The name gRPC gives status `code` (`Unimplemented`, `Unavailable`, ...), as
/// grpc-go spells it; `Unknown` for a code gRPC does not define.
pub fn grpc_code_name(code: u32) -> &'static str {
    const NAMES: [&str; 17] = [
        "OK",
        "Canceled",
        "Unknown",
        "InvalidArgument",
        "DeadlineExceeded",
        "NotFound",
        "AlreadyExists",
        "PermissionDenied",
        "ResourceExhausted",
        "FailedPrecondition",
        "Aborted",
        "OutOfRange",
        "Unimplemented",
        "Internal",
        "Unavailable",
        "DataLoss",
        "Unauthenticated",
    ];
    usize::try_from(code)
        .ok()
        .and_then(|code| NAMES.get(code))
        .copied()
        .unwrap_or("Unknown")
}

/// Whether a `content-type` value names gRPC: `application/grpc`, or a subtype
/// such as `application/grpc+proto`, parameters allowed. gRPC-Web
/// (`application/grpc-web`) is not gRPC on the wire and is left alone.
pub fn is_grpc_content_type(value: &[u8]) -> bool {
    let essence = value.split(|&b| b == b';').next().unwrap_or_default();
    let essence = essence.trim_ascii();
    let Some(rest) = strip_prefix_ignore_case(essence, b"application/grpc") else {
        return false;
    };
    rest.is_empty() || rest.first() == Some(&b'+')
}

fn strip_prefix_ignore_case<'a>(value: &'a [u8], prefix: &[u8]) -> Option<&'a [u8]> {
    let (head, rest) = value.split_at_checked(prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then_some(rest)
}

/// The `grpc-status` a response carries in `fields` (its trailers, or its head
/// for a Trailers-Only response), if it carries a well-formed one.
pub fn grpc_status(fields: &http::HeaderMap) -> Option<u32> {
    fields
        .get("grpc-status")?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The gRPC status code that stands for HTTP `status` when no `grpc-status` came
/// with it: `UNIMPLEMENTED` for 404, `UNAVAILABLE` for 429, 502, 503 and 504, and
/// so on; `UNKNOWN` for a status the mapping does not name (a 200 included).
pub fn grpc_status_for_http(status: u16) -> u32 {
    match status {
        400 => grpc_code::INTERNAL,
        401 => grpc_code::UNAUTHENTICATED,
        403 => grpc_code::PERMISSION_DENIED,
        404 => grpc_code::UNIMPLEMENTED,
        429 | 502 | 503 | 504 => grpc_code::UNAVAILABLE,
        _ => grpc_code::UNKNOWN,
    }
}
