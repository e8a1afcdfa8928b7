use super::*;

fn certificate_pem() -> String {
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["ca.test".to_owned()]).unwrap();
    params.self_signed(&key).unwrap().pem()
}

#[test]
fn pem_certificates_become_roots() {
    let pem = format!("{}{}", certificate_pem(), certificate_pem());
    let roots = pem_roots(pem.as_bytes()).unwrap();
    assert_eq!(roots.len(), 2);
}

#[test]
fn text_without_a_certificate_is_refused() {
    assert!(matches!(pem_roots(b""), Err(Error::NoCertificate)));
    assert!(matches!(
        pem_roots(b"not pem at all"),
        Err(Error::NoCertificate)
    ));
    assert!(matches!(
        pem_roots(b"-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n"),
        Err(Error::Pem(_))
    ));
    assert!(matches!(
        pem_roots(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
        Err(Error::Anchor(_))
    ));
}

#[test]
fn system_roots_report_what_they_added() {
    let mut roots = RootCertStore::empty();
    let found = add_system_roots(&mut roots);
    assert_eq!(found.added, roots.len());
}
