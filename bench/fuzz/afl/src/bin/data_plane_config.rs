//! AFL++ harness of the `data_plane_config` fuzz target (see `culvert_fuzz::data_plane_config`).

fn main() {
    afl::fuzz!(|data: &[u8]| culvert_fuzz::data_plane_config(data));
}
