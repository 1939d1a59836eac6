//! Zones' buffers collapsed into transparent huge pages away from the paths
//! that would wait for it. A zone just loaded, reloaded or compacted is
//! handed here; one thread asks the kernel for huge pages over its buffers
//! ([`lode_io::mem::prefer_huge_pages`]: `MADV_HUGEPAGE`, then the
//! synchronous `MADV_COLLAPSE`, which copies every small page — about 2.4 s
//! a GiB on the development machine, 11 s for a 160 M-delegation zone that
//! would otherwise come before the first answer or stall the zone's writer)
//! while queries are answered from small pages. The thread holds the
//! buffers until it is done with them, so a range it advises is always
//! still the zone's; it runs at the lowest priority.

use std::sync::{mpsc, OnceLock};

use lode_zonedb::{BaseMemory, Zone};

/// Buffers smaller than this are left alone (a few huge pages at most).
const AT_LEAST: usize = 8 << 20;

/// Has `zone`'s buffers collapsed into huge pages soon, off this thread
/// (nothing when they are small or no thread could be started).
pub(crate) fn collapse_later(zone: &Zone) {
    let memory = zone.base_memory();
    if memory.regions().iter().map(|r| r.1).sum::<usize>() < AT_LEAST {
        return;
    }
    static QUEUE: OnceLock<Option<mpsc::Sender<BaseMemory>>> = OnceLock::new();
    let queue = QUEUE.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<BaseMemory>();
        std::thread::Builder::new()
            .name("lode-hugepages".into())
            .spawn(move || {
                lode_io::lower_thread_priority(19);
                for memory in rx {
                    for (addr, len) in memory.regions() {
                        lode_io::mem::prefer_huge_pages(addr, len);
                    }
                }
            })
            .ok()
            .map(|_| tx)
    });
    if let Some(tx) = queue {
        let _ = tx.send(memory);
    }
}
