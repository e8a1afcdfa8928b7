//! Kubernetes manifests from disk: a file or a directory tree of YAML (many documents
//! per file) and JSON (one object, an array, or a `*List` with `items`) becomes raw
//! [`Document`]s, each tagged with the [`Source`] (file and document index) it came from.
//!
//! Loading never stops at a broken document. [`load_path`] and [`load_str`] return every
//! valid document *and* one [`Error`] per broken one, so a typo in one object cannot hide
//! its neighbours. A document is valid here when it is a mapping with `apiVersion`, `kind`
//! and `metadata.name`; what the object means is the caller's business, and [`decode`]
//! types it with errors that name the offending field path (`spec.listeners[2].port`).
//!
//! This module reads files and nothing else: no Gateway API semantics, no network.
//! Start at [`load_path`].

use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::HashSet;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Where a document came from: its file and its position in that file.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Source {
    /// The file, as it was reached from the path given to [`load_path`].
    pub file: PathBuf,
    /// Position of the document in the file, from 0. YAML: the document in the `---`
    /// stream (empty and `null` documents count). JSON: the element of the top-level
    /// array or of the `List`'s `items`; 0 for a single object.
    pub index: usize,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}", self.file.display(), self.index)
    }
}

/// One Kubernetes object as loaded: a JSON mapping that has a non-empty `apiVersion`,
/// `kind` and `metadata.name`.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// Where it came from.
    pub source: Source,
    /// The object, as written (YAML is converted to the JSON data model).
    pub value: Value,
}

impl Document {
    /// `apiVersion`.
    pub fn api_version(&self) -> &str {
        self.str_at(&["apiVersion"]).unwrap_or_default()
    }

    /// `kind`.
    pub fn kind(&self) -> &str {
        self.str_at(&["kind"]).unwrap_or_default()
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        self.str_at(&["metadata", "name"]).unwrap_or_default()
    }

    /// `metadata.namespace`, if the object names one.
    pub fn namespace(&self) -> Option<&str> {
        self.str_at(&["metadata", "namespace"])
    }

    fn str_at(&self, path: &[&str]) -> Option<&str> {
        str_at(&self.value, path)
    }
}

/// What loading produced: every valid document, in file order then document order, and
/// one error per file or document that could not be loaded.
#[derive(Debug, Default)]
pub struct Loaded {
    /// The valid documents.
    pub documents: Vec<Document>,
    /// What went wrong, in the order it was met.
    pub errors: Vec<Error>,
}

impl Loaded {
    /// Whether nothing went wrong.
    pub fn is_clean(&self) -> bool {
        self.errors.is_empty()
    }

    /// Appends everything `other` holds.
    pub fn append(&mut self, mut other: Loaded) {
        self.documents.append(&mut other.documents);
        self.errors.append(&mut other.errors);
    }
}

/// Why a file or a document could not be loaded or decoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file or directory could not be read (missing, unreadable, not UTF-8).
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: io::Error,
    },
    /// A YAML document is malformed or does not fit the JSON data model (a tagged
    /// value, a non-string key). Only this document is lost: documents are separated
    /// at `---` lines before parsing, so the rest of the file still loads.
    #[error("{at}: invalid YAML: {message}")]
    Yaml {
        /// The document.
        at: Source,
        /// Line of the problem in the file, from 1, when known.
        line: Option<usize>,
        /// Column of the problem, from 1, when known.
        column: Option<usize>,
        /// What the YAML parser said, with lines counted from the start of the file.
        message: String,
    },
    /// A JSON file is malformed; nothing in it was loaded.
    #[error("{}: invalid JSON: {source}; nothing in this file was loaded", file.display())]
    Json {
        /// The file.
        file: PathBuf,
        /// The parser error; it carries the line and column.
        #[source]
        source: serde_json::Error,
    },
    /// A document is a scalar or a sequence, not an object.
    #[error("{at}: document is {found}, not a mapping")]
    NotAMapping {
        /// The document.
        at: Source,
        /// What it is instead (`"a string"`, `"a sequence"`, ...).
        found: &'static str,
    },
    /// `apiVersion`, `kind` or `metadata.name` is absent, empty or not a string.
    #[error("{at}: {field} is missing, empty or not a string")]
    MissingField {
        /// The document.
        at: Source,
        /// The field (`apiVersion`, `kind` or `metadata.name`).
        field: &'static str,
    },
    /// A document does not fit the type [`decode`] was asked for.
    #[error("{at} ({object}): {path}: {message}")]
    Decode {
        /// The document.
        at: Source,
        /// The object, as `Kind namespace/name`.
        object: String,
        /// Path of the offending field (`spec.listeners[2].port`; `.` for the object).
        path: String,
        /// What is wrong with it.
        message: String,
    },
}

