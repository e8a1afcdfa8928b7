use super::*;
use crate::vector::{load_vector, vector_paths};
use rcgen::PublicKeyData;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use serde_json::json;
use std::collections::BTreeSet;
use std::path::Path;
use webpki::{EndEntityCert, KeyUsage, anchor_from_trusted_cert};

fn decode_base64(text: &str) -> Vec<u8> {
    BASE64.decode(text).unwrap()
}

fn secret(name: &str, annotation: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "namespace": "ns", "annotations": {ANNOTATION: annotation}},
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": "", "tls.key": ""}
    })
}

fn config_map(name: &str, annotation: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ns", "annotations": {ANNOTATION: annotation}},
        "data": {"ca.crt": ""}
    })
}

/// The DER certificate in a filled object: base64 for Secrets, plain for ConfigMaps.
fn cert_der(object: &Value, key: &str) -> CertificateDer<'static> {
    let value = object["data"][key].as_str().unwrap();
    let pem = if object["kind"] == "Secret" {
        decode_base64(value)
    } else {
        value.as_bytes().to_vec()
    };
    CertificateDer::from_pem_slice(&pem).unwrap()
}

fn verify(
    leaf: &CertificateDer<'_>,
    ca: &CertificateDer<'_>,
    usage: KeyUsage,
) -> Result<(), webpki::Error> {
    let anchors = [anchor_from_trusted_cert(ca).unwrap()];
    let ee = EndEntityCert::try_from(leaf).unwrap();
    ee.verify_for_usage(
        webpki::ALL_VERIFICATION_ALGS,
        &anchors,
        &[],
        UnixTime::now(),
        usage,
        None,
        None,
    )
    .map(|_| ())
}

fn valid_for(leaf: &CertificateDer<'_>, name: &str) -> bool {
    let ee = EndEntityCert::try_from(leaf).unwrap();
    ee.verify_is_valid_for_subject_name(&ServerName::try_from(name).unwrap())
        .is_ok()
}

fn corpus() -> Vec<crate::vector::VectorFile> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("vectors");
    vector_paths(&dir)
        .unwrap()
        .iter()
        .map(|path| load_vector(path).unwrap())
        .collect()
}

fn annotated(resources: &[Value]) -> impl Iterator<Item = &Value> {
    resources
        .iter()
        .filter(|r| r["metadata"]["annotations"][ANNOTATION].is_string())
}

