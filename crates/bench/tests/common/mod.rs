//! A throwaway knotd for the instruments' integration tests: started on a
//! loopback port in its own directory, stopped by PID and cleaned up on drop.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A knotd we started; killed (by PID) and its directory removed on drop.
pub struct Knot {
    child: Child,
    dir: PathBuf,
}

impl Drop for Knot {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The knotd binary, if installed. With `LODE_REQUIRE_KNOT=1` (set by
/// scripts/test.sh) a missing knotd fails the test instead of skipping it.
pub fn knotd() -> Option<PathBuf> {
    let found = ["/usr/sbin/knotd", "/usr/bin/knotd", "/usr/local/sbin/knotd"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists());
    if found.is_none() && std::env::var("LODE_REQUIRE_KNOT").as_deref() == Ok("1") {
        panic!("knotd is not installed but LODE_REQUIRE_KNOT=1");
    }
    found
}

/// Starts knotd on 127.0.0.1:`port` with its state in `dir`. `sections` goes
/// before the template (keys, ACLs), `template` inside the default template,
/// `zones` is the zone list (as `lode-bench gen` writes it).
pub fn start_knot(
    knotd: &Path,
    dir: &Path,
    port: u16,
    sections: &str,
    template: &str,
    zones: &str,
) -> Knot {
    let conf = format!(
        "server:\n    rundir: \"{d}\"\n    listen: 127.0.0.1@{port}\n    udp-workers: 1\n    \
         tcp-workers: 1\n    background-workers: 1\n\
         database:\n    storage: \"{d}/db\"\n\
         {sections}\
         template:\n  - id: default\n    storage: \"{d}\"\n    zonefile-sync: -1\n\
         {template}{zones}",
        d = dir.display()
    );
    std::fs::create_dir_all(dir.join("db")).expect("db dir");
    let conf_path = dir.join("knot.conf");
    std::fs::write(&conf_path, conf).expect("write knot.conf");
    let child = Command::new(knotd)
        .arg("-c")
        .arg(&conf_path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start knotd");
    Knot {
        child,
        dir: dir.to_owned(),
    }
}
