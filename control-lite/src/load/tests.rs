use super::*;
use serde::Deserialize;
use std::sync::atomic::{AtomicUsize, Ordering};

fn names(loaded: &Loaded) -> Vec<(usize, &str)> {
    loaded
        .documents
        .iter()
        .map(|d| (d.source.index, d.name()))
        .collect()
}

/// A directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("culvert-load-{tag}-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).unwrap();
        Self(path)
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.0.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

const NS: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ";

#[test]
fn multi_document_yaml_survives_a_broken_middle_document() {
    let text = format!(
        "# leading comment\n{NS}a\n---\n{NS}[broken\n---\n# only a comment\n---\n{NS}c\n---\nnull\n--- {{apiVersion: v1, kind: Namespace, metadata: {{name: e}}}}\n"
    );
    let loaded = load_str(&text, Path::new("m.yaml"));
    assert_eq!(names(&loaded), [(0, "a"), (3, "c"), (5, "e")]);
    assert_eq!(loaded.errors.len(), 1, "{:?}", loaded.errors);
    let Error::Yaml { at, line, .. } = &loaded.errors[0] else {
        panic!("{:?}", loaded.errors[0]);
    };
    assert_eq!(at.to_string(), "m.yaml#1");
    // The broken flow sequence opens on line 10 of the file; the parser reports a line
    // at or after it, counted from the start of the file, not of the document.
    assert!(line.is_some_and(|line| line >= 10), "{line:?}");
    let message = loaded.errors[0].to_string();
    assert!(message.starts_with("m.yaml#1: invalid YAML: "), "{message}");
    assert!(message.contains("line 10"), "{message}");
}

#[test]
fn yaml_document_counting_matches_the_parser() {
    // No leading `---`: the first document is implicit.
    let loaded = load_str(&format!("{NS}a\n---\n{NS}b\n"), Path::new("x.yml"));
    assert_eq!(names(&loaded), [(0, "a"), (1, "b")]);
    // A leading `---` after comments and a directive opens document 0.
    let loaded = load_str(
        &format!("# c\n%YAML 1.2\n---\n{NS}a\n---\n---\n{NS}c\n"),
        Path::new("x.yml"),
    );
    assert_eq!(names(&loaded), [(0, "a"), (2, "c")]);
    assert!(loaded.is_clean(), "{:?}", loaded.errors);
    // `...` ends a document; a bare document may follow.
    let loaded = load_str(
        &format!("{NS}a\n...\n# gap\n{NS}b\n...\n"),
        Path::new("x.yml"),
    );
    assert_eq!(names(&loaded), [(0, "a"), (1, "b")]);
    // CRLF line ends and a byte-order mark.
    let crlf = format!("\u{feff}{NS}a\n---\n{NS}b\n").replace('\n', "\r\n");
    let loaded = load_str(&crlf, Path::new("x.yml"));
    assert_eq!(names(&loaded), [(0, "a"), (1, "b")]);
    // A marker must stand alone: `----` and `---x` are content.
    assert!(is_marker("---", "---"));
    assert!(is_marker("--- |\n", "---"));
    assert!(is_marker("...\r\n", "..."));
    assert!(!is_marker("----\n", "---"));
    assert!(!is_marker("---x\n", "---"));
    assert!(!is_marker(" ---\n", "---"));
}

#[test]
fn documents_without_identity_are_reported() {
    let text = "\
apiVersion: v1
kind: Namespace
metadata: {}
---
kind: Namespace
metadata: {name: x}
---
apiVersion: v1
metadata: {name: x}
---
apiVersion: v1
kind: \"\"
metadata: {name: x}
---
just a string
---
- a
- list
---
apiVersion: v1
kind: Secret
metadata: {name: ok, namespace: ns}
---
a: !tagged 1
";
    let loaded = load_str(text, Path::new("bad.yaml"));
    assert_eq!(names(&loaded), [(6, "ok")]);
    assert_eq!(loaded.documents[0].namespace(), Some("ns"));
    let messages: Vec<String> = loaded.errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages[..6],
        [
            "bad.yaml#0: metadata.name is missing, empty or not a string",
            "bad.yaml#1: apiVersion is missing, empty or not a string",
            "bad.yaml#2: kind is missing, empty or not a string",
            "bad.yaml#3: kind is missing, empty or not a string",
            "bad.yaml#4: document is a string, not a mapping",
            "bad.yaml#5: document is a sequence, not a mapping",
        ]
    );
    assert!(
        messages[6].starts_with("bad.yaml#7: invalid YAML: "),
        "{}",
        messages[6]
    );
    assert_eq!(messages.len(), 7);
}

#[test]
fn json_object_array_and_lists() {
    let obj = r#"{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "solo"}}"#;
    let loaded = load_str(obj, Path::new("one.json"));
    assert_eq!(names(&loaded), [(0, "solo")]);

    let list = r#"{"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}},
        null,
        3,
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "d"}}
    ]}"#;
    let loaded = load_str(list, Path::new("list.json"));
    assert_eq!(names(&loaded), [(0, "a"), (3, "d")]);
    assert_eq!(loaded.errors.len(), 1);
    assert_eq!(
        loaded.errors[0].to_string(),
        "list.json#2: document is a number, not a mapping"
    );

    let typed = r#"{"apiVersion": "v1", "kind": "ServiceList", "metadata": {}, "items": [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}
    ]}"#;
    assert_eq!(names(&load_str(typed, Path::new("svc.JSON"))), [(0, "s")]);

    let array = r#"[{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}},
                    {"kind": "Namespace", "metadata": {"name": "y"}}]"#;
    let loaded = load_str(array, Path::new("arr.json"));
    assert_eq!(names(&loaded), [(0, "x")]);
    assert_eq!(
        loaded.errors[0].to_string(),
        "arr.json#1: apiVersion is missing, empty or not a string"
    );
}

