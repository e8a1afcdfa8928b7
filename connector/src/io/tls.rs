//! TLS and QUIC transport settings for edge connections (PROTOCOL.md §2.2, §2.3).
//!
//! Owns the rustls client configurations (aws-lc-rs only): QUIC with TLS 1.3, SNI
//! `quic.cftunnel.com` and ALPN `argotunnel`; HTTP/2 with TLS 1.2 or 1.3, SNI
//! `h2.cftunnel.com` and no ALPN at all (cloudflared sends none). Also where their
//! trust roots come from ([`EdgeRoots`]), and the quinn transport parameters
//! (keep-alive 1 s, idle 5 s, datagrams enabled, a bound on edge-opened streams).
//! It must never weaken certificate verification: the only knob is which roots are
//! trusted.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use quinn::crypto::rustls::QuicClientConfig;
use quinn::{IdleTimeout, TransportConfig, VarInt};
use rustls::RootCertStore;
use rustls::crypto::CryptoProvider;
use rustls::crypto::aws_lc_rs::kx_group;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

use crate::Error;

/// The name the connector verifies and sends as SNI for QUIC.
pub const QUIC_SERVER_NAME: &str = "quic.cftunnel.com";
/// The name the connector verifies and sends as SNI for HTTP/2.
pub const H2_SERVER_NAME: &str = "h2.cftunnel.com";
/// The only ALPN value of the QUIC transport.
pub const ALPN: &[u8] = b"argotunnel";
/// cloudflared's QUIC keep-alive PING period.
pub const KEEP_ALIVE: Duration = Duration::from_secs(1);
/// cloudflared's QUIC idle timeout (also its handshake timeout).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(5);
/// How many datagram bytes are buffered before the oldest are dropped. Datagrams
/// (UDP sessions) are not supported yet; they are read and ignored.
const DATAGRAM_BUFFER: usize = 64 * 1024;

/// Files tried, in order, for the system trust store when `SSL_CERT_FILE` is unset.
/// These are the usual distribution bundle paths (Debian, Fedora, SUSE, Alpine).
const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// Which certificate authorities the connector trusts for the edge.
///
/// cloudflared trusts the system pool plus three embedded Cloudflare origin roots,
/// or with `--cacert FILE` only that file. This crate does not embed the Cloudflare
/// roots (two of the three have expired; the edge's chain is expected to verify
/// against the system pool): [`EdgeRoots::System`] loads the system bundle and any
/// extra PEM files the operator names, e.g. a copy of Cloudflare's origin CA.
#[derive(Debug, Clone)]
pub enum EdgeRoots {
    /// The system bundle (`SSL_CERT_FILE` if set, else the distribution's bundle
    /// file) plus every certificate in `extra`.
    System {
        /// Additional PEM files to trust.
        extra: Vec<PathBuf>,
    },
    /// Only the certificates in this PEM file (cloudflared's `--cacert`), e.g. the
    /// simulator's `ca.pem`.
    CaFile(PathBuf),
    /// Only the certificates in these PEM bytes (in-process tests).
    Pem(Vec<u8>),
}

impl Default for EdgeRoots {
    fn default() -> Self {
        Self::System { extra: Vec::new() }
    }
}

/// The process's provider (`culvert-tls`, aws-lc-rs) with the key-exchange groups both
/// sides need: the post-quantum hybrid first, then P-256 (all cloudflared offers) and
/// X25519.
pub fn crypto_provider() -> Arc<CryptoProvider> {
    let mut provider = CryptoProvider::clone(&culvert_tls::crypto_provider());
    provider.kx_groups = vec![
        kx_group::X25519MLKEM768,
        kx_group::SECP256R1,
        kx_group::X25519,
        kx_group::SECP384R1,
    ];
    Arc::new(provider)
}

fn read_file(path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|source| Error::Io {
        what: format!("reading {}", path.display()),
        source,
    })
}

