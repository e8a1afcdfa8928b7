//! AFL++ harness of the `response_head` fuzz target (see `culvert_fuzz::response_head`).

fn main() {
    afl::fuzz!(|data: &[u8]| culvert_fuzz::response_head(data));
}
