use super::*;

#[test]
fn normal_paths_are_borrowed() {
    for path in [
        "/",
        "/foo",
        "/foo/bar/",
        "/a%2Fb",
        "/caf%C3%A9",
        "/x:y@z!$&'()*+,;=",
        "/v1.2/file.tar.gz",
        "/a..b/.c",
    ] {
        assert!(
            matches!(normalize_path(path), Ok(Cow::Borrowed(_))),
            "{path}"
        );
    }
}

#[test]
fn escapes_of_unreserved_characters_are_decoded() {
    assert_eq!(normalize_path("/%7Euser/%41%62c").unwrap(), "/~user/Abc");
    assert_eq!(normalize_path("/caf%c3%a9").unwrap(), "/caf%C3%A9");
    assert_eq!(normalize_path("/a%2fb").unwrap(), "/a%2Fb");
}

#[test]
fn dot_segments_are_removed() {
    let cases = [
        ("/a/./b", "/a/b"),
        ("/a/../b", "/b"),
        ("/../../a", "/a"),
        ("/a/b/..", "/a/"),
        ("/a/b/.", "/a/b/"),
        ("/a/%2E%2E/b", "/b"),
        ("/..", "/"),
        ("/.", "/"),
        ("/a/..b/c", "/a/..b/c"),
        ("/a/%2e/b", "/a/b"),
        ("/a/.%2E/b", "/b"),
    ];
    for (input, want) in cases {
        assert_eq!(normalize_path(input).unwrap(), want, "{input}");
    }
}

#[test]
fn only_rfc_3986_path_characters_pass_unescaped() {
    let allowed =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=:@/";
    for byte in 0..=255u8 {
        let path = [b'/', b'a', byte, b'b'];
        let verdict = std::str::from_utf8(&path).map_or(Err(PathError::BadCharacter), |path| {
            normalize_path(path).map(|_| ())
        });
        let want = if byte == b'%' {
            Err(PathError::BadEscape)
        } else if allowed.as_bytes().contains(&byte) {
            Ok(())
        } else {
            Err(PathError::BadCharacter)
        };
        assert_eq!(verdict, want, "byte {byte:#04x}");
    }
}

#[test]
fn malformed_paths_are_refused() {
    assert_eq!(normalize_path("foo"), Err(PathError::NotAbsolute));
    assert_eq!(normalize_path(""), Err(PathError::NotAbsolute));
    assert_eq!(normalize_path("/a%2"), Err(PathError::BadEscape));
    assert_eq!(normalize_path("/a%zz"), Err(PathError::BadEscape));
    assert_eq!(normalize_path("/a b"), Err(PathError::BadCharacter));
    assert_eq!(normalize_path("/a\"b"), Err(PathError::BadCharacter));
    assert_eq!(normalize_path("/é"), Err(PathError::BadCharacter));
}

#[test]
fn config_paths_follow_gateway_api_validation() {
    assert_eq!(normalize_config_path("/caf%c3%a9").unwrap(), "/caf%C3%A9");
    assert_eq!(normalize_config_path("/%7Efoo").unwrap(), "/~foo");
    for bad in [
        "foo",
        "/a//b",
        "/a/./b",
        "/a/../b",
        "/a?b",
        "/a#b",
        "/a b",
        "/a/%2e%2E/b",
    ] {
        assert!(normalize_config_path(bad).is_err(), "{bad:?} accepted");
    }
}

#[test]
fn query_is_split_off() {
    assert_eq!(split_query("/a?b=c?d"), ("/a", Some("b=c?d")));
    assert_eq!(split_query("/a"), ("/a", None));
}

fn longest(trie: &SegmentTrie<&'static str>, path: &str) -> Vec<(&'static str, usize)> {
    let mut seen = Vec::new();
    trie.find_longest(path, |value, covered| {
        seen.push((*value, covered));
        None::<()>
    });
    seen
}

#[test]
fn prefixes_respect_segment_boundaries() {
    let mut trie = TrieBuilder::default();
    *trie.entry("/", || "") = "root";
    *trie.entry("/foo", || "") = "foo";
    *trie.entry("/foo/bar/", || "") = "foo/bar";
    let trie = trie.freeze();
    assert_eq!(
        longest(&trie, "/foo/bar/baz"),
        [("foo/bar", 8), ("foo", 4), ("root", 0)]
    );
    assert_eq!(
        longest(&trie, "/foo/bar"),
        [("foo/bar", 8), ("foo", 4), ("root", 0)]
    );
    assert_eq!(longest(&trie, "/foo/"), [("foo", 4), ("root", 0)]);
    assert_eq!(longest(&trie, "/foo"), [("foo", 4), ("root", 0)]);
    assert_eq!(longest(&trie, "/foobar"), [("root", 0)]);
    assert_eq!(longest(&trie, "/fo"), [("root", 0)]);
    assert_eq!(longest(&trie, "/"), [("root", 0)]);
}

#[test]
fn trailing_slash_of_a_prefix_is_ignored() {
    let mut trie = TrieBuilder::default();
    *trie.entry("/foo/", || 0) += 1;
    *trie.entry("/foo", || 0) += 1;
    let trie = trie.freeze();
    assert_eq!(longest_counts(&trie, "/foo"), [2]);
}

fn longest_counts(trie: &SegmentTrie<i32>, path: &str) -> Vec<i32> {
    let mut seen = Vec::new();
    trie.find_longest(path, |value, _| {
        seen.push(*value);
        None::<()>
    });
    seen
}

#[test]
fn search_stops_at_the_first_accepted_prefix() {
    let mut trie = TrieBuilder::default();
    *trie.entry("/", || 0) = 1;
    *trie.entry("/a", || 0) = 2;
    let trie = trie.freeze();
    let first = trie.find_longest("/a/b", |value, _| (*value == 2).then_some(*value));
    assert_eq!(first, Some(2));
    let root = trie.find_longest("/a/b", |value, _| (*value == 1).then_some(*value));
    assert_eq!(root, Some(1));
}

#[test]
fn merged_chains_match_whole_segments_only() {
    let mut trie = TrieBuilder::default();
    *trie.entry("/api/v1/users", || "") = "users";
    *trie.entry("/api/v2", || "") = "v2";
    *trie.entry("/", || "") = "root";
    let trie = trie.freeze();
    assert_eq!(
        longest(&trie, "/api/v1/users/7"),
        [("users", 13), ("root", 0)]
    );
    assert_eq!(
        longest(&trie, "/api/v1/users"),
        [("users", 13), ("root", 0)]
    );
    assert_eq!(longest(&trie, "/api/v1/usersx"), [("root", 0)]);
    assert_eq!(longest(&trie, "/api/v1"), [("root", 0)]);
    assert_eq!(longest(&trie, "/api/v2/x"), [("v2", 7), ("root", 0)]);
    assert_eq!(longest(&trie, "/api"), [("root", 0)]);
}
