//! Command-line options of the benchmark harnesses: `--name value`, numbers only.

/// The number after `name` on the command line, else `default`.
pub(crate) fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
