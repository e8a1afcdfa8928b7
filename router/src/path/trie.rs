//! [`SegmentTrie`]: `PathPrefix` lookup that respects segment boundaries. `/foo`
//! matches `/foo`, `/foo/` and `/foo/bar`, never `/foobar`; a prefix's trailing slash
//! is ignored. One node per distinct segment; a lookup walks the request path's
//! segments and yields every stored prefix along the way, longest first.

/// Values keyed by path prefix.
#[derive(Debug)]
pub(crate) struct SegmentTrie<T> {
    nodes: Vec<Node<T>>,
}

#[derive(Debug)]
struct Node<T> {
    /// Children sorted by segment, searched by binary search: fan-out per node is
    /// small in real route tables, and a sorted vector is a third the size of a map.
    children: Vec<(Box<str>, u32)>,
    value: Option<T>,
}

impl<T> Default for SegmentTrie<T> {
    fn default() -> Self {
        Self {
            nodes: vec![Node {
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

impl<T> SegmentTrie<T> {
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
                    self.nodes.push(Node {
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

    /// Offers every stored prefix matching `path` to `visit`, longest first, with the
    /// number of request-path bytes it covers (0 for `/`), until `visit` returns `Some`.
    pub(crate) fn find_longest<R>(
        &self,
        path: &str,
        mut visit: impl FnMut(&T, usize) -> Option<R>,
    ) -> Option<R> {
        let rest = path.strip_prefix('/').unwrap_or(path);
        self.descend(0, rest, 0, &mut visit)
    }

    /// Depth-first: deeper nodes are offered before this one, so the recursion's
    /// unwinding order is longest prefix first. Depth is bounded by the longest
    /// configured prefix, not by the request.
    fn descend<R>(
        &self,
        node: usize,
        rest: &str,
        covered: usize,
        visit: &mut impl FnMut(&T, usize) -> Option<R>,
    ) -> Option<R> {
        let current = &self.nodes[node];
        let path_ended = node != 0 && rest.is_empty();
        if !path_ended && !current.children.is_empty() {
            let (segment, after) = rest.split_once('/').unwrap_or((rest, ""));
            if let Ok(index) = current
                .children
                .binary_search_by(|(key, _)| (**key).cmp(segment))
            {
                let child = current.children[index].1 as usize;
                let found = self.descend(child, after, covered + 1 + segment.len(), visit);
                if found.is_some() {
                    return found;
                }
            }
        }
        current
            .value
            .as_ref()
            .and_then(|value| visit(value, covered))
    }
}
