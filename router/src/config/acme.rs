//! Raw ACME settings of an `HTTPS` listener: the data plane obtains and renews the
//! listener's certificate itself (HTTP-01 or TLS-ALPN-01) instead of being given one.

use serde::{Deserialize, Serialize};

use super::{ListenerConfig, ListenerProtocol};

/// A listener whose certificate the data plane obtains by ACME, for the listener's
/// own `hostname`. Empty for now: the ACME directory, contacts and state directory are
/// the process's settings (`culvert serve --acme-*`), not the config's.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AcmeListenerConfig {}

impl ListenerConfig {
    /// The name an ACME listener's certificate is for: its hostname. `None` for a
    /// listener without `tls.acme`.
    pub fn acme_name(&self) -> Option<&str> {
        self.tls.as_ref()?.acme.as_ref()?;
        self.hostname.as_deref()
    }

    /// Why this listener's `tls.acme` cannot be served, if it cannot: ACME is for
    /// `HTTPS` listeners with one exact hostname (HTTP-01 and TLS-ALPN-01 cannot
    /// validate a wildcard, and a listener without hostname names nothing to ask for).
    pub fn acme_refusal(&self) -> Option<String> {
        self.tls.as_ref()?.acme.as_ref()?;
        if self.protocol != ListenerProtocol::Https {
            return Some("tls.acme is only for HTTPS listeners".to_owned());
        }
        match self.hostname.as_deref() {
            None => Some(
                "tls.acme needs the listener's hostname: the certificate is obtained for it"
                    .to_owned(),
            ),
            Some(name) if name.contains('*') => Some(format!(
                "tls.acme cannot obtain a certificate for the wildcard hostname {name:?}: \
                 HTTP-01 and TLS-ALPN-01 validate exact names only"
            )),
            Some(_) => None,
        }
    }
}