/// The loader's error under the name used by callers that import it bare.
pub type LoadError = Error;

/// Loads a file, or every manifest under a directory.
///
/// A directory is walked recursively; files ending in `.yaml`, `.yml` or `.json`
/// (any case) are read in path order, and entries whose name starts with `.` are
/// skipped (this also skips the `..data` links of a mounted ConfigMap). Symbolic links
/// are followed, each directory is visited once. A file named directly is read whatever
/// its extension, as JSON when it ends in `.json` and as YAML otherwise.
pub fn load_path(path: &Path) -> Loaded {
    let mut loaded = Loaded::default();
    match fs::metadata(path) {
        Err(source) => loaded.errors.push(Error::Read {
            path: path.to_owned(),
            source,
        }),
        Ok(meta) if meta.is_dir() => {
            let mut files = Vec::new();
            let mut visited = HashSet::new();
            walk(path, &mut files, &mut visited, &mut loaded.errors);
            files.sort();
            for file in files {
                load_file(&file, &mut loaded);
            }
        }
        Ok(_) => load_file(path, &mut loaded),
    }
    loaded
}

/// Loads the manifests in `text`, read from `file` (used for [`Source`]s and to pick
/// the format: JSON when the name ends in `.json`, YAML otherwise).
pub fn load_str(text: &str, file: &Path) -> Loaded {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut loaded = Loaded::default();
    if has_extension(file, &["json"]) {
        load_json(text, file, &mut loaded);
    } else {
        load_yaml(text, file, &mut loaded);
    }
    loaded
}

/// Types a document, naming the field path when it does not fit.
pub fn decode<T: DeserializeOwned>(document: &Document) -> Result<T, Error> {
    serde_path_to_error::deserialize(&document.value).map_err(|err| Error::Decode {
        at: document.source.clone(),
        object: describe(document),
        path: err.path().to_string(),
        message: err.into_inner().to_string(),
    })
}

fn describe(document: &Document) -> String {
    match document.namespace() {
        Some(namespace) => format!("{} {namespace}/{}", document.kind(), document.name()),
        None => format!("{} {}", document.kind(), document.name()),
    }
}

fn load_file(file: &Path, loaded: &mut Loaded) {
    match fs::read_to_string(file) {
        Ok(text) => loaded.append(load_str(&text, file)),
        Err(source) => loaded.errors.push(Error::Read {
            path: file.to_owned(),
            source,
        }),
    }
}

/// Collects manifest files under `dir`. `visited` holds canonical directory paths so a
/// symbolic link loop is walked once.
fn walk(
    dir: &Path,
    files: &mut Vec<PathBuf>,
    visited: &mut HashSet<PathBuf>,
    errors: &mut Vec<Error>,
) {
    let canonical = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned());
    if !visited.insert(canonical) {
        return;
    }
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(source) => {
            errors.push(Error::Read {
                path: dir.to_owned(),
                source,
            });
            return;
        }
    };
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            Err(source) => {
                errors.push(Error::Read {
                    path: dir.to_owned(),
                    source,
                });
                continue;
            }
        };
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let path = entry.path();
        let manifest = has_extension(&path, &["yaml", "yml", "json"]);
        // `metadata` follows symbolic links; `DirEntry::metadata` would not.
        match fs::metadata(&path) {
            Ok(meta) if meta.is_dir() => walk(&path, files, visited, errors),
            Ok(meta) if meta.is_file() && manifest => files.push(path),
            Ok(_) => {}
            // A dangling link: worth a word only if it looks like a manifest.
            Err(source) if manifest => errors.push(Error::Read { path, source }),
            Err(_) => {}
        }
    }
}

fn has_extension(path: &Path, extensions: &[&str]) -> bool {
    path.extension()
        .and_then(|ext| ext.to_str())
        .is_some_and(|ext| extensions.iter().any(|want| ext.eq_ignore_ascii_case(want)))
}

fn load_json(text: &str, file: &Path, loaded: &mut Loaded) {
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(source) => {
            loaded.errors.push(Error::Json {
                file: file.to_owned(),
                source,
            });
            return;
        }
    };
    let items = match value {
        Value::Array(items) => items,
        Value::Object(mut map) if is_list(&map) => match map.remove("items") {
            Some(Value::Array(items)) => items,
            _ => Vec::new(),
        },
        other => vec![other],
    };
    for (index, value) in items.into_iter().enumerate() {
        accept(
            Source {
                file: file.to_owned(),
                index,
            },
            value,
            loaded,
        );
    }
}

