//! AFL++ harness of the `body` fuzz target (see `culvert_fuzz::body`).

fn main() {
    afl::fuzz!(|data: &[u8]| culvert_fuzz::body(data));
}
