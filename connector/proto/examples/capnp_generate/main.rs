//! Regenerates `src/generated/*_capnp.rs` from `schema/*.capnp` with the `capnp`
//! compiler and capnpc-rust. Run it through `scripts/capnp-generate` after editing a
//! schema, and commit the result: builds never need the compiler.

mod codegen;

use std::process::ExitCode;

fn main() -> ExitCode {
    if !codegen::compiler_available() {
        eprintln!("capnp_generate: the capnp schema compiler is not on PATH");
        return ExitCode::FAILURE;
    }
    let out = codegen::generated_dir();
    match codegen::generate(&out) {
        Ok(()) => {
            for schema in codegen::SCHEMAS {
                println!("wrote {}", out.join(codegen::module_file(schema)).display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("capnp_generate: {e}");
            ExitCode::FAILURE
        }
    }
}
