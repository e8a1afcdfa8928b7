//! AFL++ harness of the `tunnel_token` fuzz target (see `culvert_fuzz::tunnel_token`).

fn main() {
    afl::fuzz!(|data: &[u8]| culvert_fuzz::tunnel_token(data));
}
