//! The v4 API's envelope: success and error answers, paginated lists with
//! `result_info`, query parameters and bounded JSON request bodies.

use std::convert::Infallible;

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Incoming;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::error::ApiError;
use crate::body::SimBody;

/// The largest request body read.
const MAX_BODY: usize = 1024 * 1024;

/// A JSON answer.
fn json_response(status: StatusCode, body: &Value) -> Response<SimBody> {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let mut response = Response::new(
        Full::new(Bytes::from(bytes))
            .map_err(|e: Infallible| match e {})
            .boxed(),
    );
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// A successful answer carrying `result`.
pub(super) fn success(result: Value) -> Response<SimBody> {
    json_response(
        StatusCode::OK,
        &json!({"success": true, "errors": [], "messages": [], "result": result}),
    )
}

/// An error answer.
pub(super) fn failure(error: &ApiError) -> Response<SimBody> {
    json_response(
        error.status,
        &json!({
            "success": false,
            "errors": [{"code": error.code, "message": error.message}],
            "messages": [],
            "result": null,
        }),
    )
}

/// Reads a JSON body of at most [`MAX_BODY`] bytes (`400`, code 1001, otherwise).
pub(super) async fn read_json<T: DeserializeOwned>(req: Request<Incoming>) -> Result<T, ApiError> {
    let body = Limited::new(req.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|e| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                1001,
                format!("reading the request body: {e}"),
            )
        })?
        .to_bytes();
    serde_json::from_slice(&body).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            1001,
            format!("Invalid request: malformed JSON body: {e}"),
        )
    })
}

/// The decoded query pairs (`+` and `%XX` decoded; invalid escapes kept as is).
pub(super) fn query_pairs(req: &Request<Incoming>) -> Vec<(String, String)> {
    req.uri()
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b, hex) {
            (b'%', Some(value)) => {
                out.push(value);
                i += 3;
            }
            (b'+', _) => {
                out.push(b' ');
                i += 1;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The first value of query parameter `key`.
pub(super) fn param<'a>(query: &'a [(String, String)], key: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// One page of `items` with its `result_info`.
pub(super) fn page(
    items: Vec<Value>,
    query: &[(String, String)],
    default_per_page: u32,
    max_per_page: u32,
) -> Result<Response<SimBody>, ApiError> {
    let number = |key: &str, default: u32| match param(query, key) {
        None | Some("") => Ok(default),
        Some(v) => v.parse::<u32>().map_err(|_| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                1004,
                format!("{key} must be a positive integer, not {v:?}"),
            )
        }),
    };
    let page = number("page", 1)?.max(1);
    let per_page = number("per_page", default_per_page)?.clamp(1, max_per_page.max(1));
    let total = u32::try_from(items.len()).unwrap_or(u32::MAX);
    let total_pages = total.div_ceil(per_page);
    let start = usize::try_from(u64::from(page - 1) * u64::from(per_page)).unwrap_or(usize::MAX);
    let result: Vec<Value> = items
        .into_iter()
        .skip(start)
        .take(per_page as usize)
        .collect();
    let count = u32::try_from(result.len()).unwrap_or(u32::MAX);
    Ok(json_response(
        StatusCode::OK,
        &json!({
            "success": true,
            "errors": [],
            "messages": [],
            "result": result,
            "result_info": {
                "page": page,
                "per_page": per_page,
                "count": count,
                "total_count": total,
                "total_pages": total_pages,
            },
        }),
    ))
}

#[cfg(test)]
mod tests {
    use super::percent_decode;

    #[test]
    fn query_values_are_decoded() {
        assert_eq!(percent_decode("a%2Eb+c"), "a.b c");
        assert_eq!(percent_decode("%2a.example.com"), "*.example.com");
        assert_eq!(percent_decode("bad%zz%"), "bad%zz%");
    }
}
