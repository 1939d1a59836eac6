//! The simulated primary's disk: the journal's real file behind a
//! [`Backing`] that fails as disks fail — a write cut short by a full disk
//! (ENOSPC), a sync that fails (EIO), a truncation that fails — when the
//! simulator turns faults on, and that dies in the middle of a write when a
//! crash is armed: the write torn (a prefix of it on the file), or written
//! whole but never synced (the crash then keeps all of it, a prefix, or
//! none). Every choice comes from the simulator's seed.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex};

use lode_journal::{Backing, Wrap};
use rand_core::Rng;
use rand_pcg::Pcg64;

/// How the next write meets the crash armed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Crash {
    /// Torn: a strict prefix of it reaches the file.
    Torn,
    /// Written whole, the sync never done: the crash keeps all of it,
    /// a prefix, or none.
    Unsynced,
}

#[derive(Debug)]
struct Plan {
    rng: Pcg64,
    /// Chance of each fault while faults are on.
    fault: f64,
    faults_on: bool,
    armed: Option<Crash>,
    /// The disk is dead (a crash came): every operation fails until the
    /// simulator brings it back.
    dead: bool,
    /// Faults injected.
    injected: u64,
    /// Unsynced bytes of the write the crash came in: (file, offset, len).
    unsynced: Option<(usize, u64, usize)>,
    /// The files opened, by the order they were (for the crash's cut).
    files: Vec<File>,
}

/// The disk shared by every journal of the simulated primary.
#[derive(Debug, Clone)]
pub(super) struct Disk(Arc<Mutex<Plan>>);

impl Disk {
    pub(super) fn new(rng: Pcg64, fault: f64) -> Disk {
        Disk(Arc::new(Mutex::new(Plan {
            rng,
            fault,
            faults_on: false,
            armed: None,
            dead: false,
            injected: 0,
            unsynced: None,
            files: Vec::new(),
        })))
    }

    fn plan(&self) -> std::sync::MutexGuard<'_, Plan> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Faults on (the chaos phase) or off.
    pub(super) fn set_faults(&self, on: bool) {
        self.plan().faults_on = on;
    }

    /// The next write is the one a crash comes in.
    pub(super) fn arm(&self, crash: Crash) {
        self.plan().armed = Some(crash);
    }

    /// The crash: what was written and not synced is kept whole, cut, or
    /// lost; the disk comes back for the restart.
    pub(super) fn crash(&self) {
        let mut p = self.plan();
        if let Some((file, offset, len)) = p.unsynced.take() {
            let keep = match p.rng.next_u64() % 3 {
                0 => len,
                1 => (p.rng.next_u64() % len.max(1) as u64) as usize,
                _ => 0,
            };
            if let Some(f) = p.files.get(file) {
                let _ = f.set_len(offset + keep as u64);
            }
        }
        p.armed = None;
        p.dead = false;
        p.files.clear();
    }

    /// Faults injected so far.
    pub(super) fn injected(&self) -> u64 {
        self.plan().injected
    }

    /// The wrapping a journal is opened with.
    pub(super) fn wrap(&self) -> Wrap {
        let disk = self.clone();
        Arc::new(move |f: File| {
            let mut p = disk.plan();
            let index = p.files.len();
            if let Ok(copy) = f.try_clone() {
                p.files.push(copy);
            }
            drop(p);
            Box::new(OnDisk {
                f,
                index,
                disk: disk.clone(),
            }) as Box<dyn Backing>
        })
    }
}

/// One journal file on the simulated disk.
#[derive(Debug)]
struct OnDisk {
    f: File,
    index: usize,
    disk: Disk,
}

fn error(code: i32) -> io::Error {
    io::Error::from_raw_os_error(code)
}

const ENOSPC: i32 = 28;
const EIO: i32 = 5;

impl Plan {
    /// True when a fault falls now.
    fn fault_now(&mut self) -> bool {
        if !self.faults_on || self.fault <= 0.0 {
            return false;
        }
        let hit = ((self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < self.fault;
        self.injected += u64::from(hit);
        hit
    }
}

impl Backing for OnDisk {
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut p = self.disk.plan();
        if p.dead {
            return Err(error(EIO));
        }
        match p.armed.take() {
            Some(Crash::Torn) => {
                let cut = (p.rng.next_u64() % buf.len().max(1) as u64) as usize;
                FileExt::write_all_at(&self.f, &buf[..cut], offset)?;
                p.dead = true;
                return Err(error(EIO));
            }
            Some(Crash::Unsynced) => {
                FileExt::write_all_at(&self.f, buf, offset)?;
                p.unsynced = Some((self.index, offset, buf.len()));
                p.dead = true;
                // The write returned; the sync after it will not.
                return Ok(());
            }
            None => {}
        }
        if p.fault_now() {
            // A full disk: part of the write made it.
            let cut = (p.rng.next_u64() % buf.len().max(1) as u64) as usize;
            FileExt::write_all_at(&self.f, &buf[..cut], offset)?;
            return Err(error(ENOSPC));
        }
        FileExt::write_all_at(&self.f, buf, offset)
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        FileExt::read_exact_at(&self.f, buf, offset)
    }
    fn sync_data(&self) -> io::Result<()> {
        let mut p = self.disk.plan();
        if p.dead || p.fault_now() {
            return Err(error(EIO));
        }
        // (The host's own sync is not needed: the simulator's crash is
        // not the host's.)
        Ok(())
    }
    fn sync_all(&self) -> io::Result<()> {
        self.sync_data()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut p = self.disk.plan();
        if p.dead || p.fault_now() {
            return Err(error(EIO));
        }
        File::set_len(&self.f, len)
    }
}
