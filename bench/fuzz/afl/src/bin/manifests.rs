//! AFL++ harness of the `manifests` fuzz target (see `culvert_fuzz::manifests`).

fn main() {
    afl::fuzz!(|data: &[u8]| culvert_fuzz::manifests(data));
}
