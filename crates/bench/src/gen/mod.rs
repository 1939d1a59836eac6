//! Data-set generators: ENUM zones (the ENUM study's sets), the dns64perf namespace
//! (RFC 8219 self-test, as the DNS64 benchmark study uses it) and a TLD-shaped zone with update
//! streams, each with query files in dnsperf format.
//!
//! Every line is built from a template updated in place and appended to a
//! large buffer: no allocation and no formatting machinery per record.

pub mod dns64perf;
pub mod enumset;
pub mod tld;

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Why a data set could not be generated.
#[derive(Debug)]
#[non_exhaustive]
pub enum GenError {
    /// Writing a file failed.
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// The requested layout is impossible (too many records for the digits, …).
    Layout(String),
}

impl std::fmt::Display for GenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GenError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            GenError::Layout(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for GenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            GenError::Io { source, .. } => Some(source),
            GenError::Layout(_) => None,
        }
    }
}

/// Size at which a [`LineSink`] hands its buffer to the kernel.
const SINK_CHUNK: usize = 1 << 20;

/// A file written through one large buffer (a `BufWriter` without the per-call checks).
#[derive(Debug)]
pub(crate) struct LineSink {
    path: PathBuf,
    file: File,
    buf: Vec<u8>,
}

impl LineSink {
    /// Creates (truncates) the file.
    pub(crate) fn create(path: &Path) -> Result<LineSink, GenError> {
        let file = File::create(path).map_err(|source| GenError::Io {
            path: path.to_owned(),
            source,
        })?;
        Ok(LineSink {
            path: path.to_owned(),
            file,
            buf: Vec::with_capacity(SINK_CHUNK + 4096),
        })
    }

    /// Appends bytes, writing the buffer out when it is full.
    #[inline]
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<(), GenError> {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= SINK_CHUNK {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes out what is buffered.
    fn flush(&mut self) -> Result<(), GenError> {
        let r = self.file.write_all(&self.buf);
        self.buf.clear();
        r.map_err(|source| GenError::Io {
            path: self.path.clone(),
            source,
        })
    }

    /// Writes out the rest and closes the file.
    pub(crate) fn finish(mut self) -> Result<(), GenError> {
        self.flush()
    }
}

/// A bijection of `0..n` that spreads consecutive indexes apart (an affine map
/// modulo `n`), so query files visit names in a cache-unfriendly order without
/// holding a shuffled array in memory.
#[derive(Debug, Clone, Copy)]
pub struct Scatter {
    n: u64,
    mul: u64,
    add: u64,
}

impl Scatter {
    /// A scatter of `0..n` (`n` ≥ 1), chosen from `seed`.
    pub fn new(n: u64, seed: u64) -> Scatter {
        let n = n.max(1);
        // Start near n / golden ratio and move up to the first multiplier coprime with n.
        let mut mul = ((n as u128 * 0x9E37_79B9_7F4A_7C15u128) >> 64) as u64 | 1;
        mul %= n;
        while n > 1 && gcd(mul, n) != 1 {
            mul = (mul + 1) % n;
        }
        let add = seed.wrapping_mul(0xD6E8_FEB8_6659_FD93) % n;
        Scatter { n, mul, add }
    }

    /// The image of `i` (`i < n`).
    #[inline]
    pub fn map(&self, i: u64) -> u64 {
        ((i as u128 * self.mul as u128 + self.add as u128) % self.n as u128) as u64
    }
}

/// Greatest common divisor.
fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Creates the output directory.
pub(crate) fn create_dir(dir: &Path) -> Result<(), GenError> {
    std::fs::create_dir_all(dir).map_err(|source| GenError::Io {
        path: dir.to_owned(),
        source,
    })
}

/// Runs `jobs` on up to `threads` threads; returns the first error.
pub(crate) fn run_jobs<J, F>(jobs: Vec<J>, threads: usize, work: F) -> Result<(), GenError>
where
    J: Send,
    F: Fn(J) -> Result<(), GenError> + Sync,
{
    let queue = std::sync::Mutex::new(jobs);
    let first_error = std::sync::Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| loop {
                let job = match queue.lock() {
                    Ok(mut q) => q.pop(),
                    Err(_) => None,
                };
                let Some(job) = job else { break };
                if let Err(e) = work(job) {
                    if let Ok(mut slot) = first_error.lock() {
                        slot.get_or_insert(e);
                    }
                }
            });
        }
    });
    match first_error.into_inner() {
        Ok(Some(e)) => Err(e),
        _ => Ok(()),
    }
}

/// Threads to use for generation: the machine's parallelism.
pub(crate) fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Writes the configurations that serve the generated `zones` (apex, file):
/// a Knot DNS `zone:` section to include (`knot-zones.conf`) and a Lode
/// configuration (`lode.toml`, for `lode serve --config`). Returns both paths.
pub(crate) fn write_server_configs(
    dir: &Path,
    generator: &str,
    zones: &[(String, PathBuf)],
) -> Result<(PathBuf, PathBuf), GenError> {
    let knot_conf = dir.join("knot-zones.conf");
    let mut knot = LineSink::create(&knot_conf)?;
    knot.push(
        format!(
            "# Generated by lode-bench gen {generator}: include from a knotd configuration.\nzone:\n"
        )
        .as_bytes(),
    )?;
    let lode_conf = dir.join("lode.toml");
    let mut lode = LineSink::create(&lode_conf)?;
    lode.push(
        format!(
            "# Generated by lode-bench gen {generator}: lode serve --config {}\n\
             # (listens on 127.0.0.1:5300 and [::1]:5300 unless `listen` or --listen says otherwise)\n",
            lode_conf.display()
        )
        .as_bytes(),
    )?;
    for (apex, file) in zones {
        let path = file.display();
        knot.push(format!("  - domain: {apex}\n    file: \"{path}\"\n").as_bytes())?;
        lode.push(format!("\n[[zone]]\nname = \"{apex}\"\nfile = \"{path}\"\n").as_bytes())?;
    }
    knot.finish()?;
    lode.finish()?;
    Ok((knot_conf, lode_conf))
}

/// A scratch directory for the generators' tests, removed when dropped.
#[cfg(test)]
pub(crate) struct Scratch(pub(crate) PathBuf);

#[cfg(test)]
impl Scratch {
    /// A fresh directory below the temporary directory, named for the process and `tag`.
    pub(crate) fn new(tag: &str) -> Scratch {
        let p = std::env::temp_dir().join(format!("lode-bench-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        Scratch(p)
    }
}

#[cfg(test)]
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scatter_is_a_permutation() {
        for n in [1u64, 2, 3, 10, 97, 100, 1000, 4096] {
            let s = Scatter::new(n, 7);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let j = s.map(i) as usize;
                assert!(!seen[j], "n={n}: {j} twice");
                seen[j] = true;
            }
            if n >= 10 {
                assert_ne!(s.map(1), (s.map(0) + 1) % n, "n={n}: not scattered");
            }
        }
    }
}
