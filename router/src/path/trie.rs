//! [`SegmentTrie`]: `PathPrefix` lookup that respects segment boundaries. `/foo`
//! matches `/foo`, `/foo/` and `/foo/bar`, never `/foobar`; a prefix's trailing slash
//! is ignored. Built with [`TrieBuilder`], then frozen into one flat array in
//! breadth-first order: a node's children sit side by side and carry their label
//! inline, so a lookup walks one allocation and chases no pointers. Chains of nodes
//! that neither hold a value nor branch are merged into one multi-segment label
//! (`api/v1`), so a typical prefix costs one comparison, not one per segment.

use crate::compact::InlineBytes;
use std::collections::VecDeque;

/// Values keyed by path prefix, frozen for lookup.
#[derive(Debug)]
pub(crate) enum SegmentTrie<T> {
    /// The root and at most one prefix below it, held inline: the common shape of a
    /// host's prefixes costs no pointer to chase.
    Small {
        root: Option<T>,
        leaf: Option<(InlineBytes, T)>,
    },
    /// Anything else, as one flat array.
    Flat { nodes: Box<[FlatNode<T>]> },
}

#[derive(Debug)]
pub(crate) struct FlatNode<T> {
    label: InlineBytes,
    first_child: u32,
    child_count: u32,
    value: Option<T>,
}

impl<T> Default for SegmentTrie<T> {
    fn default() -> Self {
        TrieBuilder::default().freeze()
    }
}

/// A mutable trie, for building.
#[derive(Debug)]
pub(crate) struct TrieBuilder<T> {
    nodes: Vec<BuildNode<T>>,
}

#[derive(Debug)]
struct BuildNode<T> {
    /// Children sorted by segment.
    children: Vec<(Box<str>, u32)>,
    value: Option<T>,
}

impl<T> Default for TrieBuilder<T> {
    fn default() -> Self {
        Self {
            nodes: vec![BuildNode {
                children: Vec::new(),
                value: None,
            }],
        }
    }
}

/// The segments of a prefix, with the trailing slash ignored: `/` has none,
/// `/foo/bar/` has `foo` and `bar`.
fn prefix_segments(prefix: &str) -> impl Iterator<Item = &str> {
    let trimmed = prefix.strip_prefix('/').unwrap_or(prefix);
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    trimmed.split('/').filter(move |_| !trimmed.is_empty())
}

impl<T> TrieBuilder<T> {
    /// The value stored for `prefix`, inserting one made by `make` when absent.
    pub(crate) fn entry(&mut self, prefix: &str, make: impl FnOnce() -> T) -> &mut T {
        let mut node = 0usize;
        for segment in prefix_segments(prefix) {
            node = match self.nodes[node]
                .children
                .binary_search_by(|(key, _)| (**key).cmp(segment))
            {
                Ok(found) => self.nodes[node].children[found].1 as usize,
                Err(insert_at) => {
                    let child = self.nodes.len();
                    self.nodes.push(BuildNode {
                        children: Vec::new(),
                        value: None,
                    });
                    let id = u32::try_from(child).expect("fewer than 2^32 path segments");
                    self.nodes[node]
                        .children
                        .insert(insert_at, (segment.into(), id));
                    child
                }
            };
        }
        self.nodes[node].value.get_or_insert_with(make)
    }

    /// Lays the trie out breadth first, children of a node contiguous and sorted by
    /// their first segment, with value-less single-child chains merged.
    pub(crate) fn freeze(mut self) -> SegmentTrie<T> {
        if self.nodes[0].children.len() <= 1 {
            let root = self.nodes[0].value.take();
            let Some((segment, child)) = self.nodes[0].children.pop() else {
                return SegmentTrie::Small { root, leaf: None };
            };
            let (end, label) = self.merge_chain(child as usize, segment.into_string());
            if self.nodes[end].children.is_empty() {
                if let Some(value) = self.nodes[end].value.take() {
                    return SegmentTrie::Small {
                        root,
                        leaf: Some((InlineBytes::new(label.as_bytes()), value)),
                    };
                }
            }
            // Not the small shape after all: put the root back, its one child now
            // carrying the merged label (the flat layout handles merged labels).
            self.nodes[0].value = root;
            let end = u32::try_from(end).expect("fewer than 2^32 path segments");
            self.nodes[0].children.push((label.into(), end));
        }
        self.freeze_flat()
    }

