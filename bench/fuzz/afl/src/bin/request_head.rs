//! AFL++ harness of the `request_head` fuzz target (see `culvert_fuzz::request_head`).

fn main() {
    afl::fuzz!(|data: &[u8]| culvert_fuzz::request_head(data));
}
