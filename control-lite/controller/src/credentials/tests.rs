use super::*;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier as _;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use std::sync::Arc;
use std::time::Duration;

/// 2026-12-05T00:00:00Z.
const NOW: u64 = 1_796_428_800;

#[test]
fn dates_follow_the_gregorian_calendar() {
    assert_eq!(utc_date(0), (1970, 1, 1));
    assert_eq!(utc_date(951_782_400), (2000, 2, 29));
    assert_eq!(utc_date(NOW), (2026, 12, 5));
}

#[test]
fn tokens_are_64_hex_digits_and_differ() {
    let (a, b) = (random_token().unwrap(), random_token().unwrap());
    assert_eq!(a.len(), 64);
    assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
    assert_ne!(a, b);
}

#[test]
fn an_issued_certificate_chains_to_the_authority_for_its_name_only() {
    let authority = Authority::generate("culvert-controller", NOW).unwrap();
    let issued = authority
        .issue("culvert-edge-config.tenant.svc", NOW)
        .unwrap();
    assert_eq!(
        issued.renew_after,
        NOW - DAY + (SERVING_DAYS + 1 - RENEW_DAYS) * DAY
    );
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(authority.certificate_pem.as_bytes()).unwrap())
        .unwrap();
    let provider = culvert_tls::crypto_provider();
    let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .unwrap();
    let leaf = CertificateDer::from_pem_slice(issued.certificate_pem.as_bytes()).unwrap();
    let at = |seconds: u64| UnixTime::since_unix_epoch(Duration::from_secs(seconds));
    let verify = |name: &str, seconds: u64| {
        let name = ServerName::try_from(name.to_owned()).unwrap();
        verifier.verify_server_cert(&leaf, &[], &name, &[], at(seconds))
    };
    verify("culvert-edge-config.tenant.svc", NOW).unwrap();
    verify("culvert-edge-config.tenant.svc", issued.renew_after).unwrap();
    assert!(verify("culvert-other-config.tenant.svc", NOW).is_err());
    assert!(
        verify(
            "culvert-edge-config.tenant.svc",
            NOW + (SERVING_DAYS + 1) * DAY
        )
        .is_err()
    );
    // Another authority's certificate does not chain.
    let other = Authority::generate("elsewhere", NOW).unwrap();
    let foreign = other.issue("culvert-edge-config.tenant.svc", NOW).unwrap();
    let foreign = CertificateDer::from_pem_slice(foreign.certificate_pem.as_bytes()).unwrap();
    let name = ServerName::try_from("culvert-edge-config.tenant.svc").unwrap();
    assert!(
        verifier
            .verify_server_cert(&foreign, &[], &name, &[], at(NOW))
            .is_err()
    );
}

#[test]
fn a_broken_authority_is_an_error() {
    let broken = Authority {
        common_name: "broken".to_owned(),
        certificate_pem: "not pem".to_owned(),
        key_pem: "not pem".to_owned(),
    };
    assert!(matches!(
        broken.issue("x.svc", NOW),
        Err(CredentialError::Authority(_))
    ));
}
