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
use std::io;
use std::path::{Path, PathBuf};

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

/// Why the process could not become the configured user.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UserError {
    /// `user` names no passwd entry (and is not a number).
    #[error("user = {0:?}: no such user in /etc/passwd")]
    NoSuchUser(String),
    /// Started neither as root nor as the user.
    #[error(
        "user = {:?}: started as uid {euid}, not root, so cannot switch to {user}",
        .user.name
    )]
    NotRoot {
        /// The user.
        user: RunAs,
        /// The process's effective uid.
        euid: u32,
    },
    /// The effective ids could not be the user's.
    #[error("cannot act as user {user}: {source}")]
    ActAs {
        /// The user.
        user: RunAs,
        /// The system's error.
        source: io::Error,
    },
    /// A folder the server writes that the user cannot write.
    #[error(
        "{what} {} is not writable by user {user}: {source} (chown -R {} it)",
        .dir.display(),
        .user.name
    )]
    NotWritable {
        /// The setting that names it.
        what: String,
        /// The folder.
        dir: PathBuf,
        /// The user.
        user: RunAs,
        /// Why a file could not be made there.
        source: io::Error,
    },
    /// Root could not be had back to bind the sockets.
    #[error("cannot regain root: {0}")]
    RegainRoot(#[source] io::Error),
    /// The control socket could not be given to the user.
    #[error("cannot give {} to {user}: {source}", .path.display())]
    Chown {
        /// The socket.
        path: PathBuf,
        /// The user.
        user: RunAs,
        /// The system's error.
        source: io::Error,
    },
    /// The ids could not be the user's for good.
    #[error("cannot switch to user {user}: {source}")]
    Become {
        /// The user.
        user: RunAs,
        /// The system's error.
        source: io::Error,
    },
}

impl RunAs {
    /// Finds `name` in /etc/passwd; a number is taken as a uid (its group:
    /// the passwd entry's if there is one, else the same number).
    pub fn lookup(name: &str) -> Result<RunAs, UserError> {
        let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
        RunAs::lookup_in(name, &passwd)
    }

    /// [`RunAs::lookup`] over the text of a passwd file.
    pub fn lookup_in(name: &str, passwd: &str) -> Result<RunAs, UserError> {
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
            None => Err(UserError::NoSuchUser(name.to_owned())),
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
) -> Result<Option<Pending>, UserError> {
    let Some(user) = user else {
        return Ok(None);
    };
    let euid = lode_io::creds::effective_uid();
    let pending = if euid == user.uid {
        None
    } else if euid == 0 {
        lode_io::creds::act_as(user.uid, user.gid).map_err(|source| UserError::ActAs {
            user: user.clone(),
            source,
        })?;
        Some(Pending { user: user.clone() })
    } else {
        return Err(UserError::NotRoot {
            user: user.clone(),
            euid,
        });
    };
    for (what, dir) in writable {
        if let Err(source) = check_writable(dir) {
            // Back to root, so the error is reported as the operator expects.
            if pending.is_some() {
                let _ = lode_io::creds::regain_root();
            }
            return Err(UserError::NotWritable {
                what: (*what).to_owned(),
                dir: dir.to_path_buf(),
                user: user.clone(),
                source,
            });
        }
    }
    Ok(pending)
}

/// Effective root again, to bind the sockets.
pub(crate) fn regain(pending: &Option<Pending>) -> Result<(), UserError> {
    match pending {
        Some(_) => lode_io::creds::regain_root().map_err(UserError::RegainRoot),
        None => Ok(()),
    }
}

/// Gives `path` (the control socket) to the user, then becomes it for good.
pub(crate) fn finish(pending: Option<Pending>, control: Option<&Path>) -> Result<(), UserError> {
    let Some(Pending { user }) = pending else {
        return Ok(());
    };
    if let Some(path) = control.filter(|p| p.exists()) {
        std::os::unix::fs::chown(path, Some(user.uid), Some(user.gid)).map_err(|source| {
            UserError::Chown {
                path: path.to_path_buf(),
                user: user.clone(),
                source,
            }
        })?;
    }
    lode_io::creds::become_user(user.uid, user.gid).map_err(|source| UserError::Become {
        user: user.clone(),
        source,
    })?;
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
        assert_eq!(
            RunAs::lookup_in("nobody-here", passwd)
                .unwrap_err()
                .to_string(),
            "user = \"nobody-here\": no such user in /etc/passwd"
        );
    }
}
