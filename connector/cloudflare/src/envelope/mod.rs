//! The v4 response envelope, decoded without IO:
//! `{"success", "errors": [{code, message}], "messages", "result", "result_info"}`.
//!
//! [`decode`] turns a status and a body into the typed `result` (with the list's
//! [`ResultInfo`]) or a [`Refusal`] the client wraps into an [`Error`](crate::Error).
//! Cloudflare's answers are untrusted: the body is already bounded by the client, the
//! error list and each message are shortened here, and unknown fields are ignored so
//! the API may grow.

use http::StatusCode;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::error::ApiMessage;

/// The most error entries kept from one answer.
const MAX_ERRORS: usize = 16;

/// The longest message text kept, in characters.
const MAX_MESSAGE: usize = 300;

/// Where a list answer is in the whole list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct ResultInfo {
    /// This page's number, from 1.
    #[serde(default)]
    pub page: u32,
    /// The page size the server used.
    #[serde(default)]
    pub per_page: u32,
    /// Items on this page.
    #[serde(default)]
    pub count: u32,
    /// Items in the whole list.
    #[serde(default)]
    pub total_count: u32,
    /// Pages in the whole list.
    #[serde(default)]
    pub total_pages: u32,
}

impl ResultInfo {
    /// The number of pages: `total_pages`, else worked out from `total_count` and
    /// `per_page` (some list endpoints omit `total_pages`), else one.
    pub fn pages(&self) -> u32 {
        if self.total_pages > 0 {
            self.total_pages
        } else if self.per_page > 0 {
            self.total_count.div_ceil(self.per_page).max(1)
        } else {
            1
        }
    }
}

/// A successful answer's content.
#[derive(Debug)]
pub(crate) struct Decoded<T> {
    /// The `result`.
    pub(crate) result: T,
    /// The `result_info`, on lists.
    pub(crate) info: Option<ResultInfo>,
}

/// Why an answer is not a success.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// An error status or `"success": false`, with the envelope's errors and messages
    /// (both empty when the body was no envelope, an HTML error page from a proxy, say).
    Api {
        /// `errors`.
        errors: Vec<ApiMessage>,
        /// `messages`.
        messages: Vec<ApiMessage>,
    },
    /// A success whose body is not the envelope or result expected.
    Malformed(String),
}

#[derive(Deserialize)]
struct RawEnvelope {
    #[serde(default)]
    success: Option<bool>,
    #[serde(default)]
    errors: Vec<RawMessage>,
    #[serde(default)]
    messages: Vec<RawMessage>,
    #[serde(default)]
    result: serde_json::Value,
    #[serde(default)]
    result_info: Option<ResultInfo>,
}

#[derive(Deserialize)]
struct RawMessage {
    #[serde(default)]
    code: u32,
    #[serde(default)]
    message: String,
}

/// Decodes one answer. The envelope decides success only together with the status: a
/// 2xx with `"success": false` is refused, and so is an error status whatever the body
/// says.
pub(crate) fn decode<T: DeserializeOwned>(
    status: StatusCode,
    body: &[u8],
) -> Result<Decoded<T>, Refusal> {
    let envelope: RawEnvelope = match parse(body) {
        Ok(envelope) => envelope,
        Err(detail) if status.is_success() => {
            return Err(Refusal::Malformed(format!("not an api envelope: {detail}")));
        }
        Err(_) => {
            return Err(Refusal::Api {
                errors: Vec::new(),
                messages: Vec::new(),
            });
        }
    };
    if !status.is_success() || envelope.success != Some(true) {
        return Err(Refusal::Api {
            errors: messages(envelope.errors),
            messages: messages(envelope.messages),
        });
    }
    let result = serde_path_to_error::deserialize(envelope.result)
        .map_err(|err| Refusal::Malformed(format!("result.{}: {}", err.path(), err.inner())))?;
    Ok(Decoded {
        result,
        info: envelope.result_info,
    })
}

fn parse(body: &[u8]) -> Result<RawEnvelope, String> {
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let envelope: RawEnvelope = serde_path_to_error::deserialize(&mut deserializer)
        .map_err(|err| format!("{}: {}", err.path(), err.inner()))?;
    deserializer.end().map_err(|err| err.to_string())?;
    Ok(envelope)
}

fn messages(raw: Vec<RawMessage>) -> Vec<ApiMessage> {
    raw.into_iter()
        .take(MAX_ERRORS)
        .map(|m| ApiMessage {
            code: m.code,
            message: shorten(&m.message),
        })
        .collect()
}

/// At most [`MAX_MESSAGE`] characters, control characters replaced, so a message can
/// go into a log line as it is.
fn shorten(message: &str) -> String {
    let mut out: String = message
        .chars()
        .take(MAX_MESSAGE)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if message.chars().nth(MAX_MESSAGE).is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests;
