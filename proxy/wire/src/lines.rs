//! Fields the proxy adds to a request, kept as HTTP/1.1 field lines. The
//! forwarding fields of every request are computed once; an HTTP/1.1 backend gets
//! them written straight after the request's own fields (which skip the names they
//! replace), so they are never inserted into the header map, hashed and formatted
//! again. Only when the fields must be in a map (an HTTP/2 backend, an upgrade, a
//! backend header filter) are they inserted there ([`FieldLines::insert_into`]).

use bytes::Bytes;
use http::header::{HeaderMap, HeaderName, HeaderValue};

/// Most fields one [`FieldLines`] holds.
const CAPACITY: usize = 4;

/// Field lines (`name: value` CRLF) that replace any fields of the same names.
#[derive(Debug, Clone, Default)]
pub struct FieldLines {
    bytes: Vec<u8>,
    /// Per line: where it starts, where its name ends, where it ends (CRLF
    /// excluded).
    lines: [(u16, u16, u16); CAPACITY],
    count: u8,
}

impl FieldLines {
    /// An empty set with room for `bytes` bytes of lines.
    pub fn with_capacity(bytes: usize) -> Self {
        Self {
            bytes: Vec::with_capacity(bytes),
            ..Self::default()
        }
    }

    /// Adds `name: value`, the value written by `write`. Refused (`false`, nothing
    /// added) when the set is full, when the lines would pass 64 KiB, or when the
    /// value is not a valid field value (a control character other than tab, which
    /// could split the head).
    pub fn push(&mut self, name: &HeaderName, write: impl FnOnce(&mut Vec<u8>)) -> bool {
        if usize::from(self.count) == CAPACITY {
            return false;
        }
        let start = self.bytes.len();
        self.bytes.extend_from_slice(name.as_str().as_bytes());
        let name_end = self.bytes.len();
        self.bytes.extend_from_slice(b": ");
        write(&mut self.bytes);
        let end = self.bytes.len();
        // A fold with no early exit, so it runs over many bytes per instruction.
        let invalid = self.bytes[name_end + 2..].iter().fold(false, |bad, &b| {
            bad | ((b < b' ' && b != b'\t') | (b == 0x7f))
        });
        let valid = !invalid;
        // `end` fitting means every offset before it does.
        match u16::try_from(end) {
            Ok(end) if valid => {
                self.bytes.extend_from_slice(b"\r\n");
                self.lines[usize::from(self.count)] = (start as u16, name_end as u16, end);
                self.count += 1;
                true
            }
            _ => {
                self.bytes.truncate(start);
                false
            }
        }
    }

    fn lines(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.lines[..usize::from(self.count)]
            .iter()
            .map(|&(start, name_end, end)| {
                let bytes = &self.bytes;
                (
                    &bytes[usize::from(start)..usize::from(name_end)],
                    // Past the ": ".
                    &bytes[usize::from(name_end) + 2..usize::from(end)],
                )
            })
    }

    /// Whether a line of this set replaces the fields called `name`.
    pub fn replaces(&self, name: &HeaderName) -> bool {
        let name = name.as_str().as_bytes();
        self.lines().any(|(line_name, _)| line_name == name)
    }

    /// The lines as they go on the wire, CRLFs included.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Puts the fields into `headers`, each replacing the fields of its name.
    pub fn insert_into(self, headers: &mut HeaderMap) {
        let lines = self.lines;
        let count = usize::from(self.count);
        let bytes = Bytes::from(self.bytes);
        for &(start, name_end, end) in &lines[..count] {
            let (start, name_end, end) =
                (usize::from(start), usize::from(name_end), usize::from(end));
            let name = HeaderName::from_bytes(&bytes[start..name_end]);
            let value = HeaderValue::from_maybe_shared(bytes.slice(name_end + 2..end));
            if let (Ok(name), Ok(value)) = (name, value) {
                headers.insert(name, value);
            }
        }
    }
}
