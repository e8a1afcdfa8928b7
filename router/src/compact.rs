//! [`InlineBytes`]: a byte string kept inside its owner when short (up to 30 bytes,
//! which covers most hostnames and path segments), so a lookup that compares keys
//! reads the bytes from the record it already has instead of chasing a pointer.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};

const INLINE: usize = 30;

/// A short byte string stored inline, a long one on the heap.
#[derive(Clone)]
pub(crate) enum InlineBytes {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl InlineBytes {
    pub(crate) fn new(text: &[u8]) -> Self {
        match u8::try_from(text.len()) {
            Ok(len) if text.len() <= INLINE => {
                let mut bytes = [0; INLINE];
                bytes[..text.len()].copy_from_slice(text);
                Self::Inline { len, bytes }
            }
            _ => Self::Heap(text.into()),
        }
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self {
            Self::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Self::Heap(bytes) => bytes,
        }
    }
}

impl Borrow<[u8]> for InlineBytes {
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PartialEq for InlineBytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for InlineBytes {}

impl Hash for InlineBytes {
    // Must hash exactly as `[u8]` does, so maps keyed by this type can be queried
    // with a plain `&[u8]`.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

impl std::fmt::Debug for InlineBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use foldhash::{HashMap, HashMapExt};

    #[test]
    fn short_and_long_values_compare_and_hash_as_bytes() {
        let short = InlineBytes::new(b"svc1.example.com");
        let long = InlineBytes::new(&[b'a'; 40]);
        assert!(matches!(short, InlineBytes::Inline { .. }));
        assert!(matches!(long, InlineBytes::Heap(_)));
        let mut map = HashMap::new();
        map.insert(short.clone(), 1);
        map.insert(long, 2);
        assert_eq!(map.get(&b"svc1.example.com"[..]), Some(&1));
        assert_eq!(map.get(&[b'a'; 40][..]), Some(&2));
        assert_eq!(map.get(&b"svc1.example.co"[..]), None);
        assert_eq!(InlineBytes::new(&[b'x'; 30]).as_bytes().len(), 30);
    }
}
