//! Router lookup and build benchmarks. IDs are stable across changes so results can
//! be compared: `lookup/{exact_prefix,wildcard,regex,headers,miss}/{n}` and
//! `build/exact_prefix/{n}`, for n routes. Each lookup iteration routes the next of
//! 1024 requests aimed at routes spread over the whole table.
#![allow(missing_docs, clippy::unwrap_used, reason = "benchmark harness")]

mod support;

// Measured with the allocator the `culvert` binary ships with.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use culvert_router::{RequestView, RouteTable, RouteTableBuilder};
use http::{HeaderMap, HeaderName, HeaderValue};
use std::hint::black_box;
use support::Family;

const SIZES: [usize; 4] = [10, 1_000, 10_000, 100_000];

struct Prepared {
    host: String,
    target: String,
    headers: HeaderMap,
}

fn prepare(family: Family, n: usize) -> Vec<Prepared> {
    support::spread(n, 1024)
        .into_iter()
        .map(|i| {
            let (host, target, pairs) = support::request(family, i);
            let mut headers = HeaderMap::new();
            for (name, value) in pairs {
                headers.insert(
                    HeaderName::from_static(name),
                    HeaderValue::from_str(&value).unwrap(),
                );
            }
            Prepared {
                host,
                target,
                headers,
            }
        })
        .collect()
}

fn lookup_loop(
    c: &mut Criterion,
    group_name: &str,
    family: Family,
    requests_for: impl Fn(usize) -> Vec<Prepared>,
    expect_hit: bool,
) {
    let mut group = c.benchmark_group(format!("lookup/{group_name}"));
    group.throughput(Throughput::Elements(1));
    for n in SIZES {
        let table: RouteTable = RouteTableBuilder::new()
            .build(&support::config(family, n))
            .unwrap();
        let requests = requests_for(n);
        // Check once, outside the timing, that the requests do what the ID claims.
        for request in &requests {
            let view = RequestView {
                port: 80,
                local_ip: None,
                host: &request.host,
                path: &request.target,
                method: "GET",
                headers: &request.headers,
            };
            assert_eq!(
                table.route(&view).is_ok(),
                expect_hit,
                "{} {}",
                request.host,
                request.target
            );
        }
        let mut next = 0usize;
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter(|| {
                let request = &requests[next & 1023];
                next = next.wrapping_add(1);
                let view = RequestView {
                    port: 80,
                    local_ip: None,
                    host: black_box(&request.host),
                    path: black_box(&request.target),
                    method: "GET",
                    headers: &request.headers,
                };
                black_box(table.route(&view).map(|m| m.rule_index).ok())
            });
        });
    }
    group.finish();
}

fn lookups(c: &mut Criterion) {
    for family in Family::ALL {
        lookup_loop(c, family.name(), family, |n| prepare(family, n), true);
    }
    // Misses: hostnames no route owns, on a table of exact hosts.
    lookup_loop(
        c,
        "miss",
        Family::ExactPrefix,
        |n| {
            (0..1024)
                .map(|i| Prepared {
                    host: format!("unknown{}.example.org", i * 7 + n),
                    target: "/api/v1/users/42".into(),
                    headers: HeaderMap::new(),
                })
                .collect()
        },
        false,
    );
}

fn builds(c: &mut Criterion) {
    let mut group = c.benchmark_group("build/exact_prefix");
    group.sample_size(10);
    for n in SIZES {
        let config = support::config(Family::ExactPrefix, n);
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            // The previous table's drop is not part of a build: keep it out of the timing.
            b.iter_with_large_drop(|| RouteTableBuilder::new().build(black_box(&config)).unwrap());
        });
    }
    group.finish();
}

criterion_group!(benches, lookups, builds);
criterion_main!(benches);
