//! What a zone file's records are built with: by default a
//! [`SortedBuilder`], which holds at most a run of records (64 MiB) and
//! sorts the rest on disk, so that a TLD's file loads in about the memory
//! of the zone served; `LODE_ZONE_RUNS=off` builds as before, every
//! record held (to compare), `LODE_ZONE_RUNS=<bytes>[k|M|G]` sets the
//! run's budget (a tiny one makes many runs, for tests).

use std::path::Path;

use lode_wire::{Class, Name, RecordRef};
use lode_zonedb::{Problem, SortedBuilder, Zone, ZoneBuilder, DEFAULT_RUN_BUDGET};
use lode_zonefile::ParseCounters;

/// The environment variable that sets the run budget, or `off`.
pub const RUNS_VAR: &str = "LODE_ZONE_RUNS";

/// A zone file's builder (see the module's notes).
#[derive(Debug)]
pub enum FileBuilder {
    /// Sorted runs merged into the streaming builder.
    Sorted(Box<SortedBuilder>),
    /// Every record held, then sorted.
    Held(ZoneBuilder),
}

impl FileBuilder {
    /// A builder for the zone at `origin` of class `class`; `strict` adds
    /// the checkers' checks; runs go in `run_dir` (else the temporary
    /// directory, `TMPDIR`).
    pub fn new(origin: &Name, class: Class, strict: bool, run_dir: Option<&Path>) -> FileBuilder {
        let setting = std::env::var(RUNS_VAR).ok();
        if setting.as_deref() == Some("off") {
            let b = ZoneBuilder::new(origin.clone()).class(class);
            return FileBuilder::Held(if strict { b.strict() } else { b });
        }
        let budget = setting
            .and_then(|s| budget(&s))
            .unwrap_or(DEFAULT_RUN_BUDGET);
        let mut b = SortedBuilder::new(origin.clone())
            .class(class)
            .run_budget(budget);
        if let Some(dir) = run_dir {
            b = b.run_dir(dir.to_path_buf());
        }
        FileBuilder::Sorted(Box::new(if strict { b.strict() } else { b }))
    }

    /// Adds a record (copied); `tag` is echoed in problems about it.
    pub fn add(&mut self, record: RecordRef<'_>, tag: u32) {
        match self {
            FileBuilder::Sorted(b) => b.add_ref(record, tag),
            FileBuilder::Held(b) => b.add(record.to_record(), tag),
        }
    }

    /// The zone and its warnings, or every problem found; the records
    /// merged from sorted runs are counted in `counters` meanwhile (and
    /// taken back at the end: the caller counts the zone as done).
    pub fn build(
        self,
        counters: Option<&ParseCounters>,
    ) -> Result<(Zone, Vec<Problem>), Vec<Problem>> {
        match (self, counters) {
            (FileBuilder::Sorted(b), Some(c)) => {
                let mut total = 0;
                let built = b.build_counting(&mut |n| {
                    total += n;
                    c.lay_out(n, false);
                });
                c.lay_out(total, true);
                built
            }
            (FileBuilder::Sorted(b), None) => b.build(),
            (FileBuilder::Held(b), _) => b.build(),
        }
    }
}

/// A budget written `<bytes>[k|M|G]`.
fn budget(s: &str) -> Option<usize> {
    let (digits, shift) = match s.as_bytes().last()? {
        b'k' | b'K' => (&s[..s.len() - 1], 10),
        b'm' | b'M' => (&s[..s.len() - 1], 20),
        b'g' | b'G' => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    digits.parse::<usize>().ok()?.checked_mul(1 << shift)
}

#[cfg(test)]
mod tests {
    #[test]
    fn budgets_read() {
        assert_eq!(super::budget("300"), Some(300));
        assert_eq!(super::budget("256M"), Some(256 << 20));
        assert_eq!(super::budget("2g"), Some(2 << 30));
        assert_eq!(super::budget("off"), None);
        assert_eq!(super::budget(""), None);
    }
}
