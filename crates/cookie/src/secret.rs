//! Server secrets: the current one and, after a rotation, the previous one;
//! shared by every worker and rotated from another thread without locks.

use std::fmt;
use std::sync::Arc;

use arc_swap::ArcSwap;

/// Length of a server secret: SipHash-2-4's key (RFC 9018 §4.4).
pub const SECRET_LEN: usize = 16;

/// The server secrets a cookie is checked against.
///
/// New cookies are made with `current`; a cookie made with `previous` still
/// verifies, so a rotation does not invalidate the cookies in flight (RFC
/// 9018 §4.4, and A.4). Knot 3.2 keeps no previous secret: use
/// [`Secrets::replace`] for that behaviour.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Secrets {
    current: [u8; SECRET_LEN],
    previous: Option<[u8; SECRET_LEN]>,
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The secrets themselves stay out of logs.
        f.debug_struct("Secrets")
            .field("previous", &self.previous.is_some())
            .finish_non_exhaustive()
    }
}

impl Secrets {
    /// Secrets with `current` only.
    pub fn new(current: [u8; SECRET_LEN]) -> Self {
        Secrets {
            current,
            previous: None,
        }
    }

    /// Secrets with a random current secret from the operating system.
    pub fn random() -> Result<Self, RandomError> {
        Ok(Secrets::new(random_secret()?))
    }

    /// Makes `next` current and keeps the current one as previous (the one
    /// before it is forgotten: its cookies no longer verify).
    pub fn rotate(&mut self, next: [u8; SECRET_LEN]) {
        self.previous = Some(self.current);
        self.current = next;
    }

    /// Makes `next` current and forgets the others, as Knot 3.2 does on its
    /// secret rollover: every cookie made before no longer verifies.
    pub fn replace(&mut self, next: [u8; SECRET_LEN]) {
        *self = Secrets::new(next);
    }

    /// The secret new cookies are made with.
    pub fn current(&self) -> &[u8; SECRET_LEN] {
        &self.current
    }

    /// The secret before the last rotation, if any.
    pub fn previous(&self) -> Option<&[u8; SECRET_LEN]> {
        self.previous.as_ref()
    }
}

/// The operating system could not give random bytes for a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RandomError {
    /// The OS random source failed; the text is its error.
    Unavailable(String),
}

impl fmt::Display for RandomError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RandomError::Unavailable(e) => write!(f, "no random bytes for a cookie secret: {e}"),
        }
    }
}

impl std::error::Error for RandomError {}

/// 16 random bytes from the operating system, for a secret.
pub fn random_secret() -> Result<[u8; SECRET_LEN], RandomError> {
    let mut secret = [0u8; SECRET_LEN];
    getrandom::fill(&mut secret).map_err(|e| RandomError::Unavailable(e.to_string()))?;
    Ok(secret)
}

/// [`Secrets`] shared by all workers: a copy is loaded per query without a
/// lock, and another thread rotates them.
///
/// Built on `arc_swap` (already the workspace's way to publish a ZoneSet):
/// a load takes no lock, does not allocate and does not touch a shared
/// reference count in the common case; a rotation allocates one small `Arc`,
/// which happens once a day or so. A seqlock of four atomics would do as
/// well for 33 bytes, but would be hand-written concurrency for no gain.
#[derive(Debug)]
pub struct SharedSecrets {
    inner: ArcSwap<Secrets>,
}

impl SharedSecrets {
    /// Shares `secrets`.
    pub fn new(secrets: Secrets) -> Self {
        SharedSecrets {
            inner: ArcSwap::from_pointee(secrets),
        }
    }

    /// A copy of the secrets in force now (cheap: 33 bytes, no lock).
    pub fn load(&self) -> Secrets {
        **self.inner.load()
    }

    /// [`Secrets::rotate`] on the shared secrets (safe against a concurrent rotation).
    pub fn rotate(&self, next: [u8; SECRET_LEN]) {
        self.inner.rcu(|s| {
            let mut n = **s;
            n.rotate(next);
            n
        });
    }

    /// [`Secrets::replace`] on the shared secrets (Knot 3.2's rollover).
    pub fn replace(&self, next: [u8; SECRET_LEN]) {
        self.inner.store(Arc::new(Secrets::new(next)));
    }

    /// Rotates to a fresh random secret.
    pub fn rotate_random(&self) -> Result<(), RandomError> {
        self.rotate(random_secret()?);
        Ok(())
    }

    /// Sets the secrets as given (e.g. a configured secret on reload).
    pub fn store(&self, secrets: Secrets) {
        self.inner.store(Arc::new(secrets));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotate_keeps_one_previous() {
        let mut s = Secrets::new([1; 16]);
        assert_eq!(s.previous(), None);
        s.rotate([2; 16]);
        assert_eq!((s.current(), s.previous()), (&[2; 16], Some(&[1; 16])));
        s.rotate([3; 16]);
        assert_eq!((s.current(), s.previous()), (&[3; 16], Some(&[2; 16])));
        s.replace([4; 16]);
        assert_eq!((s.current(), s.previous()), (&[4; 16], None));
    }

    #[test]
    fn random_secrets_differ() {
        let a = Secrets::random().unwrap();
        let b = Secrets::random().unwrap();
        assert_ne!(a.current(), b.current());
    }

    #[test]
    fn debug_hides_secrets() {
        let s = format!("{:?}", Secrets::new([0xAB; 16]));
        assert!(
            !s.contains("171") && !s.to_lowercase().contains("ab,"),
            "{s}"
        );
    }

    #[test]
    fn shared_rotation_seen_by_other_threads() {
        let shared = Arc::new(SharedSecrets::new(Secrets::new([1; 16])));
        let reader = {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || loop {
                let s = shared.load();
                if s.current() == &[2; 16] {
                    assert_eq!(s.previous(), Some(&[1; 16]));
                    break;
                }
                std::thread::yield_now();
            })
        };
        shared.rotate([2; 16]);
        reader.join().unwrap();
        shared.replace([3; 16]);
        assert_eq!(shared.load(), Secrets::new([3; 16]));
        shared.rotate_random().unwrap();
        assert_eq!(shared.load().previous(), Some(&[3; 16]));
    }
}