fn signer(ca: Option<&str>, config_map: Option<&str>) -> Option<Signer> {
    Some(Signer {
        ca: ca.map(str::to_owned),
        config_map: config_map.map(str::to_owned),
    })
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn every_phrasing_in_the_corpus_parses() {
    let mut texts = BTreeSet::new();
    for file in corpus() {
        let applied = file
            .steps
            .iter()
            .flat_map(|s| s.apply.iter().cloned())
            .collect::<Vec<_>>();
        for object in annotated(&file.resources).chain(annotated(&applied)) {
            texts.insert(
                object["metadata"]["annotations"][ANNOTATION]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            );
        }
    }
    let want = [
        (
            "CA certificate bundle (key ca.crt)",
            Spec::Bundle {
                key: "ca.crt".into(),
                ca: None,
                signs: None,
            },
        ),
        (
            "CA certificate bundle (key ca.crt); CA \"A\" used to sign tls-validity-checks-client-certificate",
            Spec::Bundle {
                key: "ca.crt".into(),
                ca: Some("A".into()),
                signs: Some("tls-validity-checks-client-certificate".into()),
            },
        ),
        (
            "CA certificate bundle (key ca.crt); CA \"B\" used to sign tls-validity-checks-per-port-client-certificate",
            Spec::Bundle {
                key: "ca.crt".into(),
                ca: Some("B".into()),
                signs: Some("tls-validity-checks-per-port-client-certificate".into()),
            },
        ),
        (
            "CA certificate bundle (key ca.crt); CA \"C\"",
            Spec::Bundle {
                key: "ca.crt".into(),
                ca: Some("C".into()),
                signs: None,
            },
        ),
        (
            "TLS serving certificate signed by CA \"C\" (ConfigMap tls-checks-ca-certificate); SANs=tls.example.com",
            Spec::Cert {
                usage: Usage::Server,
                signer: signer(Some("C"), Some("tls-checks-ca-certificate")),
                names: strings(&["tls.example.com"]),
            },
        ),
        (
            "TLS serving certificate signed by CA \"C\"; SANs=abc.example.com (served by tcp-backend itself for passthrough)",
            Spec::Cert {
                usage: Usage::Server,
                signer: signer(Some("C"), None),
                names: strings(&["abc.example.com"]),
            },
        ),
        (
            "client certificate signed by CA \"C\" (ConfigMap tls-checks-ca-certificate)",
            Spec::Cert {
                usage: Usage::Client,
                signer: signer(Some("C"), Some("tls-checks-ca-certificate")),
                names: vec![],
            },
        ),
        (
            "client certificate signed by the CA in ConfigMap tls-validity-checks-ca-certificate",
            Spec::Cert {
                usage: Usage::Client,
                signer: signer(None, Some("tls-validity-checks-ca-certificate")),
                names: vec![],
            },
        ),
        (
            "client certificate signed by the CA in ConfigMap tls-validity-checks-per-port-ca-certificate",
            Spec::Cert {
                usage: Usage::Client,
                signer: signer(None, Some("tls-validity-checks-per-port-ca-certificate")),
                names: vec![],
            },
        ),
        (
            "self-signed TLS certificate; hosts=*",
            Spec::Cert {
                usage: Usage::Server,
                signer: None,
                names: strings(&["*"]),
            },
        ),
        (
            "self-signed TLS certificate; hosts=*,*.org,*.wildcard.org",
            Spec::Cert {
                usage: Usage::Server,
                signer: None,
                names: strings(&["*", "*.org", "*.wildcard.org"]),
            },
        ),
    ];
    assert_eq!(
        texts.iter().map(String::as_str).collect::<Vec<_>>(),
        want.iter().map(|(t, _)| *t).collect::<Vec<_>>()
    );
    for (text, spec) in want {
        assert_eq!(parse(text), Ok(spec), "{text}");
    }
}

#[test]
fn other_phrasings_parse_or_fail_clearly() {
    assert_eq!(
        parse("client certificate signed by CA \"X\"; SANs=client.example.com,10.0.0.1"),
        Ok(Spec::Cert {
            usage: Usage::Client,
            signer: signer(Some("X"), None),
            names: strings(&["client.example.com", "10.0.0.1"])
        })
    );
    assert_eq!(
        parse("self-signed certificate; SANs=a.example.com"),
        Ok(Spec::Cert {
            usage: Usage::Server,
            signer: None,
            names: strings(&["a.example.com"])
        })
    );
    assert_eq!(
        parse("CA certificate bundle"),
        Ok(Spec::Bundle {
            key: "ca.crt".into(),
            ca: None,
            signs: None
        })
    );
    for bad in [
        "",
        "a kitten",
        "self-signed TLS certificate",
        "self-signed TLS certificate; hosts=a b",
        "self-signed TLS certificate; hosts=a,,b",
        "self-signed TLS certificate; hosts=a; hosts=b",
        "self-signed TLS certificate; colour=blue",
        "TLS serving certificate signed by CA \"C\"",
        "TLS serving certificate signed by CA C; SANs=a",
        "TLS serving certificate signed by CA \"C\" for fun; SANs=a",
        "TLS serving certificate signed by the neighbour; SANs=a",
        "mystery certificate signed by CA \"C\"; SANs=a",
        "CA certificate bundle (key)",
        "CA certificate bundle; hosts=a",
        "CA certificate bundle; CA \"A\" signs everything",
        "client certificate signed by CA \"C\"; CA \"C\"",
    ] {
        assert!(parse(bad).is_err(), "{bad:?} parsed as {:?}", parse(bad));
    }
}

#[test]
fn unknown_annotation_names_the_object_and_the_text() {
    let mut resources = vec![secret("s", "a pony, please")];
    let err = fill_generated(&mut resources, &mut CaSet::new()).unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, Error::Annotation { .. }), "{err:?}");
    assert!(message.starts_with("Secret ns/s: cannot generate from conformance-vectors/generate annotation \"a pony, please\""), "{message}");
    // Nothing was filled.
    assert_eq!(resources[0]["data"]["tls.crt"], "");

    let mut resources = vec![config_map("cm", "self-signed TLS certificate; hosts=a")];
    let err = fill_generated(&mut resources, &mut CaSet::new()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "ConfigMap ns/cm: a ConfigMap cannot hold a private key"
    );
}

