//! A hash map for the request path whose keys come from our own configuration
//! (endpoint addresses, route and listener names), never from a client: FNV-1a
//! instead of SipHash, because flooding resistance buys nothing for such keys and
//! SipHash costs several hundred instructions per lookup.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` hashed with FNV-1a. Build it with `FastMap::default()`.
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<Fnv1a>>;

/// The 64-bit FNV-1a hash.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv1a {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::hash::Hasher;

    use super::{FastMap, Fnv1a};

    #[test]
    fn matches_the_published_fnv1a_vectors() {
        for (input, expected) in [
            (&b""[..], 0xcbf2_9ce4_8422_2325),
            (b"a", 0xaf63_dc4c_8601_ec8c),
            (b"foobar", 0x8594_4171_f739_67e8),
        ] {
            let mut hasher = Fnv1a::default();
            hasher.write(input);
            assert_eq!(hasher.finish(), expected);
        }
    }

    #[test]
    fn works_as_a_map() {
        let mut map: FastMap<&str, u32> = FastMap::default();
        map.insert("ns/a", 1);
        map.insert("ns/b", 2);
        assert_eq!(map.get("ns/a"), Some(&1));
        assert_eq!(map.get("ns/b"), Some(&2));
        assert_eq!(map.get("ns/c"), None);
    }
}
