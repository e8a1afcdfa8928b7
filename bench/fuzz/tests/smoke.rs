//! Smoke test of the fuzz targets, run with the normal test suite: every target over
//! every seed of its corpus (`bench/fuzz/corpus/<target>/`) and over a few thousand
//! deterministic mutations of them (bits flipped, bytes inserted, deleted and
//! duplicated, ranges spliced), so each target keeps building, keeps running and
//! finds nothing on inputs close to real ones. A target that panics fails its test;
//! the input is written under Cargo's test temporary directory to replay it.
//!
//! This is not fuzzing: no coverage guides it and it stops after a fixed count.
//! `scripts/fuzz TARGET SECONDS` runs a target under AFL++.

use std::collections::BTreeSet;
use std::fs;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use culvert_fuzz::{TARGETS, Target};

/// Mutated inputs per target.
const MUTATIONS: usize = 3000;

/// The largest a seed corpus may grow, in bytes.
const MAX_CORPUS_BYTES: u64 = 200 * 1024;

fn fuzz_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A tiny deterministic PRNG (xorshift64).
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> Self {
        Self(seed | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `bound` (0 when `bound` is 0).
    fn below(&mut self, bound: usize) -> usize {
        if bound == 0 {
            return 0;
        }
        (self.next() % bound as u64) as usize
    }
}

/// Bytes that often change what a parser does.
const INTERESTING: &[u8] = b"\0\r\n :;,=/?%*-\t\x7f\x80\xff0179aAfFzZ{}[]\"'#@";

/// One to four random edits of `input`, taking pieces of `seeds` to splice.
fn mutate(input: &mut Vec<u8>, seeds: &[Vec<u8>], rng: &mut XorShift) {
    for _ in 0..=rng.below(4) {
        let len = input.len();
        match rng.below(6) {
            0 if len > 0 => {
                let at = rng.below(len);
                input[at] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let at = rng.below(len);
                input[at] = INTERESTING[rng.below(INTERESTING.len())];
            }
            2 => {
                let at = rng.below(len + 1);
                let byte = if rng.below(2) == 0 {
                    INTERESTING[rng.below(INTERESTING.len())]
                } else {
                    rng.next() as u8
                };
                input.insert(at, byte);
            }
            3 if len > 0 => {
                let at = rng.below(len);
                let end = (at + 1 + rng.below(8)).min(len);
                input.drain(at..end);
            }
            4 if len > 0 => {
                let at = rng.below(len);
                let end = (at + 1 + rng.below(16)).min(len);
                let piece = input[at..end].to_vec();
                let to = rng.below(len + 1);
                input.splice(to..to, piece);
            }
            _ => {
                let other = &seeds[rng.below(seeds.len())];
                let at = rng.below(other.len());
                let end = (at + 1 + rng.below(32)).min(other.len());
                let to = rng.below(len + 1);
                input.splice(to..to, other[at..end].iter().copied());
            }
        }
    }
}

/// The seeds of `target`, sorted by file name.
fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = fuzz_dir().join("corpus").join(target);
    let mut seeds: Vec<(PathBuf, Vec<u8>)> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.expect("corpus entry").path();
            let bytes = fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (path, bytes)
        })
        .collect();
    seeds.sort();
    seeds
}

/// The message of a caught panic.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_default()
}

/// Runs `target` on `input`. A panic saves the input and fails naming it.
fn check(name: &str, target: Target, input: &[u8], what: &str) {
    let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| target(input))) else {
        return;
    };
    let message = panic_message(payload.as_ref());
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-smoke");
    let saved = dir.join(format!("{name}-crash"));
    let written = fs::create_dir_all(&dir).and_then(|()| fs::write(&saved, input));
    panic!(
        "target {name} panicked on {what}: {message} (input {}: {:?})",
        match written {
            Ok(()) => format!("saved at {}", saved.display()),
            Err(e) => format!("not saved: {e}"),
        },
        String::from_utf8_lossy(input)
    );
}

/// Every seed, then `MUTATIONS` mutated inputs, through the target called `name`.
fn smoke(name: &str) {
    let (_, target) = TARGETS
        .iter()
        .find(|(known, _)| *known == name)
        .unwrap_or_else(|| panic!("no target {name}"));
    let seeds = corpus(name);
    assert!(!seeds.is_empty(), "target {name} has no seeds");
    for (path, seed) in &seeds {
        check(name, *target, seed, &path.display().to_string());
    }
    let seeds: Vec<Vec<u8>> = seeds.into_iter().map(|(_, bytes)| bytes).collect();
    let name_hash = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let mut rng = XorShift::new(name_hash);
    for round in 0..MUTATIONS {
        let mut input = seeds[rng.below(seeds.len())].clone();
        mutate(&mut input, &seeds, &mut rng);
        check(name, *target, &input, &format!("mutation {round}"));
    }
}

macro_rules! smoke_tests {
    ($($target:ident),* $(,)?) => {
        /// The targets with a smoke test here.
        const SMOKED: &[&str] = &[$(stringify!($target)),*];
        $(
            #[test]
            fn $target() {
                smoke(stringify!($target));
            }
        )*
    };
}

smoke_tests!(
    request_head,
    response_head,
    body,
    head_round_trip,
    capnp,
    tunnel_token,
    client_hello,
    manifests,
    data_plane_config,
    dns_reply,
);

#[test]
fn every_target_has_a_smoke_test_a_corpus_and_an_afl_binary() {
    let targets: BTreeSet<&str> = TARGETS.iter().map(|(name, _)| *name).collect();
    assert_eq!(targets.len(), TARGETS.len(), "target names repeat");
    assert_eq!(
        SMOKED.iter().copied().collect::<BTreeSet<_>>(),
        targets,
        "smoke tests"
    );

    let manifest = fs::read_to_string(fuzz_dir().join("afl/Cargo.toml")).expect("afl manifest");
    let binaries: BTreeSet<&str> = manifest
        .lines()
        .filter_map(|line| line.strip_prefix("name = \""))
        .filter_map(|rest| rest.strip_suffix('"'))
        .filter(|name| *name != "culvert-fuzz-afl")
        .collect();
    assert_eq!(binaries, targets, "[[bin]]s of bench/fuzz/afl/Cargo.toml");
    for name in &targets {
        let source = fuzz_dir().join(format!("afl/src/bin/{name}.rs"));
        let text = fs::read_to_string(&source).expect("afl binary source");
        assert!(
            text.contains(&format!("culvert_fuzz::{name}(")),
            "{} does not fuzz {name}",
            source.display()
        );
    }

    let corpora: BTreeSet<String> = fs::read_dir(fuzz_dir().join("corpus"))
        .expect("bench/fuzz/corpus")
        .map(|entry| {
            entry
                .expect("corpus entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(
        corpora.iter().map(String::as_str).collect::<BTreeSet<_>>(),
        targets,
        "bench/fuzz/corpus/"
    );
    for name in &targets {
        let bytes: u64 = corpus(name).iter().map(|(_, seed)| seed.len() as u64).sum();
        assert!(
            bytes <= MAX_CORPUS_BYTES,
            "the {name} corpus holds {bytes} bytes; keep it under {MAX_CORPUS_BYTES}"
        );
    }
}