    fn freeze_flat(mut self) -> SegmentTrie<T> {
        let mut flat: Vec<FlatNode<T>> = Vec::with_capacity(self.nodes.len());
        let mut queue: VecDeque<(usize, InlineBytes)> =
            VecDeque::from([(0, InlineBytes::new(b""))]);
        // Flat index the next child will get: the root is 0, children follow.
        let mut next = 1usize;
        while let Some((built, label)) = queue.pop_front() {
            let children = std::mem::take(&mut self.nodes[built].children);
            flat.push(FlatNode {
                label,
                first_child: u32::try_from(next).expect("fewer than 2^32 path segments"),
                child_count: u32::try_from(children.len()).expect("fewer than 2^32 children"),
                value: self.nodes[built].value.take(),
            });
            next += children.len();
            for (segment, child) in children {
                let (end, label) = self.merge_chain(child as usize, segment.into_string());
                queue.push_back((end, InlineBytes::new(label.as_bytes())));
            }
        }
        SegmentTrie::Flat {
            nodes: flat.into_boxed_slice(),
        }
    }

    /// Follows a chain of value-less, single-child nodes from `node`, extending
    /// `label` with their segments; returns the node that ends the chain.
    fn merge_chain(&mut self, mut node: usize, mut label: String) -> (usize, String) {
        while self.nodes[node].value.is_none() && self.nodes[node].children.len() == 1 {
            let (segment, child) = self.nodes[node].children.remove(0);
            label.push('/');
            label.push_str(&segment);
            node = child as usize;
        }
        (node, label)
    }
}

impl<T> SegmentTrie<T> {
    /// Offers every stored prefix matching `path` to `visit`, longest first, with the
    /// number of request-path bytes it covers (0 for `/`), until `visit` returns `Some`.
    pub(crate) fn find_longest<R>(
        &self,
        path: &str,
        mut visit: impl FnMut(&T, usize) -> Option<R>,
    ) -> Option<R> {
        let rest = path.strip_prefix('/').unwrap_or(path);
        match self {
            Self::Small { root, leaf } => {
                if let Some((label, value)) = leaf {
                    let label = label.as_bytes();
                    let bytes = rest.as_bytes();
                    if bytes.starts_with(label)
                        && matches!(bytes.get(label.len()), None | Some(b'/'))
                    {
                        if let Some(found) = visit(value, 1 + label.len()) {
                            return Some(found);
                        }
                    }
                }
                root.as_ref().and_then(|value| visit(value, 0))
            }
            Self::Flat { nodes } => Self::descend(nodes, 0, rest, 0, &mut visit),
        }
    }

    /// Depth-first: deeper nodes are offered before this one, so the recursion's
    /// unwinding order is longest prefix first. Depth is bounded by the longest
    /// configured prefix, not by the request.
    fn descend<R>(
        nodes: &[FlatNode<T>],
        node: usize,
        rest: &str,
        covered: usize,
        visit: &mut impl FnMut(&T, usize) -> Option<R>,
    ) -> Option<R> {
        let current = nodes.get(node)?;
        let path_ended = node != 0 && rest.is_empty();
        if !path_ended && current.child_count > 0 {
            // A byte scan beats `str::split_once` on segments this short.
            let bytes = rest.as_bytes();
            let end = bytes.iter().position(|&b| b == b'/').unwrap_or(bytes.len());
            if let Some(child) = Self::child(nodes, current, &bytes[..end]) {
                // A merged label spans several segments: all must match, ending at a
                // segment boundary.
                let label = nodes[child].label.as_bytes();
                if bytes.starts_with(label) && matches!(bytes.get(label.len()), None | Some(b'/')) {
                    let after = rest.get(label.len() + 1..).unwrap_or("");
                    let found =
                        Self::descend(nodes, child, after, covered + 1 + label.len(), visit);
                    if found.is_some() {
                        return found;
                    }
                }
            }
        }
        current
            .value
            .as_ref()
            .and_then(|value| visit(value, covered))
    }

    /// The child of `parent` whose label starts with `segment`: children differ in
    /// their first segment. A linear scan for a few children, binary search for many.
    fn child(nodes: &[FlatNode<T>], parent: &FlatNode<T>, segment: &[u8]) -> Option<usize> {
        fn head<T>(node: &FlatNode<T>) -> &[u8] {
            let label = node.label.as_bytes();
            &label[..label.iter().position(|&b| b == b'/').unwrap_or(label.len())]
        }
        let first = parent.first_child as usize;
        let children = nodes.get(first..first + parent.child_count as usize)?;
        if children.len() <= 8 {
            children
                .iter()
                .position(|c| head(c) == segment)
                .map(|i| first + i)
        } else {
            children
                .binary_search_by(|c| head(c).cmp(segment))
                .ok()
                .map(|i| first + i)
        }
    }
}
