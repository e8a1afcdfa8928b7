//! AFL++ harness of the `capnp` fuzz target (see `culvert_fuzz::capnp`).

fn main() {
    afl::fuzz!(|data: &[u8]| culvert_fuzz::capnp(data));
}
