//! The committed `src/generated/*_capnp.rs` are what `schema/*.capnp` compile to.
//!
//! Without the schema compiler, each file's recorded schema hash must match the
//! schema as it is now. With `capnp` on `PATH`, a fresh compilation into a scratch
//! directory must also equal the committed files byte for byte. Either failure means:
//! run `scripts/capnp-generate` and commit the result.

#[path = "../examples/capnp_generate/codegen.rs"]
mod codegen;

use std::fs;

#[test]
fn generated_code_records_the_current_schemas() {
    let schema_dir = codegen::crate_dir().join("schema");
    for schema in codegen::SCHEMAS {
        let source = fs::read(schema_dir.join(schema)).expect("schema file");
        let generated = codegen::generated_dir().join(codegen::module_file(schema));
        let code = fs::read_to_string(&generated).expect("generated file");
        let first_line = code.lines().next().unwrap_or_default();
        assert_eq!(
            format!("{first_line}\n"),
            codegen::header(schema, &source),
            "{} is stale: run scripts/capnp-generate",
            generated.display()
        );
    }
}

#[test]
fn generated_code_is_what_the_compiler_produces() {
    if !codegen::compiler_available() {
        println!("skipped: the capnp schema compiler is not on PATH");
        return;
    }
    let scratch = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("capnp-generated-{}", std::process::id()));
    fs::create_dir_all(&scratch).expect("scratch directory");
    codegen::generate(&scratch).expect("capnp compile");
    for schema in codegen::SCHEMAS {
        let name = codegen::module_file(schema);
        let fresh = fs::read_to_string(scratch.join(&name)).expect("fresh file");
        let committed =
            fs::read_to_string(codegen::generated_dir().join(&name)).expect("committed file");
        assert!(
            fresh == committed,
            "src/generated/{name} differs from a fresh compilation: run scripts/capnp-generate"
        );
    }
    fs::remove_dir_all(&scratch).expect("remove scratch directory");
}
