//! Counting a request allocates nothing once the thread's counter block is
//! registered (its first request): a counting global allocator watches
//! queries, errors, unanswered requests and answers from many zones.

use lode_server::metrics::{worker::zone_key, Metrics, Observed};

#[global_allocator]
static GLOBAL: lode_testalloc::Counting = lode_testalloc::Counting;

#[test]
fn recording_does_not_allocate() {
    lode_testalloc::assert_installed();

    let metrics = Metrics::new();
    let mut q = vec![0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1];
    q.extend_from_slice(b"\x03www\x07example\x03com\x00\x00\x01\x00\x01");
    q.extend_from_slice(&[0, 0, 41, 4, 0xd0, 0, 0, 0x80, 0, 0, 0]);
    let mut nx = q.clone();
    nx[2] |= 0x80;
    nx[3] = 3;
    let keys: Vec<u64> = (0..300u32)
        .map(|i| zone_key(format!("\x04z{i:03}\x00").as_bytes()))
        .collect();
    // The first request registers this thread's block.
    let observed = |i: usize| Observed {
        transport: i % 2,
        request: i % 6,
        query: &q,
        response: if i.is_multiple_of(7) { &[] } else { &nx },
        rcode: i.is_multiple_of(3).then_some(23),
        zone: if i.is_multiple_of(5) {
            0
        } else {
            keys[i % keys.len()]
        },
        cookie: i % 6,
        asked: None,
    };
    metrics.record(&observed(1));
    let ((), allocs) = lode_testalloc::count(|| {
        for i in 0..20_000 {
            metrics.record(&observed(i));
        }
    });
    assert_eq!(allocs, 0);
}
