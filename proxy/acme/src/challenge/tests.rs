use super::*;

#[test]
fn http01_answers_while_published_and_not_after() {
    let challenges = Challenges::new();
    let store = challenges.http01().clone();
    assert!(store.is_empty());
    let published = challenges
        .http01()
        .publish("tok-1".to_owned(), "tok-1.thumb".to_owned());
    assert_eq!(store.response("tok-1").as_deref(), Some("tok-1.thumb"));
    assert_eq!(
        store
            .response_for_path("/.well-known/acme-challenge/tok-1")
            .as_deref(),
        Some("tok-1.thumb")
    );
    assert_eq!(store.response("tok-2"), None);
    assert_eq!(store.response_for_path("/tok-1"), None);
    assert_eq!(
        store.response_for_path("/.well-known/acme-challenge/"),
        None
    );
    drop(published);
    assert_eq!(store.response("tok-1"), None);
    assert!(store.is_empty());
}

#[test]
fn a_withdrawal_leaves_a_later_publication_of_the_same_key() {
    let store = Http01Challenges::default();
    let first = store.publish("tok".to_owned(), "one".to_owned());
    let second = store.publish("tok".to_owned(), "two".to_owned());
    drop(first);
    assert_eq!(store.response("tok").as_deref(), Some("two"));
    drop(second);
    assert_eq!(store.response("tok"), None);
}

#[test]
fn tls_alpn01_certificate_carries_the_digest_in_a_critical_acme_identifier() {
    let store = TlsAlpnChallenges::default();
    let digest: Vec<u8> = (0..32).collect();
    let published = store.publish("alpn.example", &digest).unwrap();
    let key = store.certificate_for("ALPN.example").unwrap();
    let der = key.cert[0].as_ref();

    // extnID 1.3.6.1.5.5.7.1.31, critical TRUE, extnValue OCTET STRING { OCTET STRING digest }
    let mut expected = vec![
        0x06, 0x08, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x01, 0x1f, 0x01, 0x01, 0xff, 0x04, 0x22,
        0x04, 0x20,
    ];
    expected.extend_from_slice(&digest);
    assert!(
        der.windows(expected.len()).any(|window| window == expected),
        "acmeIdentifier extension not found"
    );
    // subjectAltName holds the one dNSName: [2] IMPLICIT IA5String.
    let san = [&[0x30, 0x0e, 0x82, 0x0c][..], b"alpn.example"].concat();
    assert!(
        der.windows(san.len()).any(|window| window == san),
        "SAN not found"
    );
    // The signing key is the one whose public key the certificate holds.
    let spki = key.key.public_key().unwrap();
    assert!(
        der.windows(spki.len())
            .any(|window| window == spki.as_ref()),
        "SPKI differs"
    );

    assert!(store.certificate_for("other.example").is_none());
    drop(published);
    assert!(store.certificate_for("alpn.example").is_none());
    assert!(store.is_empty());
}

#[test]
fn tls_alpn01_refuses_a_digest_of_the_wrong_length() {
    let store = TlsAlpnChallenges::default();
    assert!(store.publish("alpn.example", &[0; 31]).is_err());
    assert!(store.is_empty());
}

#[test]
fn acme_tls_must_be_offered() {
    let offered: [&[u8]; 2] = [b"h2", b"acme-tls/1"];
    let not_offered: [&[u8]; 2] = [b"h2", b"http/1.1"];
    assert!(TlsAlpnChallenges::offers_acme_tls(Some(
        offered.into_iter()
    )));
    assert!(!TlsAlpnChallenges::offers_acme_tls(Some(
        not_offered.into_iter()
    )));
    assert!(!TlsAlpnChallenges::offers_acme_tls(
        None::<std::iter::Empty<&[u8]>>
    ));
}