#[test]
fn every_corpus_file_fills() {
    for file in corpus() {
        let mut resources = file.resources.clone();
        fill_generated(&mut resources, &mut CaSet::new())
            .unwrap_or_else(|err| panic!("{}: {err}", file.name));
        for object in annotated(&resources) {
            let data = object["data"].as_object().unwrap();
            assert!(!data.is_empty());
            for (key, value) in data {
                let value = value.as_str().unwrap();
                let pem = if object["kind"] == "Secret" {
                    String::from_utf8(decode_base64(value)).unwrap()
                } else {
                    value.to_owned()
                };
                assert!(
                    pem.starts_with("-----BEGIN "),
                    "{}: {key}: {pem:?}",
                    file.name
                );
            }
        }
        // Objects without the annotation are untouched.
        let untouched = |r: &&Value| !r["metadata"]["annotations"][ANNOTATION].is_string();
        assert!(
            resources
                .iter()
                .filter(untouched)
                .eq(file.resources.iter().filter(untouched))
        );
    }
}

#[test]
fn serving_certificate_names_its_sans_and_chains_to_its_ca() {
    let mut resources = vec![
        config_map("ca-c", "CA certificate bundle (key ca.crt); CA \"C\""),
        secret(
            "serving",
            "TLS serving certificate signed by CA \"C\" (ConfigMap ca-c); SANs=tls.example.com,*.wild.example.com,192.0.2.7",
        ),
    ];
    let mut cas = CaSet::new();
    fill_generated(&mut resources, &mut cas).unwrap();
    let ca = cert_der(&resources[0], "ca.crt");
    let leaf = cert_der(&resources[1], "tls.crt");
    verify(&leaf, &ca, KeyUsage::server_auth()).unwrap();
    assert!(
        verify(&leaf, &ca, KeyUsage::client_auth()).is_err(),
        "serving certificates are not client certificates"
    );
    assert!(valid_for(&leaf, "tls.example.com"));
    assert!(valid_for(&leaf, "foo.wild.example.com"));
    assert!(valid_for(&leaf, "192.0.2.7"));
    assert!(!valid_for(&leaf, "abc.example.com"));
    // The key is PKCS#8 PEM that matches the certificate's key.
    let key_pem = String::from_utf8(decode_base64(
        resources[1]["data"]["tls.key"].as_str().unwrap(),
    ))
    .unwrap();
    let key = KeyPair::from_pem(&key_pem).unwrap();
    let ee = EndEntityCert::try_from(&leaf).unwrap();
    assert_eq!(
        ee.subject_public_key_info().as_ref(),
        key.subject_public_key_info()
    );
    // The set hands out the same CA.
    assert_eq!(
        resources[0]["data"]["ca.crt"].as_str().unwrap(),
        cas.ca_pem("C").unwrap()
    );
}

