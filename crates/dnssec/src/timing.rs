//! A key's life: its role, the times of its events, the state they put it
//! in, and what it does at a given moment (Knot DNS 3.2's key timers and
//! states, the semantics of RFC 6781 and RFC 7583).
//!
//! ```text
//!  ZSK:  publish ──▶ active ─────────────────────▶ retire ──▶ remove
//!        (DNSKEY)    (signs the zone)               (published, signs nothing)
//!  KSK:  publish ──▶ ready ──(DS seen / submitted)──▶ active ──▶ retire-active ──▶ remove
//!        (DNSKEY, signs it) (CDS/CDNSKEY published)            (still signs DNSKEY)
//!  algorithm rollover: pre-active (signs, not published) … post-active (signs, not published)
//! ```
//!
//! A time not set is "never". Times are Unix seconds.

use std::fmt;

/// What a key signs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Key signing key: the DNSKEY, CDS and CDNSKEY RRsets; the parent's DS points at it.
    Ksk,
    /// Zone signing key: everything else.
    Zsk,
    /// Combined signing key (single-type signing): both.
    Csk,
}

impl Role {
    /// Signs the key RRsets (and the DS points at it).
    pub fn is_ksk(self) -> bool {
        matches!(self, Role::Ksk | Role::Csk)
    }
    /// Signs the zone's other RRsets.
    pub fn is_zsk(self) -> bool {
        matches!(self, Role::Zsk | Role::Csk)
    }
    /// Its name in key files and lists.
    pub fn name(self) -> &'static str {
        match self {
            Role::Ksk => "KSK",
            Role::Zsk => "ZSK",
            Role::Csk => "CSK",
        }
    }
    /// The role of a name (`ksk`, `zsk`, `csk`, any case).
    pub fn parse(text: &str) -> Option<Role> {
        Some(match text.to_ascii_lowercase().as_str() {
            "ksk" => Role::Ksk,
            "zsk" => Role::Zsk,
            "csk" => Role::Csk,
            _ => return None,
        })
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The times of a key's events (Knot's names; None: never).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timing {
    /// Algorithm rollover: signs before it is published.
    pub pre_active: Option<u64>,
    /// In the DNSKEY RRset from then on.
    pub publish: Option<u64>,
    /// KSK: cached everywhere; waits for the parent's DS (CDS published).
    pub ready: Option<u64>,
    /// Signs (its role) from then on.
    pub active: Option<u64>,
    /// KSK: replaced, still signs the DNSKEY RRset until removed.
    pub retire_active: Option<u64>,
    /// Signs nothing from then on (ZSK, CSK: still published).
    pub retire: Option<u64>,
    /// Algorithm rollover: out of the DNSKEY RRset, still signs.
    pub post_active: Option<u64>,
    /// Out of the DNSKEY RRset from then on.
    pub remove: Option<u64>,
    /// Lode's: when the writer found the zone's signatures matching the
    /// key's state after it last changed (signatures are replaced a batch
    /// at a time, not at once): a pre-active key's publication and a
    /// retired ZSK's removal count from it.
    pub settled: Option<u64>,
}

/// A key's state at a moment (Knot's `get_key_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyState {
    /// Made, no event yet.
    Waiting,
    /// Algorithm rollover: signing, not yet published.
    PreActive,
    /// Published, not yet signing (ZSK) or not yet ready (KSK).
    Published,
    /// KSK: published long enough; waiting for the parent's DS.
    Ready,
    /// Signing.
    Active,
    /// KSK: replaced; still signs the DNSKEY RRset.
    RetireActive,
    /// Signs nothing; ZSK and CSK still published.
    Retired,
    /// Algorithm rollover: out of the DNSKEY RRset, still signs.
    PostActive,
    /// Out of the zone; its file is deleted after `delete-delay`.
    Removed,
}

impl KeyState {
    /// The state's name as Knot's keymgr prints it.
    pub fn name(self) -> &'static str {
        match self {
            KeyState::Waiting => "waiting",
            KeyState::PreActive => "pre-active",
            KeyState::Published => "published",
            KeyState::Ready => "ready",
            KeyState::Active => "active",
            KeyState::RetireActive => "retire-active",
            KeyState::Retired => "retired",
            KeyState::PostActive => "post-active",
            KeyState::Removed => "removed",
        }
    }
}

impl fmt::Display for KeyState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `t` has come by `now` (None never comes).
pub(crate) fn by(t: Option<u64>, now: u64) -> bool {
    t.is_some_and(|t| t <= now)
}

impl Timing {
    /// The state at `now`.
    pub fn state(&self, now: u64) -> KeyState {
        if by(self.remove, now) {
            KeyState::Removed
        } else if by(self.post_active, now) {
            KeyState::PostActive
        } else if by(self.retire, now) {
            KeyState::Retired
        } else if by(self.retire_active, now) {
            KeyState::RetireActive
        } else if by(self.active, now) {
            KeyState::Active
        } else if by(self.ready, now) {
            KeyState::Ready
        } else if by(self.publish, now) {
            KeyState::Published
        } else if by(self.pre_active, now) {
            KeyState::PreActive
        } else {
            KeyState::Waiting
        }
    }

    /// The first of its times after `now`.
    pub fn next_after(&self, now: u64) -> Option<u64> {
        [
            self.pre_active,
            self.publish,
            self.ready,
            self.active,
            self.retire_active,
            self.retire,
            self.post_active,
            self.remove,
        ]
        .into_iter()
        .flatten()
        .filter(|&t| t > now)
        .min()
    }

    /// The timing of a key from before timers (key files without them, keys
    /// imported without any): published and signing since it was made.
    pub fn since(created: u64) -> Timing {
        Timing {
            publish: Some(created),
            active: Some(created),
            ..Timing::default()
        }
    }

