use std::path::Path;

use super::*;

#[test]
fn one_file_per_directory_with_a_plain_name() {
    let state = Path::new("/state");
    assert_eq!(
        path(state, "https://acme-v02.api.letsencrypt.org/directory"),
        Path::new("/state/account-acme-v02.api.letsencrypt.org_directory.json")
    );
    assert_eq!(
        path(state, "https://127.0.0.1:14000/dir"),
        Path::new("/state/account-127.0.0.1_14000_dir.json")
    );
    assert_ne!(
        path(
            state,
            "https://acme-staging-v02.api.letsencrypt.org/directory"
        ),
        path(state, "https://acme-v02.api.letsencrypt.org/directory")
    );
}

#[test]
fn stored_credentials_must_be_for_the_configured_directory() {
    let file = Path::new("/state/account.json");
    let stored = br#"{"id":"https://a/acct/1","key_pkcs8":"AAAA","directory":"https://a/dir"}"#;
    let Err(err) = credentials(file, stored, "https://b/dir") else {
        panic!("credentials for another directory were accepted");
    };
    assert!(err.to_string().contains("not \"https://b/dir\""), "{err}");
    assert!(credentials(file, b"{not json", "https://a/dir").is_err());
    assert!(credentials(file, stored, "https://a/dir").is_ok());
}