/// Certificates in a PEM buffer; `what` names it in errors.
pub fn pem_certificates(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>, Error> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| Error::Pem {
            what: what.to_owned(),
            source,
        })?;
    if certs.is_empty() {
        return Err(Error::Tls(format!("{what}: no certificate found")));
    }
    Ok(certs)
}

fn add_strict(store: &mut RootCertStore, pem: &[u8], what: &str) -> Result<(), Error> {
    for cert in pem_certificates(pem, what)? {
        store.add(cert).map_err(|source| Error::Rustls {
            what: what.to_owned(),
            source,
        })?;
    }
    Ok(())
}

fn root_store(roots: &EdgeRoots) -> Result<RootCertStore, Error> {
    let mut store = RootCertStore::empty();
    match roots {
        EdgeRoots::Pem(pem) => add_strict(&mut store, pem, "edge ca pem")?,
        EdgeRoots::CaFile(path) => {
            add_strict(&mut store, &read_file(path)?, &path.display().to_string())?
        }
        EdgeRoots::System { extra } => {
            let bundle = match std::env::var_os("SSL_CERT_FILE") {
                Some(path) => Some(PathBuf::from(path)),
                None => SYSTEM_BUNDLES
                    .iter()
                    .map(PathBuf::from)
                    .find(|p| p.is_file()),
            };
            if let Some(bundle) = bundle {
                let pem = read_file(&bundle)?;
                // A system bundle may hold certificates webpki cannot use; skip
                // those rather than refusing the whole store.
                let certs = CertificateDer::pem_slice_iter(&pem).filter_map(Result::ok);
                store.add_parsable_certificates(certs);
            }
            for path in extra {
                add_strict(&mut store, &read_file(path)?, &path.display().to_string())?;
            }
            if store.is_empty() {
                return Err(Error::Tls(
                    "no trusted roots: no system bundle found and no extra roots given".into(),
                ));
            }
        }
    }
    Ok(store)
}

/// The quinn client configuration for edge connections.
pub(crate) fn client_config(
    roots: &EdgeRoots,
    max_concurrent_streams: u32,
) -> Result<quinn::ClientConfig, Error> {
    let store = root_store(roots)?;
    let mut tls = rustls::ClientConfig::builder_with_provider(crypto_provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(protocol_versions)?
        .with_root_certificates(store)
        .with_no_client_auth();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    let quic = QuicClientConfig::try_from(Arc::new(tls)).map_err(Error::QuicCipherSuite)?;
    let mut config = quinn::ClientConfig::new(Arc::new(quic));
    config.transport_config(Arc::new(transport(max_concurrent_streams)));
    Ok(config)
}

/// The rustls client configuration of the HTTP/2 transport: TLS 1.2 or 1.3 (Go's
/// HTTP/2 server refuses older versions), no ALPN extension.
pub(crate) fn h2_client_config(roots: &EdgeRoots) -> Result<Arc<rustls::ClientConfig>, Error> {
    let store = root_store(roots)?;
    let tls = rustls::ClientConfig::builder_with_provider(crypto_provider())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(protocol_versions)?
        .with_root_certificates(store)
        .with_no_client_auth();
    Ok(Arc::new(tls))
}

/// The crypto provider refused the protocol versions asked for.
fn protocol_versions(source: rustls::Error) -> Error {
    Error::Rustls {
        what: "protocol versions".to_owned(),
        source,
    }
}

/// Transport parameters shared by the connector and the simulator.
pub fn transport(max_concurrent_bidi_streams: u32) -> TransportConfig {
    let mut transport = TransportConfig::default();
    transport
        .keep_alive_interval(Some(KEEP_ALIVE))
        // 5 s always fits a QUIC idle timeout (at most 2^62 ms).
        .max_idle_timeout(IdleTimeout::try_from(IDLE_TIMEOUT).ok())
        .max_concurrent_bidi_streams(VarInt::from_u32(max_concurrent_bidi_streams))
        .max_concurrent_uni_streams(VarInt::from_u32(0))
        .datagram_receive_buffer_size(Some(DATAGRAM_BUFFER));
    transport
}
