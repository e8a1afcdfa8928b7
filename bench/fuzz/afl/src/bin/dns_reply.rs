//! AFL++ harness of the `dns_reply` fuzz target (see `culvert_fuzz::dns_reply`).

fn main() {
    afl::fuzz!(|data: &[u8]| culvert_fuzz::dns_reply(data));
}
