use proptest::prelude::*;

use super::*;

#[test]
fn parses_canonical_text() {
    let id: Uuid = "6ba7b810-9dad-11d1-80b4-00c04fd430c8".parse().unwrap();
    assert_eq!(
        id.as_bytes(),
        &[
            0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4,
            0x30, 0xc8
        ]
    );
    assert_eq!(id.to_string(), "6ba7b810-9dad-11d1-80b4-00c04fd430c8");
    let upper: Uuid = "6BA7B810-9DAD-11D1-80B4-00C04FD430C8".parse().unwrap();
    assert_eq!(upper, id);
}

#[test]
fn rejects_malformed_text() {
    for bad in [
        "",
        "6ba7b810-9dad-11d1-80b4-00c04fd430c",
        "6ba7b810-9dad-11d1-80b4-00c04fd430c88",
        "6ba7b8109dad-11d1-80b4-00c04fd430c8-",
        "6ba7b810-9dad-11d1-80b4-00c04fd430cg",
        "{ba7b810-9dad-11d1-80b4-00c04fd430c8",
    ] {
        assert!(matches!(bad.parse::<Uuid>(), Err(Error::Uuid(_))), "{bad}");
    }
}

#[test]
fn from_slice_requires_sixteen_bytes() {
    assert!(Uuid::from_slice(&[0; 15]).is_none());
    assert_eq!(Uuid::from_slice(&[3; 16]), Some(Uuid::from_bytes([3; 16])));
}

proptest! {
    #[test]
    fn display_parse_round_trip(bytes in any::<[u8; 16]>()) {
        let id = Uuid::from_bytes(bytes);
        prop_assert_eq!(id.to_string().parse::<Uuid>().unwrap(), id);
    }

    #[test]
    fn arbitrary_text_never_panics(text in ".{0,40}") {
        if let Ok(id) = text.parse::<Uuid>() {
            prop_assert_eq!(id.to_string(), text.to_ascii_lowercase());
        }
    }
}
