use super::*;

#[test]
fn account_and_zone_ids_are_32_lowercase_hex() {
    let good = "0123456789abcdef0123456789abcdef";
    assert_eq!(good.parse::<AccountId>().unwrap().as_str(), good);
    assert_eq!(good.parse::<ZoneId>().unwrap().to_string(), good);
    for bad in [
        "",
        "0123456789ABCDEF0123456789abcdef",
        "0123456789abcdef0123456789abcde",
        "0123456789abcdef0123456789abcdef0",
        "0123456789abcdef0123456789abcdeg",
        "../../../user/tokens/verify000000",
    ] {
        assert!(bad.parse::<AccountId>().is_err(), "{bad:?}");
        assert!(bad.parse::<ZoneId>().is_err(), "{bad:?}");
    }
}

#[test]
fn ids_deserialize_only_when_valid() {
    let id: AccountId = serde_json::from_str(r#""0123456789abcdef0123456789abcdef""#).unwrap();
    assert_eq!(
        serde_json::to_string(&id).unwrap(),
        r#""0123456789abcdef0123456789abcdef""#
    );
    assert!(serde_json::from_str::<AccountId>(r#""nope""#).is_err());
    let tunnel: TunnelId =
        serde_json::from_str(r#""F0E1D2C3-B4A5-9687-7869-5A4B3C2D1E0F""#).unwrap();
    assert_eq!(tunnel.to_string(), "f0e1d2c3-b4a5-9687-7869-5a4b3c2d1e0f");
    assert_eq!(
        tunnel.cname_target(),
        "f0e1d2c3-b4a5-9687-7869-5a4b3c2d1e0f.cfargotunnel.com"
    );
    assert!(serde_json::from_str::<TunnelId>(r#""f0e1d2c3b4a5968778695a4b3c2d1e0f""#).is_err());
}

#[test]
fn record_ids_are_path_safe() {
    assert!(
        "372e67954025e0ba6aaa6d586b9e0b59"
            .parse::<RecordId>()
            .is_ok()
    );
    assert!("rec-1_a".parse::<RecordId>().is_ok());
    for bad in ["", "a/b", "a?b", "a b", "..", &"a".repeat(65)] {
        assert!(bad.parse::<RecordId>().is_err(), "{bad:?}");
    }
}

#[test]
fn long_values_are_shortened_in_errors() {
    let long = "x".repeat(1000);
    let message = long.parse::<AccountId>().unwrap_err().to_string();
    assert!(message.len() < 200, "{message}");
}
