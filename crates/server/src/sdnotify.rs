//! The systemd readiness protocol (`sd_notify(3)`), by hand: one datagram of
//! `KEY=VALUE` lines to the Unix socket named by `$NOTIFY_SOCKET`.
//!
//! ```text
//!  start:   zones loaded, sockets bound ──▶ "READY=1\nSTATUS=serving 2 zones on …"
//!  reload:  "RELOADING=1\nMONOTONIC_USEC=…" ── reload ──▶ "READY=1\nSTATUS=…"
//!  stop:    "STOPPING=1"
//! ```
//!
//! Twenty lines of std instead of a crate: the protocol is one `sendto` on a
//! datagram socket, and std's `UnixDatagram` already reaches abstract names
//! (`@name`), so this needs no FFI and no dependency. Without
//! `$NOTIFY_SOCKET` (not started by systemd) every call does nothing.

use std::os::unix::net::{SocketAddr, UnixDatagram};

/// Sends `state` (newline-separated `KEY=VALUE` assignments) to the service
/// manager, if there is one; errors are logged at debug level and ignored,
/// as `sd_notify` callers do.
pub fn notify(state: &str) {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    if let Err(e) = send(&path, state) {
        tracing::debug!("sd_notify to {}: {e}", path.to_string_lossy());
    }
}

fn send(path: &std::ffi::OsStr, state: &str) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_bytes();
    let addr = match bytes.split_first() {
        // "@name": a socket in the abstract namespace (systemd's own form).
        Some((b'@', name)) => {
            use std::os::linux::net::SocketAddrExt;
            SocketAddr::from_abstract_name(name)?
        }
        Some((b'/', _)) => SocketAddr::from_pathname(path)?,
        _ => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "NOTIFY_SOCKET is neither a path nor an @abstract name",
            ))
        }
    };
    let socket = UnixDatagram::unbound()?;
    socket.send_to_addr(state.as_bytes(), &addr)?;
    Ok(())
}

/// Tells the manager a reload began (`READY=1` follows when it ends). No
/// `MONOTONIC_USEC=`: only `Type=notify-reload` (systemd 253+) needs it, and
/// the unit is `Type=notify` with `ExecReload=lode reload`, which waits.
pub(crate) fn reloading() {
    notify("RELOADING=1\nSTATUS=reloading");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reaches_a_path_and_an_abstract_socket() {
        let dir = std::env::temp_dir().join(format!("lode-sdnotify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("notify");
        let _ = std::fs::remove_file(&path);
        let rx = UnixDatagram::bind(&path).unwrap();
        send(path.as_os_str(), "READY=1").unwrap();
        let mut buf = [0u8; 64];
        let n = rx.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");
        std::fs::remove_dir_all(&dir).unwrap();

        use std::os::linux::net::SocketAddrExt;
        let name = format!("lode-sdnotify-test-{}", std::process::id());
        let rx = UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(&name).unwrap()).unwrap();
        send(std::ffi::OsStr::new(&format!("@{name}")), "STOPPING=1").unwrap();
        let n = rx.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"STOPPING=1");
        assert!(send(std::ffi::OsStr::new("relative"), "X=1").is_err());
    }
}
