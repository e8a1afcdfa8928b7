//! The credentials of dedicated planes, made here so no one has to hand them out:
//! a bearer token per plane, and the config API's serving certificate, issued by a
//! CA the controller holds (in a Secret of its own namespace) and renewed before
//! it expires. Pure apart from the system random generator: the caller passes
//! "now" as Unix seconds.
//!
//! Certificates are ECDSA P-256 (rcgen on aws-lc-rs). A serving certificate lives
//! [`SERVING_DAYS`] days and is renewed once fewer than [`RENEW_DAYS`] are left, so
//! a plane restarted at any time holds a certificate with weeks to go; the CA
//! lives [`CA_YEARS`] years. Validity is whole UTC days, starting the day before
//! issue so a clock a little behind still accepts it.

use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// Days a serving certificate is valid.
pub const SERVING_DAYS: u64 = 90;
/// Days before expiry a serving certificate is renewed.
pub const RENEW_DAYS: u64 = 30;
/// Years the controller's CA is valid.
pub const CA_YEARS: i32 = 10;

const DAY: u64 = culvert_time::SECONDS_PER_DAY;

/// Why a credential could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CredentialError {
    /// The system random generator failed.
    #[error("the system random generator failed")]
    Random,
    /// rcgen refused a key or certificate.
    #[error("certificate: {0}")]
    Certificate(#[source] rcgen::Error),
    /// The CA's PEM does not load.
    #[error("the controller CA does not load: {0}")]
    Authority(#[source] rcgen::Error),
}

/// 32 random bytes from the system generator, as 64 hex digits.
pub fn random_token() -> Result<String, CredentialError> {
    let mut bytes = [0_u8; 32];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| CredentialError::Random)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A CA certificate and its key, as PEM, with the common name it was made with
/// (the issuer name of what it signs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authority {
    /// The CA's common name.
    pub common_name: String,
    /// The CA certificate.
    pub certificate_pem: String,
    /// Its private key (PKCS#8).
    pub key_pem: String,
}

/// A serving certificate and when it should be replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issued {
    /// The certificate.
    pub certificate_pem: String,
    /// Its private key (PKCS#8).
    pub key_pem: String,
    /// Unix seconds after which it is renewed.
    pub renew_after: u64,
}

impl Authority {
    /// A new CA named `common_name`, valid from the day before `now` for
    /// [`CA_YEARS`] years.
    pub fn generate(common_name: &str, now: u64) -> Result<Self, CredentialError> {
        let mut params = ca_params(common_name)?;
        let (year, month, day) = utc_date(now.saturating_sub(DAY));
        params.not_before = rcgen::date_time_ymd(year, month, day);
        params.not_after = rcgen::date_time_ymd(year + CA_YEARS, month, day.min(28));
        let key = KeyPair::generate().map_err(CredentialError::Certificate)?;
        let certificate = params
            .self_signed(&key)
            .map_err(CredentialError::Certificate)?;
        Ok(Self {
            common_name: common_name.to_owned(),
            certificate_pem: certificate.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// A serving certificate for `server_name`, valid from the day before `now` for
    /// [`SERVING_DAYS`] days, to be renewed [`RENEW_DAYS`] before it ends.
    pub fn issue(&self, server_name: &str, now: u64) -> Result<Issued, CredentialError> {
        let ca_key = KeyPair::from_pem(&self.key_pem).map_err(CredentialError::Authority)?;
        let issuer = Issuer::new(ca_params(&self.common_name)?, ca_key);
        let mut params = CertificateParams::new(vec![server_name.to_owned()])
            .map_err(CredentialError::Certificate)?;
        params
            .distinguished_name
            .push(DnType::CommonName, server_name);
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let start = now.saturating_sub(DAY);
        let (year, month, day) = utc_date(start);
        params.not_before = rcgen::date_time_ymd(year, month, day);
        let end = start + (SERVING_DAYS + 1) * DAY;
        let (year, month, day) = utc_date(end);
        params.not_after = rcgen::date_time_ymd(year, month, day);
        let key = KeyPair::generate().map_err(CredentialError::Certificate)?;
        let certificate = params
            .signed_by(&key, &issuer)
            .map_err(CredentialError::Certificate)?;
        Ok(Issued {
            certificate_pem: certificate.pem(),
            key_pem: key.serialize_pem(),
            renew_after: end.saturating_sub(RENEW_DAYS * DAY),
        })
    }
}

/// The CA's parameters but validity: what both making it and signing with it
/// need (its subject becomes the issuer of what it signs).
fn ca_params(common_name: &str) -> Result<CertificateParams, CredentialError> {
    let mut params =
        CertificateParams::new(Vec::<String>::new()).map_err(CredentialError::Certificate)?;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params
        .distinguished_name
        .push(DnType::OrganizationName, "Culvert");
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    Ok(params)
}

/// The UTC date (year, month, day) of Unix time `seconds`, as rcgen takes it.
pub fn utc_date(seconds: u64) -> (i32, u8, u8) {
    let date = culvert_time::utc_date(seconds);
    // The year fits for any clock within ±2 billion years.
    (
        i32::try_from(date.year).unwrap_or(i32::MAX),
        date.month,
        date.day,
    )
}

#[cfg(test)]
mod tests;
