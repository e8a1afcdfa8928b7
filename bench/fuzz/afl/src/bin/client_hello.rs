//! AFL++ harness of the `client_hello` fuzz target (see `culvert_fuzz::client_hello`).

fn main() {
    afl::fuzz!(|data: &[u8]| culvert_fuzz::client_hello(data));
}
