use super::*;
use culvert_router::RouteTableBuilder;

fn self_signed(names: &[&str]) -> (String, String) {
    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let cert = rcgen::generate_simple_self_signed(names).unwrap();
    (cert.cert.pem(), cert.signing_key.serialize_pem())
}

fn config(certificates: serde_json::Value, refs: serde_json::Value) -> DataPlaneConfig {
    serde_json::from_value(serde_json::json!({
        "version": 1,
        "listeners": [
            {"name": "web", "port": 8443, "protocol": "HTTPS",
             "tls": {"certificateRefs": refs}},
            {"name": "plain", "port": 8080, "protocol": "HTTP"}
        ],
        "certificates": certificates
    }))
    .unwrap()
}

fn build(config: &DataPlaneConfig) -> Result<TlsSettings, Error> {
    let table = Arc::new(RouteTableBuilder::new().build(config).unwrap());
    TlsSettings::build(config, &table, None)
}

/// The `web` listener with one inline certificate for `a.example`.
fn one_inline_certificate() -> DataPlaneConfig {
    let (cert, key) = self_signed(&["a.example"]);
    config(
        serde_json::json!([{"namespace": "ns", "name": "a", "certificatePem": cert, "privateKeyPem": key}]),
        serde_json::json!([{"namespace": "ns", "name": "a"}]),
    )
}

#[test]
fn https_addresses_get_a_server_config_with_alpn() {
    let config = one_inline_certificate();
    let tls = build(&config).unwrap();
    let server = &tls
        .server_config("0.0.0.0:8443".parse().unwrap())
        .unwrap()
        .config;
    assert_eq!(
        server.alpn_protocols,
        [b"h2".to_vec(), b"http/1.1".to_vec()]
    );
    assert!(tls.server_config("0.0.0.0:8080".parse().unwrap()).is_none());
    assert!(!tls.store().files_changed());
}

#[test]
fn unknown_reference_and_bad_pem_are_refused_with_the_name() {
    let (cert, _) = self_signed(&["a.example"]);
    let missing = config(
        serde_json::json!([]),
        serde_json::json!([{"namespace": "ns", "name": "gone"}]),
    );
    let err = build(&missing).unwrap_err().to_string();
    assert!(err.contains("ns/gone"), "{err}");

    let bad_key = config(
        serde_json::json!([{"namespace": "ns", "name": "a", "certificatePem": cert, "privateKeyPem": "junk"}]),
        serde_json::json!([{"namespace": "ns", "name": "a"}]),
    );
    let err = build(&bad_key).unwrap_err().to_string();
    assert!(err.contains("ns/a") && err.contains("private key"), "{err}");

    let none = config(serde_json::json!([]), serde_json::json!([]));
    let err = build(&none).unwrap_err().to_string();
    assert!(err.contains("no certificateRefs"), "{err}");
}