/// A Kubernetes list (`List`, `ServiceList`, ...): a `*List` kind with an `items` array.
fn is_list(map: &serde_json::Map<String, Value>) -> bool {
    map.get("kind")
        .and_then(Value::as_str)
        .is_some_and(|kind| kind.ends_with("List"))
        && map.get("items").is_some_and(Value::is_array)
}

fn load_yaml(text: &str, file: &Path, loaded: &mut Loaded) {
    for (index, chunk) in split_yaml(text).into_iter().enumerate() {
        let at = Source {
            file: file.to_owned(),
            index,
        };
        match serde_yaml_ng::from_str::<Value>(&text[chunk.start..chunk.end]) {
            Ok(value) => accept(at, value, loaded),
            Err(_) => {
                // Parse again behind blank lines so the parser counts lines from the start
                // of the file; only broken documents pay for this.
                let mut padded = "\n".repeat(chunk.first_line);
                padded.push_str(&text[chunk.start..chunk.end]);
                let err = match serde_yaml_ng::from_str::<Value>(&padded) {
                    Err(err) => err,
                    // Unreachable in practice: blank lines do not change a document.
                    Ok(value) => {
                        accept(at, value, loaded);
                        continue;
                    }
                };
                let location = err.location();
                loaded.errors.push(Error::Yaml {
                    at,
                    line: location.as_ref().map(|l| l.line()),
                    column: location.as_ref().map(|l| l.column()),
                    message: err.to_string(),
                });
            }
        }
    }
}

/// One YAML document of a stream: a byte range of the text and the line it starts on
/// (from 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Chunk {
    start: usize,
    end: usize,
    first_line: usize,
}

/// Splits a YAML stream into documents at `---` and `...` marker lines, so that a syntax
/// error in one document cannot take the rest of the stream with it (libyaml stops at
/// the first error).
///
/// Splitting on lines is sound because YAML forbids a line that starts with `---` or
/// `...` followed by a blank or the line end inside any document content. The chunks
/// count like the parser counts documents: a chunk that opens with `---` is a document
/// even when empty; text before the first `---` (or after a `...`) is one only when it
/// holds something besides blanks, comments and directives, and otherwise prefixes the
/// next document.
fn split_yaml(text: &str) -> Vec<Chunk> {
    let mut chunks = Vec::new();
    let mut current = Chunk {
        start: 0,
        end: 0,
        first_line: 0,
    };
    let mut explicit = false;
    let mut has_content = false;
    let mut offset = 0;
    for (line_no, line) in text.split_inclusive('\n').enumerate() {
        if is_marker(line, "---") {
            if explicit || has_content {
                chunks.push(Chunk {
                    end: offset,
                    ..current
                });
                current = Chunk {
                    start: offset,
                    end: 0,
                    first_line: line_no,
                };
            }
            explicit = true;
            has_content = false;
        } else if is_marker(line, "...") {
            if explicit || has_content {
                chunks.push(Chunk {
                    end: offset + line.len(),
                    ..current
                });
            }
            current = Chunk {
                start: offset + line.len(),
                end: 0,
                first_line: line_no + 1,
            };
            explicit = false;
            has_content = false;
        } else if !explicit && !has_content {
            let trimmed = line.trim();
            has_content =
                !(trimmed.is_empty() || trimmed.starts_with('#') || line.starts_with('%'));
        }
        offset += line.len();
    }
    if explicit || has_content {
        chunks.push(Chunk {
            end: text.len(),
            ..current
        });
    }
    chunks
}

fn is_marker(line: &str, marker: &str) -> bool {
    line.strip_prefix(marker)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n']))
}

/// Checks a parsed document and files it as a [`Document`] or an [`Error`]; `null`
/// documents are dropped silently.
fn accept(at: Source, value: Value, loaded: &mut Loaded) {
    let found = match &value {
        Value::Null => return,
        Value::Object(_) => None,
        Value::Bool(_) => Some("a boolean"),
        Value::Number(_) => Some("a number"),
        Value::String(_) => Some("a string"),
        Value::Array(_) => Some("a sequence"),
    };
    if let Some(found) = found {
        loaded.errors.push(Error::NotAMapping { at, found });
        return;
    }
    for (path, field) in [
        (&["apiVersion"][..], "apiVersion"),
        (&["kind"][..], "kind"),
        (&["metadata", "name"][..], "metadata.name"),
    ] {
        if str_at(&value, path).is_none_or(str::is_empty) {
            loaded.errors.push(Error::MissingField { at, field });
            return;
        }
    }
    loaded.documents.push(Document { source: at, value });
}

fn str_at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter()
        .try_fold(value, |value, key| value.get(key))?
        .as_str()
}

#[cfg(test)]
mod tests;
