//! The gRPC side of the echo backend, as upstream `echo-basic` serves it on the
//! `grpc-infra-backend` Services: service
//! `gateway_api_conformance.echo_basic.grpcecho.GrpcEcho` over HTTP/2, where `Echo`
//! and `EchoTwo` answer an `EchoResponse` describing the call (method, metadata,
//! authority, which backend) and `EchoThree`, like every other method, is
//! `UNIMPLEMENTED`.
//!
//! The protobuf messages are small and fixed, so they are encoded by hand here
//! rather than generated. A request whose framing is broken (not exactly one
//! uncompressed length-prefixed message) is answered `INTERNAL`.

use bytes::{BufMut as _, Bytes, BytesMut};
use culvert_router::outcome::{grpc_code, is_grpc_content_type};
use http::header::{self, HeaderMap, HeaderValue};
use http::{Response, Version};

use super::reply::{Reply, ReplyBody};
use super::{EchoConfig, SeenRequest};

/// The service `echo-basic` implements.
pub(super) const SERVICE: &str = "gateway_api_conformance.echo_basic.grpcecho.GrpcEcho";
/// Its methods that answer; `EchoThree` exists in the proto but is left unimplemented.
const ANSWERED: [&str; 2] = ["Echo", "EchoTwo"];

/// Whether `seen` is a gRPC call: HTTP/2 with a gRPC content type.
pub(super) fn is_grpc(seen: &SeenRequest) -> bool {
    seen.proto == Version::HTTP_2
        && seen
            .header(header::CONTENT_TYPE.as_str())
            .first()
            .is_some_and(|ty| is_grpc_content_type(ty.as_bytes()))
}

/// The backend's answer to the gRPC call `seen`, naming itself as `config` says.
pub(super) fn answer(seen: &SeenRequest, config: &EchoConfig) -> Reply {
    let method = seen
        .path
        .strip_prefix('/')
        .and_then(|path| path.split_once('/'))
        .filter(|(service, method)| *service == SERVICE && ANSWERED.contains(method));
    if method.is_none() {
        return status_only(grpc_code::UNIMPLEMENTED, "unknown service or method");
    }
    if let Err(why) = unary_message(&seen.body) {
        return status_only(grpc_code::INTERNAL, why);
    }
    let message = echo_response(seen, config);
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from(grpc_code::OK));
    let mut response = Response::new(ReplyBody::with_trailers(frame(&message), trailers));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    response
}

/// A Trailers-Only response: the status in the headers, no message.
fn status_only(code: u32, message: &'static str) -> Reply {
    let mut response = Response::new(ReplyBody::default());
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    headers.insert("grpc-status", HeaderValue::from(code));
    headers.insert("grpc-message", HeaderValue::from_static(message));
    response
}

/// The one message of a unary call's body (its protobuf bytes), or why the
/// framing is broken. The message itself is not decoded: `EchoRequest` has no
/// fields, and proto3 readers skip the ones they do not know.
pub(super) fn unary_message(body: &[u8]) -> Result<&[u8], &'static str> {
    let Some((&[compressed, a, b, c, d], rest)) = body.split_first_chunk::<5>() else {
        return Err("request body holds no complete message prefix");
    };
    if compressed != 0 {
        return Err("compressed messages are not accepted");
    }
    let length = u32::from_be_bytes([a, b, c, d]) as usize;
    if rest.len() != length {
        return Err("request body is not exactly one message");
    }
    Ok(rest)
}

/// `message` with the gRPC length prefix (uncompressed).
pub(super) fn frame(message: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(5 + message.len());
    out.put_u8(0);
    out.put_u32(u32::try_from(message.len()).unwrap_or(u32::MAX));
    out.put_slice(message);
    out.freeze()
}

/// `EchoResponse { assertions: Assertions { fully_qualified_method, headers,
/// authority, context: Context { namespace, ingress, service_name, pod } } }`.
fn echo_response(seen: &SeenRequest, config: &EchoConfig) -> Vec<u8> {
    let mut assertions = Vec::new();
    put_bytes(&mut assertions, 1, seen.path.as_bytes());
    // grpc-go's metadata holds `:authority` and every ordinary header.
    let metadata = std::iter::once((":authority", seen.host.as_str())).chain(
        seen.headers
            .iter()
            .filter(|(name, _)| name != "host")
            .map(|(name, value)| (name.as_str(), value.as_str())),
    );
    for (key, value) in metadata {
        let mut entry = Vec::new();
        put_bytes(&mut entry, 1, key.as_bytes());
        put_bytes(&mut entry, 2, value.as_bytes());
        put_bytes(&mut assertions, 2, &entry);
    }
    put_bytes(&mut assertions, 3, seen.host.as_bytes());
    let mut context = Vec::new();
    put_bytes(&mut context, 1, config.namespace.as_bytes());
    put_bytes(&mut context, 3, config.name.as_bytes());
    put_bytes(&mut context, 4, config.pod().as_bytes());
    put_bytes(&mut assertions, 4, &context);
    let mut response = Vec::new();
    put_bytes(&mut response, 1, &assertions);
    response
}

/// Appends a length-delimited field (wire type 2); proto3 leaves empty ones out.
fn put_bytes(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    put_varint(out, u64::from(field << 3 | 2));
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}
