use std::fs;

use super::*;

struct Pair {
    chain: String,
    key: String,
}

fn issued(names: &[&str]) -> Pair {
    let key = rcgen::KeyPair::generate().unwrap();
    let params =
        rcgen::CertificateParams::new(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>())
            .unwrap();
    let certificate = params.self_signed(&key).unwrap();
    Pair {
        chain: certificate.pem(),
        key: key.serialize_pem(),
    }
}

fn names(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

#[test]
fn a_matching_pair_for_every_name_is_usable() {
    let pair = issued(&["a.example", "b.example"]);
    let validity = check_pair(
        pair.chain.as_bytes(),
        pair.key.as_bytes(),
        &names(&["a.example", "b.example"]),
    )
    .unwrap();
    assert!(validity.not_before < validity.not_after);
}

#[test]
fn refuses_missing_names_foreign_keys_and_garbage() {
    let pair = issued(&["a.example"]);
    let other = issued(&["a.example"]);
    let cases = [
        (
            pair.chain.as_str(),
            pair.key.as_str(),
            names(&["a.example", "b.example"]),
            "does not cover b.example",
        ),
        (
            pair.chain.as_str(),
            other.key.as_str(),
            names(&["a.example"]),
            "do not go together",
        ),
        (
            "",
            pair.key.as_str(),
            names(&["a.example"]),
            "no certificate",
        ),
        (
            pair.chain.as_str(),
            "",
            names(&["a.example"]),
            "private key",
        ),
        (
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
            pair.key.as_str(),
            names(&["a.example"]),
            "malformed",
        ),
    ];
    for (chain, key, names, why) in cases {
        let reason = check_pair(chain.as_bytes(), key.as_bytes(), &names).unwrap_err();
        assert!(reason.contains(why), "expected {why:?} in {reason:?}");
    }
}

#[test]
fn stores_and_inspects_the_pair() {
    let state = std::env::temp_dir().join(format!("culvert-acme-stored-{}", std::process::id()));
    let _ = fs::remove_dir_all(&state);
    let paths = CertificatePaths::new(&state, "a.example");
    assert_eq!(paths.certificate, state.join("a.example/tls.crt"));
    assert_eq!(inspect(&paths, &names(&["a.example"])).unwrap(), Ok(None));

    let pair = issued(&["a.example"]);
    store(&paths, pair.chain.as_bytes(), pair.key.as_bytes()).unwrap();
    assert!(matches!(
        inspect(&paths, &names(&["a.example"])).unwrap(),
        Ok(Some(_))
    ));

    fs::remove_file(&paths.private_key).unwrap();
    assert_eq!(
        inspect(&paths, &names(&["a.example"])).unwrap(),
        Err("tls.key is missing".to_owned())
    );
    fs::remove_dir_all(&state).unwrap();
}
