//! Criterion benchmark of `answer()` alone: one query per iteration over an
//! in-memory ENUM zone of 100,000 NAPTR records, for existing names (NAPTR
//! answer), names inside the zone that do not exist (NXDOMAIN) and names
//! outside every zone (REFUSED), over UDP without and with EDNS. Each set
//! cycles through 100,000 distinct pre-built queries in scattered order, so
//! no single name stays hot in the cache.
//!
//! `cargo bench -p lode-engine --bench answer -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use lode_engine::{answer, Settings, Transport};

#[allow(dead_code)] // shared with examples/answer_loop.rs, which uses the rest
mod common;
use common::Kind;

fn bench_answer(c: &mut Criterion) {
    let zones = common::load_zones();
    let settings = Settings::default();
    let mut out = vec![0u8; 65535];
    let mut group = c.benchmark_group("answer/udp");
    group.throughput(Throughput::Elements(1));
    for kind in Kind::ALL {
        for edns in [false, true] {
            let queries = common::queries(kind, edns);
            // Check every query gets the answer its kind promises before timing it.
            for q in &queries {
                let n = answer(&zones, q, &mut out, Transport::Udp, &settings).len;
                assert_eq!(common::rcode(&out[..n]), Some(kind.expected_rcode()));
            }
            let id = format!("{}/{}", kind.label(), if edns { "edns" } else { "plain" });
            let mut next = 0;
            group.bench_function(id, |b| {
                b.iter(|| {
                    let q = &queries[next];
                    next = if next + 1 == queries.len() {
                        0
                    } else {
                        next + 1
                    };
                    answer(&zones, black_box(q), &mut out, Transport::Udp, &settings)
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_answer);
criterion_main!(benches);
