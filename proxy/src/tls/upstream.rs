//! TLS to backends (Gateway API BackendTLSPolicy): the rustls client config of a
//! backend's [`BackendTlsConfig`]. The SNI is its `hostname`; the certificate must
//! chain to its CA certificates (or the system's roots) and carry the hostname, or
//! one of `subjectAltNames` when those are given; a client certificate is shown
//! when the config has one.
//!
//! Sessions are resumed: each distinct config keeps one session cache for the life
//! of the process, so a config swap that leaves a backend's TLS settings as they
//! were keeps its sessions, and a session is never resumed under other settings
//! than the ones it was verified with.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use culvert_router::config::{BackendTlsConfig, DataPlaneConfig};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ClientSessionMemoryCache, Resumption, WebPkiServerVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::{Error, TlsError};

/// Sessions kept per backend TLS config.
const SESSIONS_PER_CONFIG: usize = 256;
/// Distinct backend TLS configs whose session caches are kept; past it the caches
/// start over (configs come from pushes, so this bounds what churn can hold).
const MAX_CACHES: usize = 4096;

/// Refuses a config naming backend TLS settings that cannot be used (a hostname
/// that is no DNS name, CA certificates or a client certificate that do not
/// load), so they fail the push, not requests.
pub(crate) fn check_backends(config: &DataPlaneConfig) -> Result<(), Error> {
    let mut checked = HashSet::new();
    for tls in config.backends().filter_map(|backend| backend.tls.as_ref()) {
        if checked.insert(tls) {
            client_config(tls, &[])?;
        }
    }
    Ok(())
}

/// The client config for `config`, offering `alpn`.
pub(crate) fn client_config(
    config: &BackendTlsConfig,
    alpn: &[&[u8]],
) -> Result<Arc<ClientConfig>, Error> {
    let refused = |reason: String| {
        Error::Tls(TlsError::Backend {
            hostname: config.hostname.clone(),
            reason,
        })
    };
    ServerName::try_from(config.hostname.as_str())
        .map_err(|_| refused("hostname is not a DNS name".to_owned()))?;
    let roots = match &config.ca_certificates_pem {
        Some(pem) => {
            let mut roots = RootCertStore::empty();
            for certificate in CertificateDer::pem_slice_iter(pem.as_bytes()) {
                let certificate = certificate
                    .map_err(|error| refused(format!("CA bundle is not PEM: {error}")))?;
                roots
                    .add(certificate)
                    .map_err(|error| refused(format!("CA certificate refused: {error}")))?;
            }
            if roots.is_empty() {
                return Err(refused("CA bundle holds no certificate".to_owned()));
            }
            Arc::new(roots)
        }
        None => system_roots(),
    };
    let webpki = WebPkiServerVerifier::builder_with_provider(roots, crate::crypto_provider())
        .build()
        .map_err(|error| refused(error.to_string()))?;
    let verifier: Arc<dyn ServerCertVerifier> = if config.subject_alt_names.is_empty() {
        webpki
    } else {
        let names = config
            .subject_alt_names
            .iter()
            .map(|name| {
                ServerName::try_from(name.clone())
                    .map_err(|_| refused(format!("subjectAltName {name:?} is not a DNS name")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Arc::new(AnyOfNames {
            inner: webpki,
            names,
        })
    };
    let builder = ClientConfig::builder_with_provider(crate::crypto_provider())
        .with_safe_default_protocol_versions()
        .map_err(|error| refused(error.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut client = match &config.client_certificate {
        Some(certificate) => {
            let chain = CertificateDer::pem_slice_iter(certificate.certificate_pem.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|error| refused(format!("client certificate is not PEM: {error}")))?;
            let key = PrivateKeyDer::from_pem_slice(certificate.private_key_pem.as_bytes())
                .map_err(|error| refused(format!("client key is not PEM: {error}")))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|error| refused(error.to_string()))?
        }
        None => builder.with_no_client_auth(),
    };
    client.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    client.resumption = Resumption::store(session_cache(config));
    Ok(Arc::new(client))
}

/// The session cache of `config`, the same one every time it is asked for.
fn session_cache(config: &BackendTlsConfig) -> Arc<ClientSessionMemoryCache> {
    static CACHES: OnceLock<Mutex<HashMap<BackendTlsConfig, Arc<ClientSessionMemoryCache>>>> =
        OnceLock::new();
    let mut caches = CACHES
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(cache) = caches.get(config) {
        return Arc::clone(cache);
    }
    if caches.len() >= MAX_CACHES {
        caches.clear();
    }
    let cache = Arc::new(ClientSessionMemoryCache::new(SESSIONS_PER_CONFIG));
    caches.insert(config.clone(), Arc::clone(&cache));
    cache
}

/// The system's trusted roots, read once; an empty store (every handshake then
/// fails verification) when none can be read.
fn system_roots() -> Arc<RootCertStore> {
    static ROOTS: OnceLock<Arc<RootCertStore>> = OnceLock::new();
    Arc::clone(ROOTS.get_or_init(|| {
        let mut roots = RootCertStore::empty();
        culvert_tls::add_system_roots(&mut roots);
        Arc::new(roots)
    }))
}

/// Verifies the chain as webpki does, but accepts the certificate when it carries
/// any of `names` instead of the SNI name.
#[derive(Debug)]
struct AnyOfNames {
    inner: Arc<WebPkiServerVerifier>,
    names: Vec<ServerName<'static>>,
}

impl ServerCertVerifier for AnyOfNames {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let mut last = rustls::Error::General("no subjectAltName to check".to_owned());
        for name in &self.names {
            match self
                .inner
                .verify_server_cert(end_entity, intermediates, name, ocsp_response, now)
            {
                Ok(verified) => return Ok(verified),
                Err(error) => last = error,
            }
        }
        Err(last)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}
