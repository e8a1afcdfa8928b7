use super::{decode_continue, encode_continue};

#[test]
fn continue_tokens_round_trip_and_match_the_real_format() {
    // The token a real 1.20 server returned for rv 94 after w2 (API-SERVER.md §4).
    let real = "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6OTQsInN0YXJ0IjoidzJcdTAwMDAifQ";
    assert_eq!(decode_continue(real), Some((94, "w2".to_owned())));
    let ours = encode_continue(94, "demo/w2");
    assert_eq!(decode_continue(&ours), Some((94, "demo/w2".to_owned())));
    assert_eq!(
        decode_continue(&encode_continue(-1, "a/b")),
        Some((-1, "a/b".to_owned()))
    );
    assert_eq!(decode_continue("not a token"), None);
}