#[test]
fn broken_json_loses_the_file_and_says_where() {
    let loaded = load_str(
        "[\n  {\"apiVersion\": \"v1\",\n  oops\n]",
        Path::new("b.json"),
    );
    assert!(loaded.documents.is_empty());
    let Error::Json { source, .. } = &loaded.errors[0] else {
        panic!()
    };
    assert_eq!(source.line(), 3);
    let message = loaded.errors[0].to_string();
    assert!(message.starts_with("b.json: invalid JSON: "), "{message}");
    assert!(
        message.ends_with("nothing in this file was loaded"),
        "{message}"
    );
}

#[test]
fn directory_walk_is_recursive_sorted_and_skips_hidden_files() {
    let dir = TempDir::new("walk");
    let doc = |name: &str| format!("{NS}{name}\n");
    dir.write("c.yaml", &doc("c"));
    dir.write("b/x.yml", &doc("b-x"));
    dir.write(
        "a/z.json",
        r#"{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a-z"}}"#,
    );
    dir.write(
        "a/sub/y.yaml",
        &format!("{}---\n{}", doc("a-sub-y-0"), doc("a-sub-y-1")),
    );
    dir.write("a/sub/deeper/w.YAML", &doc("a-sub-deeper-w"));
    dir.write(".hidden.yaml", &doc("hidden"));
    dir.write(".git/config.yaml", &doc("in-hidden-dir"));
    dir.write("a/notes.txt", &doc("txt"));
    dir.write("a/broken.yaml", "kind: [\n");

    let loaded = load_path(&dir.0);
    let found: Vec<(String, usize, &str)> = loaded
        .documents
        .iter()
        .map(|d| {
            let rel = d.source.file.strip_prefix(&dir.0).unwrap();
            (
                rel.to_string_lossy().replace('\\', "/"),
                d.source.index,
                d.name(),
            )
        })
        .collect();
    let want = [
        ("a/sub/deeper/w.YAML", 0, "a-sub-deeper-w"),
        ("a/sub/y.yaml", 0, "a-sub-y-0"),
        ("a/sub/y.yaml", 1, "a-sub-y-1"),
        ("a/z.json", 0, "a-z"),
        ("b/x.yml", 0, "b-x"),
        ("c.yaml", 0, "c"),
    ];
    let want: Vec<(String, usize, &str)> = want
        .iter()
        .map(|(f, i, n)| ((*f).to_owned(), *i, *n))
        .collect();
    assert_eq!(found, want);
    assert_eq!(loaded.errors.len(), 1, "{:?}", loaded.errors);
    assert!(
        loaded.errors[0]
            .to_string()
            .contains("broken.yaml#0: invalid YAML")
    );

    // A file named directly is read whatever its extension.
    let direct = load_path(&dir.0.join("a/notes.txt"));
    assert_eq!(names(&direct), [(0, "txt")]);
}

#[test]
fn missing_path_is_a_read_error() {
    let loaded = load_path(Path::new("/nonexistent/culvert/manifests"));
    assert!(loaded.documents.is_empty());
    assert!(matches!(&loaded.errors[..], [Error::Read { .. }]));
    assert!(
        loaded.errors[0]
            .to_string()
            .starts_with("/nonexistent/culvert/manifests: cannot read: ")
    );
}

#[test]
fn the_project_crds_load_cleanly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds/gateway-api");
    let loaded = load_path(&dir);
    assert!(loaded.is_clean(), "{:?}", loaded.errors);
    assert!(loaded.documents.len() >= 20, "{}", loaded.documents.len());
    assert!(
        loaded
            .documents
            .iter()
            .any(|d| d.kind() == "CustomResourceDefinition"
                && d.name() == "httproutes.gateway.networking.k8s.io")
    );
}

#[derive(Debug, Deserialize)]
#[allow(dead_code, reason = "only decoded")]
struct Gateway {
    spec: GatewaySpec,
}

#[derive(Debug, Deserialize)]
#[allow(dead_code, reason = "only decoded")]
struct GatewaySpec {
    listeners: Vec<Listener>,
}

#[derive(Debug, Deserialize)]
#[allow(dead_code, reason = "only decoded")]
struct Listener {
    name: String,
    port: u16,
}

#[test]
fn decode_names_the_nested_field() {
    let text = "\
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  listeners:
  - {name: a, port: 80}
  - {name: b, port: 443}
  - {name: c, port: eighty}
";
    let loaded = load_str(text, Path::new("gw.yaml"));
    let err = decode::<Gateway>(&loaded.documents[0]).unwrap_err();
    let Error::Decode { path, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(path, "spec.listeners[2].port");
    let message = err.to_string();
    assert!(
        message.starts_with("gw.yaml#0 (Gateway infra/gw): spec.listeners[2].port: invalid type"),
        "{message}"
    );

    let ok = load_str(&text.replace("eighty", "8080"), Path::new("gw.yaml"));
    let gateway: Gateway = decode(&ok.documents[0]).unwrap();
    assert_eq!(gateway.spec.listeners[2].port, 8080);
}
