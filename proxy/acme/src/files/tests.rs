use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use super::*;

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("culvert-acme-files-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    dir
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn replaces_the_file_with_the_requested_mode_and_leaves_no_temporary() {
    let dir = scratch("replace");
    create_dir(&dir.join("nested")).unwrap();
    assert_eq!(mode(&dir.join("nested")), 0o700);

    let path = dir.join("nested/tls.key");
    write_atomic(&path, b"first", PRIVATE).unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"first");
    assert_eq!(mode(&path), 0o600);

    write_atomic(&path, b"second, longer", PUBLIC).unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"second, longer");
    assert_eq!(mode(&path), 0o644);

    let entries: Vec<_> = fs::read_dir(dir.join("nested"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(entries, ["tls.key"]);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn reports_a_missing_file_as_none_and_a_failed_write_as_an_error() {
    let dir = scratch("missing");
    assert_eq!(read_if_present(&dir.join("absent")).unwrap(), None);
    let err = write_atomic(&dir.join("no-such-dir/file"), b"x", PUBLIC).unwrap_err();
    assert!(err.to_string().starts_with("writing"), "{err}");
}

#[test]
fn a_reader_polling_during_rewrites_sees_only_whole_files() {
    let dir = scratch("poll");
    create_dir(&dir).unwrap();
    let path = dir.join("tls.crt");
    let small = vec![b'a'; 10];
    let large = vec![b'b'; 256 * 1024];
    write_atomic(&path, &small, PUBLIC).unwrap();

    let reader_path = path.clone();
    let (small_copy, large_copy) = (small.clone(), large.clone());
    let reader = std::thread::spawn(move || {
        for _ in 0..2_000 {
            let seen = fs::read(&reader_path).unwrap();
            assert!(
                seen == small_copy || seen == large_copy,
                "torn read of {} bytes",
                seen.len()
            );
        }
    });
    for round in 0..200 {
        let bytes = if round % 2 == 0 { &large } else { &small };
        write_atomic(&path, bytes, PUBLIC).unwrap();
    }
    reader.join().unwrap();
    fs::remove_dir_all(&dir).unwrap();
}
