//! Running as an unprivileged user (`user = "lode"`, `--user`) when started
//! as root, as Knot's `server.user` or NSD's `username`.
//!
//! ```text
//!  Server::start (root) ─ begin: act as the user (effective ids), check its folders
//!     load zones, replay journals, start writers   ← files they create are the user's
//!  ─ before binding: regain root ─ bind UDP, TCP, control socket (chowned to the user)
//!  ─ finish: become the user for good (real, effective, saved ids), then serve
//! ```
//!
//! Acting as the user while zones load (rather than switching only after
//! binding) keeps every journal and snapshot the user's own, so the next
//! start (as root, or under systemd's `User=`) can write them. Users are
//! looked up in /etc/passwd (system users live there; NSS is not asked).
//! Under systemd the unit's `User=` and `AmbientCapabilities=` do this
//! instead and `user` stays unset.

use std::fmt;
use std::path::Path;

/// The user to run as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    /// Its name (or the number as given).
    pub name: String,
    /// Its user id.
    pub uid: u32,
    /// Its primary group id.
    pub gid: u32,
}

impl fmt::Display for RunAs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (uid {}, gid {})", self.name, self.uid, self.gid)
    }
}

impl RunAs {
    /// Finds `name` in /etc/passwd; a number is taken as a uid (its group:
    /// the passwd entry's if there is one, else the same number).
    pub fn lookup(name: &str) -> Result<RunAs, String> {
        let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
        RunAs::lookup_in(name, &passwd)
    }

    /// [`RunAs::lookup`] over the text of a passwd file.
    pub fn lookup_in(name: &str, passwd: &str) -> Result<RunAs, String> {
        let number = name.parse::<u32>().ok();
        for line in passwd.lines() {
            let f: Vec<&str> = line.split(':').collect();
            if f.len() < 4 {
                continue;
            }
            let (Ok(uid), Ok(gid)) = (f[2].parse::<u32>(), f[3].parse::<u32>()) else {
                continue;
            };
            if f[0] == name || number == Some(uid) {
                return Ok(RunAs {
                    name: name.to_owned(),
                    uid,
                    gid,
                });
            }
        }
        match number {
            Some(n) => Ok(RunAs {
                name: name.to_owned(),
                uid: n,
                gid: n,
            }),
            None => Err(format!("user = {name:?}: no such user in /etc/passwd")),
        }
    }
}

/// Where a start with `user` set is: what [`finish`] must do.
#[derive(Debug)]
pub(crate) struct Pending {
    user: RunAs,
}

/// Starts acting as `user` (started as root), or checks that the process
/// already is that user. `None`: nothing to do later.
pub(crate) fn begin(
    user: Option<&RunAs>,
    writable: &[(&str, &Path)],
) -> Result<Option<Pending>, String> {
    let Some(user) = user else {
        return Ok(None);
    };
    let euid = lode_io::creds::effective_uid();
    let pending = if euid == user.uid {
        None
    } else if euid == 0 {
        lode_io::creds::act_as(user.uid, user.gid)
            .map_err(|e| format!("cannot act as user {user}: {e}"))?;
        Some(Pending { user: user.clone() })
    } else {
        return Err(format!(
            "user = {:?}: started as uid {euid}, not root, so cannot switch to {user}",
            user.name
        ));
    };
    for (what, dir) in writable {
        if let Err(e) = check_writable(dir) {
            // Back to root, so the error is reported as the operator expects.
            if pending.is_some() {
                let _ = lode_io::creds::regain_root();
            }
            return Err(format!(
                "{what} {} is not writable by user {user}: {e} (chown -R {} it)",
                dir.display(),
                user.name
            ));
        }
    }
    Ok(pending)
}

/// Effective root again, to bind the sockets.
pub(crate) fn regain(pending: &Option<Pending>) -> Result<(), String> {
    match pending {
        Some(_) => lode_io::creds::regain_root().map_err(|e| format!("cannot regain root: {e}")),
        None => Ok(()),
    }
}

/// Gives `path` (the control socket) to the user, then becomes it for good.
pub(crate) fn finish(pending: Option<Pending>, control: Option<&Path>) -> Result<(), String> {
    let Some(Pending { user }) = pending else {
        return Ok(());
    };
    if let Some(path) = control.filter(|p| p.exists()) {
        std::os::unix::fs::chown(path, Some(user.uid), Some(user.gid))
            .map_err(|e| format!("cannot give {} to {user}: {e}", path.display()))?;
    }
    lode_io::creds::become_user(user.uid, user.gid)
        .map_err(|e| format!("cannot switch to user {user}: {e}"))?;
    tracing::info!(user = %user.name, uid = user.uid, gid = user.gid, "running as user {user}");
    Ok(())
}

/// Creates `dir` if needed and a file in it, as the current effective user.
fn check_writable(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(format!(".lode-write-test-{}", std::process::id()));
    std::fs::write(&probe, b"")?;
    std::fs::remove_file(&probe)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_are_found_by_name_or_number() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\n\
                      # comment\n\
                      lode:x:998:997:Lode DNS server:/var/lib/lode:/usr/sbin/nologin\n";
        let u = RunAs::lookup_in("lode", passwd).unwrap();
        assert_eq!((u.uid, u.gid), (998, 997));
        let u = RunAs::lookup_in("998", passwd).unwrap();
        assert_eq!((u.uid, u.gid), (998, 997));
        let u = RunAs::lookup_in("12345", passwd).unwrap();
        assert_eq!((u.uid, u.gid), (12345, 12345));
        assert!(RunAs::lookup_in("nobody-here", passwd)
            .unwrap_err()
            .contains("no such user"));
    }
}
