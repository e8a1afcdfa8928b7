//! HTTP-01 answers (RFC 8555 §8.3): token to key authorization, served as the body of
//! `GET /.well-known/acme-challenge/<token>` on port 80.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use super::{Entry, Published, next_publication};

/// The path prefix of HTTP-01 requests; the token follows it.
const PATH_PREFIX: &str = "/.well-known/acme-challenge/";

/// Token to key authorization, shared by clones.
#[derive(Debug, Clone, Default)]
pub struct Http01Challenges {
    tokens: Arc<RwLock<HashMap<String, Entry<String>>>>,
}

impl Http01Challenges {
    /// The body to answer for `token` (`text/plain`, status 200), if a challenge for it
    /// is being validated.
    pub fn response(&self, token: &str) -> Option<String> {
        let tokens = self.tokens.read().unwrap_or_else(PoisonError::into_inner);
        tokens.get(token).map(|(_, answer)| answer.clone())
    }

    /// The answer for a request path, if it is `/.well-known/acme-challenge/<token>`
    /// with a token being validated.
    pub fn response_for_path(&self, path: &str) -> Option<String> {
        let token = path.strip_prefix(PATH_PREFIX)?;
        self.response(token)
    }

    /// Whether no challenge is being validated (a listener may skip the lookup).
    pub fn is_empty(&self) -> bool {
        let tokens = self.tokens.read().unwrap_or_else(PoisonError::into_inner);
        tokens.is_empty()
    }

    pub(crate) fn publish(&self, token: String, key_authorization: String) -> Published {
        let id = next_publication();
        let mut tokens = self.tokens.write().unwrap_or_else(PoisonError::into_inner);
        tokens.insert(token.clone(), (id, key_authorization));
        drop(tokens);
        let store = Arc::clone(&self.tokens);
        Published::new(move || {
            let mut tokens = store.write().unwrap_or_else(PoisonError::into_inner);
            if tokens.get(&token).is_some_and(|(owner, _)| *owner == id) {
                tokens.remove(&token);
            }
        })
    }
}
