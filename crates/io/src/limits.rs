//! Limits a server sets for itself as it starts.
//!
//! A server started from a shell usually gets a soft open-file limit of
//! 1,024 while the hard limit is far higher: too few for `tcp-max-clients`
//! (1,000 by default) with TLS clients, listeners, zone files and a large
//! load's sorted runs beside. Like BIND's `named`, the soft limit is raised
//! to the hard one at start; the hard one is left as the operator set it
//! (systemd's `LimitNOFILE`, `ulimit -Hn`).

use std::io;

use crate::sys;

/// The open-file limit as [`raise_open_files`] found and left it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFiles {
    /// The soft limit before.
    pub before: u64,
    /// The soft limit now.
    pub now: u64,
    /// The hard limit (unchanged).
    pub hard: u64,
}

/// The most asked for when the hard limit is unlimited (the kernel's
/// default `fs.nr_open`).
const UNLIMITED_AS: u64 = 1 << 20;

/// Raises the soft open-file limit to the hard one.
pub fn raise_open_files() -> io::Result<OpenFiles> {
    let (before, hard) = sys::open_files_limit()?;
    let want = if hard == libc::RLIM_INFINITY {
        UNLIMITED_AS.max(before)
    } else {
        hard
    };
    if want > before {
        sys::set_open_files_soft(want, hard)?;
    }
    let (now, hard) = sys::open_files_limit()?;
    Ok(OpenFiles { before, now, hard })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_is_raised_to_the_hard_one() {
        let (_, hard) = sys::open_files_limit().unwrap();
        if hard == libc::RLIM_INFINITY || hard < 2 {
            // Nothing below it to start from here (the other tests of this
            // process hold files: the limit is not taken low).
            assert!(raise_open_files().is_ok());
            return;
        }
        sys::set_open_files_soft(hard - 1, hard).unwrap();
        let f = raise_open_files().unwrap();
        assert_eq!(
            f,
            OpenFiles {
                before: hard - 1,
                now: hard,
                hard
            }
        );
        // A second call finds it raised and leaves it.
        let again = raise_open_files().unwrap();
        assert_eq!((again.before, again.now), (hard, hard));
    }
}
