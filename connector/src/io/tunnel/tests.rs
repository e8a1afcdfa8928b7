use std::net::SocketAddr;

use super::AddrPool;

fn pool(n: u16) -> AddrPool {
    AddrPool {
        addrs: (0..n)
            .map(|i| SocketAddr::from(([127, 0, 0, 1], 7000 + i)))
            .collect(),
        owner: vec![None; usize::from(n)],
    }
}

#[test]
fn four_indices_get_four_distinct_addresses() {
    let mut p = pool(4);
    let mut got: Vec<SocketAddr> = (0..4).map(|i| p.take(i, None)).collect();
    got.sort();
    got.dedup();
    assert_eq!(got.len(), 4);
}

#[test]
fn rotation_moves_to_a_free_address() {
    let mut p = pool(4);
    let first = p.take(0, None);
    p.take(1, None);
    let moved = p.take(0, Some(first));
    assert_ne!(moved, first);
    assert_ne!(moved, p.addrs[1]);
}

#[test]
fn with_one_address_everyone_shares_it() {
    let mut p = pool(1);
    assert_eq!(p.take(0, None), p.addrs[0]);
    assert_eq!(p.take(1, Some(p.addrs[0])), p.addrs[0]);
}
