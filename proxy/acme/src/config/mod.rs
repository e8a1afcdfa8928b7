//! What one managed certificate needs: the ACME directory, the account's contacts, where
//! state lives, the names, the challenge kind and the roots to trust. [`AcmeConfig`] is
//! the raw form; [`AcmeConfig::validate`] turns it into the checked `Settings` the rest
//! of the crate uses, so nothing later re-checks a name or a URL.

use std::path::PathBuf;
use std::time::Duration;

use rustls_pki_types::DnsName;

use crate::Error;

/// How the ACME server is to check that we control each name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChallengeKind {
    /// HTTP-01 (RFC 8555 §8.3): the server fetches
    /// `http://<name>/.well-known/acme-challenge/<token>` on port 80, answered from
    /// [`Http01Challenges`](crate::Http01Challenges).
    Http01,
    /// TLS-ALPN-01 (RFC 8737): the server connects to port 443 offering ALPN
    /// `acme-tls/1`, answered from [`TlsAlpnChallenges`](crate::TlsAlpnChallenges).
    TlsAlpn01,
}

impl ChallengeKind {
    /// The challenge type's name in the protocol.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http01 => "http-01",
            Self::TlsAlpn01 => "tls-alpn-01",
        }
    }
}

/// How long to wait before retrying a failed round: `initial`, doubled after each
/// further failure, never more than `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The wait after the first failure.
    pub initial: Duration,
    /// The longest wait.
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            initial: Duration::from_secs(60),
            max: Duration::from_secs(60 * 60),
        }
    }
}

/// One certificate to obtain and keep renewed.
#[derive(Debug, Clone)]
pub struct AcmeConfig {
    /// The ACME directory URL (`https://…/directory`).
    pub directory_url: String,
    /// E-mail addresses for the account (the server may write about expiry or problems).
    pub contacts: Vec<String>,
    /// Where the account and the certificates are kept. Created (mode 0700) if missing.
    pub state_dir: PathBuf,
    /// The DNS names the certificate is for; the first also names its directory.
    /// Wildcards cannot be validated by HTTP-01 or TLS-ALPN-01 and are refused.
    pub names: Vec<String>,
    /// How the names are validated.
    pub challenge: ChallengeKind,
    /// Extra root certificates (PEM) for the directory's TLS, such as a test CA's.
    pub trust: Option<String>,
    /// Whether the system's root certificates are trusted too.
    pub system_roots: bool,
    /// The longest one HTTP request to the ACME server may take, body included.
    pub request_timeout: Duration,
    /// The longest an order may take from creation to the certificate.
    pub order_timeout: Duration,
    /// Waits between failed rounds in [`Manager::run`](crate::Manager::run).
    pub backoff: Backoff,
}

impl AcmeConfig {
    /// A config with the defaults: no contacts, system roots trusted, 30 s per request,
    /// 120 s per order, retries from one minute up to one hour.
    pub fn new(
        directory_url: impl Into<String>,
        state_dir: impl Into<PathBuf>,
        names: Vec<String>,
        challenge: ChallengeKind,
    ) -> Self {
        Self {
            directory_url: directory_url.into(),
            contacts: Vec::new(),
            state_dir: state_dir.into(),
            names,
            challenge,
            trust: None,
            system_roots: true,
            request_timeout: Duration::from_secs(30),
            order_timeout: Duration::from_secs(120),
            backoff: Backoff::default(),
        }
    }

    /// Checks every field and normalizes the names (lower case).
    pub(crate) fn validate(self) -> Result<Settings, Error> {
        let refuse = |reason: String| Err(Error::Config(reason));
        let uri: http::Uri = match self.directory_url.parse() {
            Ok(uri) => uri,
            Err(err) => return refuse(format!("directory url {:?}: {err}", self.directory_url)),
        };
        if uri.scheme_str() != Some("https") || uri.authority().is_none() {
            return refuse(format!(
                "directory url {:?} must be an https:// URL",
                self.directory_url
            ));
        }
        if self.names.is_empty() {
            return refuse("no names to certify".to_owned());
        }
        let mut names: Vec<String> = Vec::with_capacity(self.names.len());
        for name in &self.names {
            let name = name.to_ascii_lowercase();
            if name.starts_with("*.") {
                return refuse(format!(
                    "{name}: a wildcard needs DNS-01, which is not supported"
                ));
            }
            if DnsName::try_from(name.as_str()).is_err() || name.ends_with('.') {
                return refuse(format!("{name:?} is not a DNS name"));
            }
            if name.parse::<std::net::IpAddr>().is_ok() {
                return refuse(format!("{name}: IP address identifiers are not supported"));
            }
            if names.contains(&name) {
                return refuse(format!("{name} is listed twice"));
            }
            names.push(name);
        }
        let mut contacts = Vec::with_capacity(self.contacts.len());
        for email in &self.contacts {
            let plausible = email.split_once('@').is_some_and(|(local, domain)| {
                !local.is_empty() && !domain.is_empty() && !domain.contains('@')
            }) && !email
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || matches!(c, ',' | '?' | ':'));
            if !plausible {
                return refuse(format!("{email:?} is not an e-mail address"));
            }
            contacts.push(format!("mailto:{email}"));
        }
        if self.state_dir.as_os_str().is_empty() {
            return refuse("state_dir is empty".to_owned());
        }
        if self.request_timeout.is_zero() || self.order_timeout.is_zero() {
            return refuse("timeouts must be longer than zero".to_owned());
        }
        if self.backoff.initial.is_zero() || self.backoff.max < self.backoff.initial {
            return refuse("backoff needs 0 < initial <= max".to_owned());
        }
        if self.trust.is_none() && !self.system_roots {
            return refuse("no roots to trust: give `trust` or keep `system_roots`".to_owned());
        }
        Ok(Settings {
            directory_url: self.directory_url,
            contacts,
            state_dir: self.state_dir,
            names,
            challenge: self.challenge,
            trust: self.trust,
            system_roots: self.system_roots,
            request_timeout: self.request_timeout,
            order_timeout: self.order_timeout,
            backoff: self.backoff,
        })
    }
}

/// An [`AcmeConfig`] that passed [`AcmeConfig::validate`].
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) directory_url: String,
    /// `mailto:` URLs.
    pub(crate) contacts: Vec<String>,
    pub(crate) state_dir: PathBuf,
    /// Lower-case DNS names, no duplicates, at least one.
    pub(crate) names: Vec<String>,
    pub(crate) challenge: ChallengeKind,
    pub(crate) trust: Option<String>,
    pub(crate) system_roots: bool,
    pub(crate) request_timeout: Duration,
    pub(crate) order_timeout: Duration,
    pub(crate) backoff: Backoff,
}

#[cfg(test)]
mod tests;
