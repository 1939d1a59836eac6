//! A throwaway knotd for the instruments' integration tests, started by the
//! shared harness (lode-peers) on a loopback port in its own directory,
//! stopped by PID on drop; and a scratch directory for the generated data.

use std::path::PathBuf;

use lode_bench::gen::enumset::EnumSetSummary;
use lode_peers::{Content, Kind, Server, Spec, Zone};

/// A directory removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// A fresh `lode-bench-TAG-PID` in the temporary directory.
    pub fn new(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("lode-bench-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Starts knotd as `spec` says (port, keys, ACLs) serving the zones of `set`,
/// each made by `zone` from the plain primary zone; waits until every zone
/// answers.
pub fn start_knot(spec: Spec, set: &EnumSetSummary, zone: impl Fn(Zone) -> Zone) -> Server {
    let spec = set.zone_files.iter().fold(spec, |spec, (apex, file)| {
        spec.zone(zone(Zone::primary(apex, Content::File(file.clone()))))
    });
    assert_eq!(spec.kind, Kind::Knot);
    Server::start(&spec).unwrap_or_else(|e| panic!("{e}"))
}
