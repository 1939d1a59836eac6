//! The control socket: a Unix stream socket (mode 0660: the server's user and
//! group, as knotc's) taking one command per connection and answering in text.
//!
//! ```text
//!  client: "reload\n"            server: "OK\n<details>…"   or "ERROR\n<file:line: reason>…"
//!  client: "status\n"            server: "OK\n<zones, counters, memory>…"
//!  client: "zone-flush [NAME]\n" server: "OK\nzone NAME: N records, serial S, written to PATH…"
//!  client: "zone-reload NAME\n" server: "OK\nzone NAME: reloaded, serial S, …" or "ERROR\n…"
//!  client: "zone-freeze [NAME…]\n" server: "OK\nzone NAME: frozen: …"  (zone-thaw alike)
//!  client: "stop\n"              server: "OK\nstopping (pid N)\n", then stops as on SIGTERM
//! ```
//!
//! The first line of an answer is `OK` or `ERROR`; the server closes the
//! connection after answering. `stop` is answered here, not by the command
//! table: only once the answer is written does the server begin to stop,
//! and only a server run by [`crate::Server::run_until_signal`] (a daemon,
//! not a library user's server) takes it.

// The commands behind the socket: reload (zone files and the configuration
// read again), status and stats (`scrape`).
mod backup;
mod changes;
mod freeze;
mod purge;
pub(crate) mod reload;
pub(crate) mod scrape;
pub(crate) mod status;
mod zonedata;

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// The answer to a control command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// True for `OK`.
    pub ok: bool,
    /// The lines after the first.
    pub text: String,
}

impl Reply {
    fn render(&self) -> String {
        let mut s = String::from(if self.ok { "OK\n" } else { "ERROR\n" });
        s.push_str(&self.text);
        if !s.ends_with('\n') {
            s.push('\n');
        }
        s
    }
}

/// Sends `command` to the server listening at `path` and returns its answer.
pub fn request(path: &Path, command: &str, timeout: Duration) -> io::Result<Reply> {
    let mut stream = UnixStream::connect(path)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    stream.write_all(command.trim().as_bytes())?;
    stream.write_all(b"\n")?;
    let mut text = String::new();
    stream.read_to_string(&mut text)?;
    let (first, rest) = text.split_once('\n').unwrap_or((text.as_str(), ""));
    match first.trim_end() {
        "OK" => Ok(Reply {
            ok: true,
            text: rest.to_owned(),
        }),
        "ERROR" => Ok(Reply {
            ok: false,
            text: rest.to_owned(),
        }),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("unexpected answer from the server: {first:?}"),
        )),
    }
}

/// What the control socket calls for each command (`None`: unknown command).
pub(crate) type Dispatch = Arc<dyn Fn(&str) -> Option<Reply> + Send + Sync>;

/// What `stop` on the control socket ends: the signal loop of
/// [`crate::Server::run_until_signal`], once it runs (before, and in a
/// server used as a library, `stop` is refused).
#[derive(Debug, Default)]
pub(crate) struct Stopper(Mutex<Option<signal_hook::iterator::Handle>>);

impl Stopper {
    /// From now on `stop` closes `signals` (the loop then stops the server).
    pub(crate) fn arm(&self, signals: signal_hook::iterator::Handle) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(signals);
    }

    fn armed(&self) -> bool {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    fn stop(&self) {
        if let Some(h) = self.0.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            h.close();
        }
    }
}