#[test]
fn client_certificate_signed_by_ca_a_is_issued_by_a() {
    let mut resources = vec![
        config_map(
            "bundle-a",
            "CA certificate bundle (key ca.crt); CA \"A\" used to sign client-a",
        ),
        config_map(
            "bundle-b",
            "CA certificate bundle (key ca.crt); CA \"B\" used to sign client-b",
        ),
        secret(
            "client-a",
            "client certificate signed by the CA in ConfigMap bundle-a",
        ),
        secret(
            "client-b",
            "client certificate signed by the CA in ConfigMap bundle-b",
        ),
    ];
    let mut cas = CaSet::new();
    fill_generated(&mut resources, &mut cas).unwrap();
    let (ca_a, ca_b) = (
        cert_der(&resources[0], "ca.crt"),
        cert_der(&resources[1], "ca.crt"),
    );
    let (client_a, client_b) = (
        cert_der(&resources[2], "tls.crt"),
        cert_der(&resources[3], "tls.crt"),
    );

    let a = EndEntityCert::try_from(&ca_a).unwrap();
    let b = EndEntityCert::try_from(&ca_b).unwrap();
    assert_ne!(a.subject(), b.subject(), "CAs are independent");
    assert_eq!(
        EndEntityCert::try_from(&client_a).unwrap().issuer(),
        a.subject()
    );
    assert_eq!(
        EndEntityCert::try_from(&client_b).unwrap().issuer(),
        b.subject()
    );

    verify(&client_a, &ca_a, KeyUsage::client_auth()).unwrap();
    verify(&client_b, &ca_b, KeyUsage::client_auth()).unwrap();
    assert!(verify(&client_a, &ca_b, KeyUsage::client_auth()).is_err());
    assert!(verify(&client_a, &ca_a, KeyUsage::server_auth()).is_err());

    // A later call with the same set (a step) signs with the same CA.
    let mut later = vec![secret("again", "client certificate signed by CA \"A\"")];
    fill_generated(&mut later, &mut cas).unwrap();
    verify(
        &cert_der(&later[0], "tls.crt"),
        &ca_a,
        KeyUsage::client_auth(),
    )
    .unwrap();
    let mut later = vec![secret(
        "again",
        "client certificate signed by the CA in ConfigMap bundle-b",
    )];
    fill_generated(&mut later, &mut cas).unwrap();
    verify(
        &cert_der(&later[0], "tls.crt"),
        &ca_b,
        KeyUsage::client_auth(),
    )
    .unwrap();
}

#[test]
fn self_signed_certificate_is_its_own_anchor() {
    let mut resources = vec![secret(
        "self",
        "self-signed TLS certificate; hosts=*,*.org,*.wildcard.org",
    )];
    fill_generated(&mut resources, &mut CaSet::new()).unwrap();
    let cert = cert_der(&resources[0], "tls.crt");
    verify(&cert, &cert, KeyUsage::server_auth()).unwrap();
    assert!(valid_for(&cert, "foo.wildcard.org"));
    // `*.org` is in the certificate too, but webpki refuses wildcards right under a TLD.
    assert!(!valid_for(&cert, "example.com"));
}

#[test]
fn unnamed_bundles_are_independent_and_ca_crt_is_filled_when_declared() {
    let mut resources = vec![
        config_map("one", "CA certificate bundle (key ca.crt)"),
        config_map("two", "CA certificate bundle"),
        secret(
            "leaf",
            "TLS serving certificate signed by the CA in ConfigMap ns/two; SANs=x.example.com",
        ),
    ];
    resources[2]["data"]["ca.crt"] = json!("");
    fill_generated(&mut resources, &mut CaSet::new()).unwrap();
    assert_ne!(
        resources[0]["data"]["ca.crt"],
        resources[1]["data"]["ca.crt"]
    );
    let two = cert_der(&resources[1], "ca.crt");
    verify(
        &cert_der(&resources[2], "tls.crt"),
        &two,
        KeyUsage::server_auth(),
    )
    .unwrap();
    assert_eq!(cert_der(&resources[2], "ca.crt"), two);
}

#[test]
fn contradicting_annotations_are_refused() {
    let mut resources = vec![
        config_map("bundle-a", "CA certificate bundle; CA \"A\""),
        secret(
            "s",
            "client certificate signed by CA \"B\" (ConfigMap bundle-a)",
        ),
    ];
    let err = fill_generated(&mut resources, &mut CaSet::new()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Secret ns/s: signed by CA \"B\", but ConfigMap ns/bundle-a holds the CA \"A\""
    );

    let mut resources = vec![
        config_map("bundle-a", "CA certificate bundle; CA \"A\" used to sign s"),
        secret("s", "client certificate signed by CA \"B\""),
    ];
    let err = fill_generated(&mut resources, &mut CaSet::new()).unwrap_err();
    assert!(matches!(err, Error::Conflict { .. }), "{err:?}");
    assert!(
        err.to_string()
            .starts_with("ConfigMap ns/bundle-a: says its CA \"A\" signs Secret ns/s"),
        "{err}"
    );
}