#[test]
fn file_certificates_notice_changes() {
    let dir = std::env::temp_dir().join(format!("culvert-tls-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = self_signed(&["a.example"]);
    let cert_path = dir.join("tls.crt");
    let key_path = dir.join("tls.key");
    std::fs::write(&cert_path, &cert).unwrap();
    std::fs::write(&key_path, &key).unwrap();
    let config = config(
        serde_json::json!([{"namespace": "ns", "name": "a",
            "certificateFile": cert_path, "privateKeyFile": key_path}]),
        serde_json::json!([{"namespace": "ns", "name": "a"}]),
    );
    let tls = build(&config).unwrap();
    assert!(!tls.store().files_changed());
    let (renewed, _) = self_signed(&["a.example", "b.example"]);
    std::fs::write(&cert_path, renewed).unwrap();
    assert!(tls.store().files_changed());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs a TLS handshake between `client` and `server` in memory; whether the server
/// resumed a session. The client keeps the tickets it was given in its config.
fn handshake(client: &Arc<rustls::ClientConfig>, server: &Arc<ServerConfig>) -> bool {
    let name = rustls::pki_types::ServerName::try_from("a.example").unwrap();
    let mut client = rustls::ClientConnection::new(Arc::clone(client), name).unwrap();
    let mut server = rustls::ServerConnection::new(Arc::clone(server)).unwrap();
    let mut wire = Vec::new();
    // The client must also read the server's last flight, which carries the tickets.
    for _ in 0..10 {
        wire.clear();
        while client.wants_write() {
            client.write_tls(&mut wire).unwrap();
        }
        server.read_tls(&mut wire.as_slice()).unwrap();
        server.process_new_packets().unwrap();
        wire.clear();
        while server.wants_write() {
            server.write_tls(&mut wire).unwrap();
        }
        client.read_tls(&mut wire.as_slice()).unwrap();
        client.process_new_packets().unwrap();
        if !client.is_handshaking() && !server.is_handshaking() && !server.wants_write() {
            break;
        }
    }
    assert!(!server.is_handshaking(), "the handshake did not finish");
    server.handshake_kind() == Some(rustls::HandshakeKind::Resumed)
}

/// More returning clients than rustls' default 256-session cache holds all resume,
/// and a session from before a config swap resumes on the new snapshot's config.
#[test]
fn sessions_resume_for_many_clients_and_across_a_config_swap() {
    let config = one_inline_certificate();
    let address = "0.0.0.0:8443".parse().unwrap();
    let before = build(&config).unwrap();
    let server = Arc::clone(&before.server_config(address).unwrap().config);
    let clients: Vec<_> = (0..300)
        .map(|_| culvert_bench::tls::trusting_client_config(crate::crypto_provider(), &[]).unwrap())
        .collect();
    for client in &clients {
        assert!(
            !handshake(client, &server),
            "a first visit is a full handshake"
        );
    }
    let resumed = clients
        .iter()
        .filter(|client| handshake(client, &server))
        .count();
    assert_eq!(resumed, clients.len());

    let after = build(&config).unwrap();
    let swapped = &after.server_config(address).unwrap().config;
    assert!(!Arc::ptr_eq(&server, swapped));
    assert!(handshake(&clients[0], swapped), "resumed after the swap");
}

#[test]
fn acme_listeners_add_acme_tls_alpn_on_their_address_only_and_serve_a_stand_in() {
    let config: DataPlaneConfig = serde_json::from_value(serde_json::json!({
        "version": 1,
        "listeners": [
            {"name": "acme", "port": 8443, "protocol": "HTTPS", "hostname": "a.example",
             "tls": {"acme": {}}},
            {"name": "plain", "port": 8080, "protocol": "HTTP"}
        ]
    }))
    .unwrap();
    let table = Arc::new(RouteTableBuilder::new().build(&config).unwrap());
    let err = TlsSettings::build(&config, &table, None).unwrap_err();
    assert!(matches!(
        err,
        Error::Tls(TlsError::AcmeNotConfigured { .. })
    ));

    let dir = std::env::temp_dir().join(format!("culvert-tls-acme-{}", std::process::id()));
    let acme = AcmeCertificates::new(&dir, culvert_acme::Challenges::new());
    let tls = TlsSettings::build(&config, &table, Some(&acme)).unwrap();
    let server = &tls
        .server_config("0.0.0.0:8443".parse().unwrap())
        .unwrap()
        .config;
    assert_eq!(
        server.alpn_protocols,
        [b"h2".to_vec(), b"http/1.1".to_vec(), ACME_TLS_ALPN.to_vec()]
    );
    assert!(!tls.store().files_changed());
    // The certificate files do not exist yet; when they appear, the snapshot reloads.
    std::fs::create_dir_all(dir.join("a.example")).unwrap();
    std::fs::write(dir.join("a.example").join("tls.crt"), "not yet").unwrap();
    assert!(tls.store().files_changed());
    let _ = std::fs::remove_dir_all(&dir);

    let without_acme = one_inline_certificate();
    let table = Arc::new(RouteTableBuilder::new().build(&without_acme).unwrap());
    let tls = TlsSettings::build(&without_acme, &table, Some(&acme)).unwrap();
    let server = &tls
        .server_config("0.0.0.0:8443".parse().unwrap())
        .unwrap()
        .config;
    assert_eq!(
        server.alpn_protocols,
        [b"h2".to_vec(), b"http/1.1".to_vec()]
    );
}