    /// The fields as `(name, time)` in key-file order.
    pub fn fields(&self) -> [(&'static str, Option<u64>); 9] {
        [
            ("pre-active", self.pre_active),
            ("publish", self.publish),
            ("ready", self.ready),
            ("active", self.active),
            ("retire-active", self.retire_active),
            ("retire", self.retire),
            ("post-active", self.post_active),
            ("remove", self.remove),
            ("settled", self.settled),
        ]
    }

    /// The field of a key-file name.
    pub fn field_mut(&mut self, name: &str) -> Option<&mut Option<u64>> {
        Some(match name {
            "pre-active" => &mut self.pre_active,
            "publish" => &mut self.publish,
            "ready" => &mut self.ready,
            "active" => &mut self.active,
            "retire-active" => &mut self.retire_active,
            "retire" => &mut self.retire,
            "post-active" => &mut self.post_active,
            "remove" => &mut self.remove,
            "settled" => &mut self.settled,
            _ => return None,
        })
    }
}

/// What a key does at a moment (Knot's `set_key` and
/// `knot_zone_sign_use_key`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// In the DNSKEY RRset.
    pub public: bool,
    /// Signs the DNSKEY, CDS and CDNSKEY RRsets.
    pub signs_keys: bool,
    /// Signs every other RRset.
    pub signs_zone: bool,
    /// A KSK waiting for its DS at the parent (CDS/CDNSKEY candidates).
    pub ready: bool,
    /// A KSK the parent's DS points at now.
    pub active_ksk: bool,
}

/// What each of `keys` (role, algorithm number, timing) does at `now`.
pub fn usage(keys: &[(Role, u8, Timing)], now: u64) -> Vec<Usage> {
    let active = |t: &Timing| {
        by(t.active, now) && !by(t.retire, now) && !by(t.retire_active, now) && !by(t.remove, now)
    };
    keys.iter()
        .map(|(role, alg, t)| {
            let (ksk, zsk) = (role.is_ksk(), role.is_zsk());
            let same_alg_active_zsk = keys
                .iter()
                .any(|(r, a, o)| r.is_zsk() && a == alg && active(o));
            let mut public = by(t.publish, now) && !by(t.post_active, now) && !by(t.remove, now);
            let is_active = active(t);
            let ready = ksk && by(t.ready, now) && !by(t.active, now);
            let mut ksk_plus = public && ksk && !is_active;
            let mut zsk_plus = ready && !same_alg_active_zsk;
            let gone = by(t.remove, now);
            if by(t.pre_active, now) && !by(t.ready, now) && !by(t.active, now) && !gone {
                zsk_plus = zsk;
            }
            if by(t.retire, now) && !gone {
                ksk_plus = false;
                public = zsk;
            }
            if by(t.retire_active, now) && !by(t.retire, now) && !gone {
                ksk_plus = ksk;
                zsk_plus = !same_alg_active_zsk;
            }
            if by(t.post_active, now) && !gone {
                ksk_plus = false;
                zsk_plus = zsk;
            }
            Usage {
                public,
                signs_keys: ksk && (is_active || ksk_plus),
                signs_zone: zsk && (is_active || zsk_plus),
                ready,
                active_ksk: ksk && is_active,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_follow_the_timers() {
        let t = Timing {
            publish: Some(10),
            active: Some(20),
            retire: Some(30),
            remove: Some(40),
            ..Timing::default()
        };
        assert_eq!(t.state(5), KeyState::Waiting);
        assert_eq!(t.state(10), KeyState::Published);
        assert_eq!(t.state(25), KeyState::Active);
        assert_eq!(t.state(30), KeyState::Retired);
        assert_eq!(t.state(40), KeyState::Removed);
        assert_eq!(t.next_after(25), Some(30));
        assert_eq!(t.next_after(40), None);
    }

    #[test]
    fn a_zsk_rollover_keeps_one_signer_and_both_published() {
        let old = Timing {
            publish: Some(0),
            active: Some(0),
            retire: Some(100),
            remove: Some(200),
            ..Timing::default()
        };
        let new = Timing {
            publish: Some(50),
            active: Some(100),
            ..Timing::default()
        };
        let at = |now| usage(&[(Role::Zsk, 13, old), (Role::Zsk, 13, new)], now);
        // Pre-publish: the new one published, the old one signs.
        let u = at(60);
        assert!(u[0].public && u[0].signs_zone && u[1].public && !u[1].signs_zone);
        // Replaced: the new one signs, the old one stays published.
        let u = at(150);
        assert!(u[0].public && !u[0].signs_zone && u[1].signs_zone);
        // Removed.
        let u = at(200);
        assert!(!u[0].public && u[1].public);
    }

    #[test]
    fn a_new_ksk_signs_the_keys_while_published_and_waits_ready() {
        let old = Timing {
            publish: Some(0),
            active: Some(0),
            ..Timing::default()
        };
        let new = Timing {
            publish: Some(50),
            ready: Some(100),
            ..Timing::default()
        };
        let u = usage(&[(Role::Ksk, 13, old), (Role::Ksk, 13, new)], 120);
        // Double signature: both sign the DNSKEY RRset; the new one is ready.
        assert!(u[0].signs_keys && u[1].signs_keys && u[1].ready && !u[0].ready);
        assert!(u[0].active_ksk && !u[1].active_ksk);
        assert!(!u[0].signs_zone && !u[1].signs_zone);
        // A CSK signs the zone too.
        let u = usage(&[(Role::Csk, 13, old)], 120);
        assert!(u[0].signs_keys && u[0].signs_zone);
    }
}
