//! AFL++ harness of the `head_round_trip` fuzz target (see `culvert_fuzz::head_round_trip`).

fn main() {
    afl::fuzz!(|data: &[u8]| culvert_fuzz::head_round_trip(data));
}
