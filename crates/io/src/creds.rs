//! Process credentials, for a server started as root that binds its ports
//! and then runs as an unprivileged user.
//!
//! ```text
//!  root ── act_as(uid, gid) ──▶ effective uid/gid the user's (files it creates are its)
//!       ── regain_root() ────▶ effective root again (bind port 53)
//!       ── become(uid, gid) ─▶ real = effective = saved = the user's; no way back
//! ```
//!
//! The system calls are in `sys.rs`; glibc applies each to every thread.

use std::io;

use crate::sys::{self, KEEP_ID};

/// The effective user id.
pub fn effective_uid() -> u32 {
    sys::get_resuid().1
}

/// Acts as `uid`/`gid` (effective ids and supplementary groups) while keeping
/// root as the saved id, so that [`regain_root`] can return to it.
pub fn act_as(uid: u32, gid: u32) -> io::Result<()> {
    sys::set_groups(&[gid])?;
    sys::set_resgid(KEEP_ID, gid, KEEP_ID)?;
    sys::set_resuid(KEEP_ID, uid, KEEP_ID)
}

/// Returns to effective root after [`act_as`] (the capabilities come back
/// with it).
pub fn regain_root() -> io::Result<()> {
    sys::set_resuid(KEEP_ID, 0, KEEP_ID)?;
    sys::set_resgid(KEEP_ID, 0, KEEP_ID)
}

/// Becomes `uid`/`gid` for good: supplementary groups, then group ids, then
/// user ids (real, effective and saved), and checks that root cannot be
/// regained.
pub fn become_user(uid: u32, gid: u32) -> io::Result<()> {
    // Groups first: once the uid is not root they can no longer change.
    sys::set_groups(&[gid])?;
    sys::set_resgid(gid, gid, gid)?;
    sys::set_resuid(uid, uid, uid)?;
    let ids = (sys::get_resuid(), sys::get_resgid());
    if ids != ((uid, uid, uid), (gid, gid, gid)) {
        return Err(io::Error::other(format!(
            "ids are {ids:?} after switching to uid {uid} gid {gid}"
        )));
    }
    if uid != 0 && sys::set_resuid(KEEP_ID, 0, KEEP_ID).is_ok() {
        return Err(io::Error::other("root could be regained after the switch"));
    }
    Ok(())
}
