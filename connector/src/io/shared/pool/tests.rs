use std::net::SocketAddr;
use std::time::Duration;

use super::AddrPool;
use crate::discovery::EdgeRegions;

fn addr(last: u8, port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, last], port))
}

fn pool(n: u16) -> AddrPool {
    let addrs: Vec<SocketAddr> = (0..n).map(|i| addr(1, 7000 + i)).collect();
    AddrPool::from_static(&addrs)
}

fn regions() -> EdgeRegions {
    EdgeRegions {
        regions: vec![
            vec![addr(1, 7844), addr(2, 7844)],
            vec![addr(3, 7844), addr(4, 7844)],
        ],
        ttl: Duration::from_secs(60),
        fallback: false,
    }
}

#[test]
fn four_indices_get_four_distinct_addresses() {
    let mut p = pool(4);
    let mut got: Vec<SocketAddr> = (0..4)
        .map(|i| p.take(i, None, true).expect("an address"))
        .collect();
    got.sort();
    got.dedup();
    assert_eq!(got.len(), 4);
}

#[test]
fn rotation_moves_to_a_free_address() {
    let mut p = pool(4);
    let first = p.take(0, None, true).expect("an address");
    let second = p.take(1, None, true).expect("an address");
    let moved = p.take(0, Some(first), true).expect("an address");
    assert_ne!(moved, first);
    assert_ne!(moved, second);
}

#[test]
fn with_one_address_everyone_shares_it() {
    let mut p = pool(1);
    let only = p.slots[0].addr;
    assert_eq!(p.take(0, None, true), Some(only));
    assert_eq!(p.take(1, Some(only), true), Some(only));
}

#[test]
fn discovered_regions_alternate_and_are_never_shared() {
    let found = regions();
    let mut p = AddrPool::from_regions(&found.regions);
    let got: Vec<SocketAddr> = (0..4)
        .map(|i| p.take(i, None, false).expect("an address"))
        .collect();
    for (i, a) in got.iter().enumerate() {
        let region = found.regions.iter().position(|r| r.contains(a));
        assert_eq!(region, Some(i % 2), "connIndex {i} got {a}");
    }
    let mut distinct = got.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 4);
    // A fifth connection finds nothing free and does not share.
    assert_eq!(p.take(4, None, false), None);
    // Rotating with every address taken keeps its own.
    assert_eq!(p.take(0, Some(got[0]), false), Some(got[0]));
}

#[test]
fn a_new_discovery_keeps_holders_and_retires_vanished_addresses() {
    let mut p = AddrPool::from_regions(&regions().regions);
    let held = p.take(0, None, false).expect("an address");
    assert_eq!(held, addr(1, 7844));
    let other = p.take(1, None, false).expect("an address");
    // The next answer drops 127.0.0.1 and keeps the rest.
    let next = EdgeRegions {
        regions: vec![
            vec![addr(2, 7844), addr(5, 7844)],
            vec![addr(3, 7844), addr(4, 7844)],
        ],
        ..regions()
    };
    p.replace(&next);
    assert_eq!(p.live(), 4);
    // Nobody else gets the retired address while connIndex 0 holds it.
    let got: Vec<_> = (2..5).filter_map(|i| p.take(i, None, false)).collect();
    assert!(!got.contains(&held), "{got:?}");
    assert!(!got.contains(&other), "{got:?}");
    assert_eq!(got.len(), 3);
    // Released, it is gone.
    p.release(0);
    assert!(p.slots.iter().all(|s| s.addr != held));
}
