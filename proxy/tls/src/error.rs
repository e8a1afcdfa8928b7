//! The crate's one error type: why roots or client settings could not be made. The
//! messages say what failed; the cause (rustls's or the PEM reader's) is the `source`.

/// Why a root store or a client configuration could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The PEM text does not parse.
    #[error("not PEM")]
    Pem(#[source] rustls_pki_types::pem::Error),
    /// The PEM text parses but holds no certificate.
    #[error("holds no certificate")]
    NoCertificate,
    /// rustls refused a certificate as a trust anchor.
    #[error("a certificate cannot be a trust anchor")]
    Anchor(#[source] rustls::Error),
    /// The crypto provider supports none of the safe default protocol versions.
    #[error("the crypto provider offers no safe protocol version")]
    Protocols(#[source] rustls::Error),
}