/// Why the control socket is not served.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ControlError {
    /// A live server answers on the socket.
    #[error("{} is in use by another running server", .0.display())]
    InUse(PathBuf),
    /// A step on the socket or its folder: what was done ("cannot bind"),
    /// the file, the system's error.
    #[error("{what} {}: {source}", .path.display())]
    Socket {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    /// The thread that serves it did not start.
    #[error("cannot start the control thread: {0}")]
    Thread(#[source] std::io::Error),
}

/// A running control socket.
#[derive(Debug)]
pub(crate) struct ControlServer {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ControlServer {
    /// Binds `path` (replacing a stale socket, refusing a live one) and serves it.
    pub(crate) fn start(
        path: &Path,
        dispatch: Dispatch,
        stopper: Arc<Stopper>,
    ) -> Result<ControlServer, ControlError> {
        let failed = |what, path: &Path| {
            let path = path.to_path_buf();
            move |source| ControlError::Socket { what, path, source }
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(failed("cannot create", dir))?;
        }
        if path.exists() {
            if in_use(path) {
                return Err(ControlError::InUse(path.to_path_buf()));
            }
            std::fs::remove_file(path).map_err(failed("cannot remove stale", path))?;
        }
        let listener = UnixListener::bind(path).map_err(failed("cannot bind", path))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660))
            .map_err(failed("cannot restrict", path))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let thread = std::thread::Builder::new()
            .name("lode-control".into())
            .spawn(move || serve(listener, stop2, dispatch, stopper))
            .map_err(ControlError::Thread)?;
        Ok(ControlServer {
            path: path.to_owned(),
            stop,
            thread: Some(thread),
        })
    }

    /// Stops serving and removes the socket file.
    pub(crate) fn stop(&mut self) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        self.stop.store(true, Ordering::Relaxed);
        // Wake the blocking accept.
        let _ = UnixStream::connect(&self.path);
        let _ = thread.join();
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn serve(listener: UnixListener, stop: Arc<AtomicBool>, dispatch: Dispatch, stopper: Arc<Stopper>) {
    for conn in listener.incoming() {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        match conn {
            Ok(stream) => {
                // One thread per command, so that `status` answers during a long reload.
                let dispatch = dispatch.clone();
                let stopper = stopper.clone();
                let spawned = std::thread::Builder::new()
                    .name("lode-control-conn".into())
                    .spawn(move || {
                        match handle(stream, &dispatch, &stopper) {
                            Ok(()) => {}
                            // A client that went away before its answer (a
                            // second server probing whether the socket is
                            // live, an interrupted `lode` command).
                            Err(e) if gone(&e) => tracing::debug!("control: {e}"),
                            Err(e) => tracing::warn!("control: {e}"),
                        }
                    });
                if let Err(e) = spawned {
                    tracing::warn!("control: cannot start a thread: {e}");
                }
            }
            Err(e) => {
                tracing::warn!("control: accept failed: {e}");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

/// True for errors that only say the client closed its end.
fn gone(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset | io::ErrorKind::UnexpectedEof
    )
}

/// The commands, for the answer to an unknown one.
const COMMANDS: &str =
    "status, stats [--json], stop, reload, zone-reload NAME, zone-status [NAME], \
     zone-flush [NAME], zone-refresh NAME, zone-retransfer NAME, zone-notify NAME, zone-read ZONE [OWNER|- [TYPE]], zone-sign NAME, zone-keys-load NAME, \
     zone-key-rollover NAME ksk|zsk, zone-ksk-submitted NAME [DS-TTL]";

fn handle(stream: UnixStream, dispatch: &Dispatch, stopper: &Stopper) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut line = String::new();
    BufReader::new((&stream).take(1024)).read_line(&mut line)?;
    let command = line.trim();
    if command == "stop" {
        return stop(stream, stopper);
    }
    let reply = dispatch(command).unwrap_or_else(|| Reply {
        ok: false,
        text: format!("unknown command {command:?} (commands: {COMMANDS})"),
    });
    (&stream).write_all(reply.render().as_bytes())
}

/// `stop`: answers, then ends the signal loop, which stops the server as
/// SIGTERM does.
fn stop(stream: UnixStream, stopper: &Stopper) -> io::Result<()> {
    if !stopper.armed() {
        let reply = Reply {
            ok: false,
            text: "stop: this server is not run as a daemon (`lode serve`); \
                   it stops when the program that started it stops it"
                .into(),
        };
        return (&stream).write_all(reply.render().as_bytes());
    }
    tracing::info!("stop requested on the control socket, stopping");
    let reply = Reply {
        ok: true,
        text: format!("stopping (pid {})", std::process::id()),
    };
    let written = (&stream).write_all(reply.render().as_bytes());
    drop(stream);
    stopper.stop();
    written
}

/// Changes the process's log level (the binary's logger, which the server
/// does not own); set once by `lode serve`. Its error is the logger's own.
type LogLevelHook =
    Box<dyn Fn(&str) -> Result<(), Box<dyn std::error::Error + Send + Sync>> + Send + Sync>;

static LOG_LEVEL_HOOK: std::sync::OnceLock<LogLevelHook> = std::sync::OnceLock::new();

/// Why the log level was not changed: the binary's logger refused the
/// level (not a level or filter it reads) or could not take it.
#[derive(Debug, thiserror::Error)]
#[error("{level:?}: {source}")]
pub(crate) struct LogLevelError {
    level: String,
    source: Box<dyn std::error::Error + Send + Sync>,
}

/// Lets a reload change the log level: `set` is called with the new level
/// (error, warn, info, debug or trace). Without it, `log-level` takes
/// effect at restart. The first call wins.
pub fn on_log_level_change(
    set: impl Fn(&str) -> Result<(), Box<dyn std::error::Error + Send + Sync>> + Send + Sync + 'static,
) {
    let _ = LOG_LEVEL_HOOK.set(Box::new(set));
}

/// Sets the log level through the hook; false when there is none.
pub(crate) fn change_log_level(level: &str) -> Result<bool, LogLevelError> {
    match LOG_LEVEL_HOOK.get() {
        Some(set) => set(level).map(|()| true).map_err(|source| LogLevelError {
            level: level.into(),
            source,
        }),
        None => Ok(false),
    }
}

/// True when a reload can change the log level.
pub(crate) fn change_log_level_possible() -> bool {
    LOG_LEVEL_HOOK.get().is_some()
}

/// True when a running server listens on the control socket at `path`.
pub(crate) fn in_use(path: &Path) -> bool {
    UnixStream::connect(path).is_ok()
}
