//! What a reload (or another command on the reloader thread) did, as
//! `lode reload` prints it.

use crate::loading::loads::count_errors;

/// A zone that could not be (re)loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneFailure {
    /// The zone's origin.
    pub zone: String,
    /// True when its previous version is still served.
    pub kept_old: bool,
    /// Every problem, `file:line: reason`.
    pub errors: Vec<String>,
}

/// What a reload did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReloadReport {
    /// Zones read again (changed, new or forced).
    pub loaded: Vec<String>,
    /// Zones whose files (zone file and includes) were unchanged (same
    /// modification time and size), not read again.
    pub unchanged: Vec<String>,
    /// Frozen zones (`zone-freeze`) whose changed files were left for
    /// their thaw.
    pub frozen: Vec<String>,
    /// Zones no longer configured, now not served.
    pub removed: Vec<String>,
    /// Zones that failed.
    pub failed: Vec<ZoneFailure>,
    /// What a zone command (`zone-purge`, `zone-backup`, `zone-restore`)
    /// did, per zone.
    pub done: Vec<(String, String)>,
    /// The configuration could not be read: nothing was changed.
    pub config_error: Option<String>,
    /// The request could not be carried out (`zone-reload` of an unknown
    /// zone, or of a secondary): nothing was changed.
    pub refused: Option<String>,
    /// Per loaded zone, what was loaded ("serial 7, 12 records, read in
    /// 1.2 ms"; for a zone that takes updates, the change its writer made).
    pub notes: Vec<(String, String)>,
    /// Changed settings that take effect only at a restart.
    pub restart_needed: Vec<String>,
    /// Signed zones whose signing policy changed, and what became of it.
    pub policies: Vec<(String, String)>,
}

impl ReloadReport {
    /// True when everything configured is served at its newest version.
    pub fn is_ok(&self) -> bool {
        self.failed.is_empty() && self.config_error.is_none() && self.refused.is_none()
    }

    /// The report as lines of text (for `lode reload`).
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        if let Some(e) = &self.config_error {
            s.push_str(&format!("configuration not reloaded: {e}\n"));
        }
        if let Some(e) = &self.refused {
            s.push_str(&format!("{e}\n"));
        }
        for z in &self.loaded {
            match self.notes.iter().find(|(n, _)| n == z) {
                Some((_, note)) => s.push_str(&format!("zone {z}: reloaded, {note}\n")),
                None => s.push_str(&format!("zone {z}: reloaded\n")),
            }
        }
        for z in &self.unchanged {
            s.push_str(&format!("zone {z}: unchanged\n"));
        }
        for z in &self.frozen {
            s.push_str(&format!(
                "zone {z}: frozen, its changed file is read at `lode zone-thaw {z}`\n"
            ));
        }
        for z in &self.removed {
            s.push_str(&format!("zone {z}: removed\n"));
        }
        for (z, what) in &self.done {
            s.push_str(&format!("zone {z}: {what}\n"));
        }
        for (z, what) in &self.policies {
            s.push_str(&format!("zone {z}: {what}\n"));
        }
        if !self.restart_needed.is_empty() {
            s.push_str(&format!(
                "take effect at restart (not now): {}\n",
                self.restart_needed.join(", ")
            ));
        }
        for f in &self.failed {
            let what = if f.kept_old {
                "failed, previous version still served"
            } else {
                "failed, not served"
            };
            s.push_str(&format!("zone {}: {what}\n", f.zone));
            for e in f.errors.iter().take(SHOWN_ERRORS) {
                s.push_str(&format!("  {e}\n"));
            }
            if let Some(more) = more_errors(f.errors.len()) {
                s.push_str(&format!("  {more}\n"));
            }
        }
        s
    }
}

/// Errors of one zone shown in the log and in `lode reload`'s report (the
/// zone-level cause comes first; a wrong origin makes one per record).
pub(crate) const SHOWN_ERRORS: usize = 20;

/// "… and N more errors" when `n` is over [`SHOWN_ERRORS`].
pub(crate) fn more_errors(n: usize) -> Option<String> {
    (n > SHOWN_ERRORS).then(|| format!("… and {} more", count_errors(n - SHOWN_ERRORS)))
}
