//! TLS for the config API: one certificate and key from files, re-read when they
//! change (checked on the config API thread's certificate poll), so a rotated
//! certificate is served without a restart. Used only by the config API thread.

use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::Arc;

use culvert_router::config::CertificateConfig;
use rustls::ServerConfig;
use rustls::server::ResolvesServerCert;
use rustls::sign::CertifiedKey;
use tokio_rustls::TlsAcceptor;

use crate::{CertificateStore, Error, TlsError};

/// The certificate and key files of the config API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigApiTlsFiles {
    /// PEM certificate chain.
    pub certificate: PathBuf,
    /// PEM private key.
    pub private_key: PathBuf,
}

/// The config API's TLS acceptor, rebuilt when its files change.
pub(crate) struct ConfigApiTls {
    files: ConfigApiTlsFiles,
    current: RefCell<(TlsAcceptor, CertificateStore)>,
}

impl ConfigApiTls {
    /// Loads the files now; an unreadable or invalid pair is the error.
    pub(crate) fn load(files: ConfigApiTlsFiles) -> Result<Self, Error> {
        let current = build(&files)?;
        Ok(Self {
            files,
            current: RefCell::new(current),
        })
    }

    /// The acceptor for the next connection.
    pub(crate) fn acceptor(&self) -> TlsAcceptor {
        self.current.borrow().0.clone()
    }

    /// Re-reads the files if they changed. `Ok(true)` when a new pair is in use; on
    /// error the old one stays.
    pub(crate) fn reload_if_changed(&self) -> Result<bool, Error> {
        if !self.current.borrow().1.files_changed() {
            return Ok(false);
        }
        let next = build(&self.files)?;
        *self.current.borrow_mut() = next;
        Ok(true)
    }
}

fn build(files: &ConfigApiTlsFiles) -> Result<(TlsAcceptor, CertificateStore), Error> {
    let store = CertificateStore::load(&[CertificateConfig {
        namespace: String::new(),
        name: "control".to_owned(),
        certificate_pem: None,
        private_key_pem: None,
        certificate_file: Some(files.certificate.clone()),
        private_key_file: Some(files.private_key.clone()),
    }])?;
    let key = store
        .get("", "control")
        .ok_or(Error::Tls(TlsError::ControlCertificate))?;
    let mut config = ServerConfig::builder_with_provider(crate::crypto_provider())
        .with_safe_default_protocol_versions()
        .map_err(|err| Error::Tls(TlsError::Rustls(err)))?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(OneCertificate(key)));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok((TlsAcceptor::from(Arc::new(config)), store))
}

/// Serves the same certificate whatever the SNI.
#[derive(Debug)]
struct OneCertificate(Arc<CertifiedKey>);

impl ResolvesServerCert for OneCertificate {
    fn resolve(&self, _hello: rustls::server::ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(&self.0))
    }
}
