//! Compiling `schema/*.capnp` into the Rust modules committed in `src/generated/`,
//! shared by the `capnp_generate` example (which writes them) and the `generated`
//! test (which checks them).
//!
//! Each generated file starts with a line naming its schema and the FNV-1a 64 hash
//! of the schema's bytes, so a schema edited without regenerating is caught without
//! the schema compiler; with the compiler installed, the test also compares the
//! files byte for byte with a fresh compilation.

use std::fs;
use std::path::{Path, PathBuf};

/// The schema files, in `schema/`, each compiled to `src/generated/<stem>_capnp.rs`.
pub(crate) const SCHEMAS: [&str; 3] = [
    "quic_metadata_protocol.capnp",
    "rpc.capnp",
    "tunnelrpc.capnp",
];

/// The crate's root directory.
pub(crate) fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Where the committed modules live.
pub(crate) fn generated_dir() -> PathBuf {
    crate_dir().join("src").join("generated")
}

/// The generated file name of a schema file name.
pub(crate) fn module_file(schema: &str) -> String {
    format!("{}_capnp.rs", schema.trim_end_matches(".capnp"))
}

/// FNV-1a, 64 bits: small, dependency-free and stable, which is all a staleness
/// check needs (it is not a defence against anyone).
pub(crate) fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The first line of the module generated from `schema` with contents `source`.
pub(crate) fn header(schema: &str, source: &[u8]) -> String {
    format!(
        "// Generated from schema/{schema} (fnv1a64 {:#018x}) by scripts/capnp-generate.\n",
        fnv1a64(source)
    )
}

/// Compiles every schema into `out_dir` (which must exist), each file starting with
/// its [`header`]. Needs the `capnp` compiler on `PATH`.
pub(crate) fn generate(out_dir: &Path) -> Result<(), String> {
    let schema_dir = crate_dir().join("schema");
    let mut command = capnpc::CompilerCommand::new();
    command
        .no_standard_import()
        .src_prefix(&schema_dir)
        .output_path(out_dir)
        .default_parent_module(vec!["generated".to_owned()]);
    for schema in SCHEMAS {
        command.file(schema_dir.join(schema));
    }
    command
        .run()
        .map_err(|e| format!("capnp compile failed: {e}"))?;
    for schema in SCHEMAS {
        let source = fs::read(schema_dir.join(schema)).map_err(|e| format!("{schema}: {e}"))?;
        let path = out_dir.join(module_file(schema));
        let code = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        fs::write(&path, header(schema, &source) + &code)
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

/// Whether the `capnp` compiler can be run.
pub(crate) fn compiler_available() -> bool {
    std::process::Command::new("capnp")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success())
}
