//! Key rollovers by the policy's timers: which key event comes next, and
//! doing it (Knot DNS 3.2's key events, RFC 6781 methods with RFC 7583
//! timings).
//!
//! ```text
//!  ZSK (pre-publish):  generate+publish ─(propagation + DNSKEY TTL)─▶ new active, old retired
//!                      ─(the zone re-signed, then propagation + max TTL)─▶ old removed
//!  KSK (double signature): generate+publish (signs DNSKEY) ─(propagation + DNSKEY TTL)─▶ ready
//!                      (CDS/CDNSKEY published) ─(the parent's DS: zone-ksk-submitted)─▶
//!                      new active, old retire-active ─(DS TTL)─▶ old removed
//!  CSK: as KSK; the old one retired (still published) until the zone is re-signed + max TTL
//!  algorithm: new KSK+ZSK pre-active (sign, unpublished) ─(re-signed + propagation + max TTL)─▶
//!             published ─▶ KSK ready ─(DS)─▶ new active; old post-active (sign, unpublished)
//!             ─(propagation + DNSKEY TTL)─▶ old removed
//! ```
//!
//! Where Knot re-signs the whole zone at once when a new ZSK becomes active,
//! Lode replaces the signatures a batch at a time; the steps that wait for
//! every signature to be in place (a pre-active key's publication, an old
//! ZSK's removal) count from when the writer found the zone re-signed
//! ([`Timing::settled`]).
//!
//! Pure but for the key generator passed in: `now` is an argument.

use crate::key::{Algorithm, KeyError, SigningKey};
use crate::timing::{by, KeyState, Role, Timing};

/// The policy's key settings (Knot's names; seconds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPolicy {
    /// Keys are left as they are: no automatic events (Knot's `manual`).
    pub manual: bool,
    /// One combined signing key (CSK) instead of a KSK and a ZSK.
    pub single_type: bool,
    /// Algorithm of new keys; a change starts an algorithm rollover.
    pub algorithm: Algorithm,
    /// Bits of a new KSK (or CSK) and ZSK (RSA; None: the default).
    pub ksk_size: Option<u32>,
    /// (see `ksk_size`)
    pub zsk_size: Option<u32>,
    /// Extra delay of each step (Knot's default one hour).
    pub propagation_delay: u64,
    /// From a ZSK's activation to the next ZSK rollover (0: never; Knot's 30 days).
    pub zsk_lifetime: u64,
    /// From a KSK's creation to the next KSK rollover (0: never, Knot's default).
    pub ksk_lifetime: u64,
    /// A removed key's file is deleted this long after (Knot's 0).
    pub delete_delay: u64,
    /// A ready KSK becomes active by itself this long after (0: only when
    /// the parent's DS is confirmed).
    pub submission_timeout: u64,
    /// Offline KSK (Knot's `offline-ksk`): no KSK here; the ZSKs and
    /// their timers are made ahead ([`pregenerate`]) and followed as they
    /// are, the key records come from a signed key response.
    pub offline_ksk: bool,
}

impl Default for KeyPolicy {
    fn default() -> Self {
        KeyPolicy {
            manual: false,
            single_type: false,
            algorithm: Algorithm::EcdsaP256,
            ksk_size: None,
            zsk_size: None,
            propagation_delay: 3600,
            zsk_lifetime: 30 * 86400,
            ksk_lifetime: 0,
            delete_delay: 0,
            submission_timeout: 0,
            offline_ksk: false,
        }
    }
}

/// The zone's TTLs the timings need.
#[derive(Debug, Clone, Copy)]
pub struct Ttls {
    /// The DNSKEY TTL.
    pub dnskey: u64,
    /// The largest TTL in the zone.
    pub max: u64,
}

/// What set the planner going.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// A timer (or a start): do what is due.
    Timers,
    /// `zone-key-rollover`: start a rollover of this kind now.
    Roll(Role),
    /// `zone-ksk-submitted`: the parent serves the ready KSK's DS; the old
    /// KSK goes after `ds_ttl` seconds.
    Submitted {
        /// The parent's DS TTL (and any delay on top).
        ds_ttl: u64,
    },
}

/// What the planner did.
#[derive(Debug, Default)]
pub struct Plan {
    /// Keys changed or made (indexes into the keys after the call): their
    /// files are to be written.
    pub changed: Vec<usize>,
    /// Keys whose time is over: their files are to be deleted.
    pub deleted: Vec<SigningKey>,
    /// What happened, one line each, for the log.
    pub log: Vec<String>,
    /// The next key action: (when, what).
    pub next: Option<(u64, String)>,
    /// A ready KSK waits for its DS at the parent (its tag).
    pub waiting_ds: Option<u16>,
    /// Why the trigger was not followed (a rollover under way, no KSK
    /// ready, a manual policy).
    pub refused: Option<String>,
}

/// A key generator: a new key of the role (its timing set by the planner).
pub type Generate<'a> = dyn FnMut(Role) -> Result<SigningKey, KeyError> + 'a;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Generate,
    Publish,
    Submit,
    Replace,
    Retire,
    Remove,
    Delete,
}

impl Action {
    fn name(self) -> &'static str {
        match self {
            Action::Generate => "generate",
            Action::Publish => "publish",
            Action::Submit => "submit",
            Action::Replace => "replace",
            Action::Retire => "retire",
            Action::Remove => "remove",
            Action::Delete => "delete",
        }
    }
}

struct Next {
    action: Action,
    at: u64,
    key: usize,
    role: Role,
}

struct Ctx<'a> {
    keys: &'a mut Vec<SigningKey>,
    p: &'a KeyPolicy,
    ttl: Ttls,
    now: u64,
    plan: Plan,
}

impl Ctx<'_> {
    fn state(&self, i: usize) -> KeyState {
        self.keys[i].timing.state(self.now)
    }

    fn touched(&mut self, i: usize) {
        self.keys[i].timing.settled = None;
        if !self.plan.changed.contains(&i) {
            self.plan.changed.push(i);
        }
    }

    /// A key of exactly this kind that is not removed.
    fn present(&self, ksk: bool, zsk: bool) -> bool {
        self.keys.iter().any(|k| {
            k.role.is_ksk() == ksk
                && k.role.is_zsk() == zsk
                && !matches!(k.timing.state(self.now), KeyState::Removed)
        })
    }

    /// Keys of `alg` signing (or about to) and not removed.
    fn algorithm_present(&self, alg: Algorithm) -> usize {
        self.keys
            .iter()
            .filter(|k| {
                let t = &k.timing;
                k.algorithm == alg
                    && (by(t.pre_active, self.now)
                        || by(t.ready, self.now)
                        || by(t.active, self.now))
                    && t.state(self.now) != KeyState::Removed
            })
            .count()
    }

    fn scheme_present(&self) -> bool {
        if self.p.single_type {
            !self.present(true, false) || !self.present(false, true) || self.present(true, true)
        } else {
            self.present(true, false) && self.present(false, true)
        }
    }

    /// A rollover under way (Knot's `running_rollover`).
    fn running(&self) -> bool {
        let (mut ready_ksk, mut active_ksk, mut active_zsk) = (0, 0, 0);
        for k in self.keys.iter() {
            match k.timing.state(self.now) {
                KeyState::PreActive
                | KeyState::Published
                | KeyState::RetireActive
                | KeyState::PostActive => return true,
                KeyState::Ready => ready_ksk += usize::from(k.role.is_ksk()),
                KeyState::Active => {
                    active_ksk += usize::from(k.role.is_ksk());
                    active_zsk += usize::from(k.role.is_zsk());
                }
                _ => {}
            }
        }
        ready_ksk + active_ksk > 1 || active_zsk > 1
    }

    /// A new key: KSK (or CSK) ready at `when`, ZSK active at `when`
    /// (None: by a later event); pre-active instead of published for an
    /// algorithm rollover.
    fn generate(
        &mut self,
        gen: &mut Generate<'_>,
        ksk: bool,
        when: Option<u64>,
        pre_active: bool,
    ) -> Result<usize, KeyError> {
        let role = match (ksk, self.p.single_type) {
            (true, true) => Role::Csk,
            (true, false) => Role::Ksk,
            (false, _) => Role::Zsk,
        };
        let mut key = gen(role)?.with_role(role);
        key.timing = Timing {
            ready: if ksk { when } else { None },
            active: if ksk { None } else { when },
            publish: (!pre_active).then_some(self.now),
            pre_active: pre_active.then_some(self.now),
            ..Timing::default()
        };
        key.created = self.now;
        self.plan.log.push(format!(
            "new {role}, tag {}, algorithm {}",
            key.tag(),
            key.algorithm
        ));
        self.keys.push(key);
        let i = self.keys.len() - 1;
        self.touched(i);
        Ok(i)
    }

    fn next(&self) -> Option<Next> {
        let (p, now, ttl) = (self.p, self.now, self.ttl);
        let plus = |t: Option<u64>, d: u64| t.map(|t| t.saturating_add(d));
        let mut best: Option<Next> = None;
        for (i, k) in self.keys.iter().enumerate() {
            let t = &k.timing;
            let (at, action) = match (k.role.is_ksk(), t.state(now)) {
                (_, KeyState::PreActive) => (
                    t.settled
                        .map(|s| s.max(t.pre_active.unwrap_or(s)) + p.propagation_delay + ttl.max),
                    Action::Publish,
                ),
                (true, KeyState::Published) => (
                    plus(t.publish, p.propagation_delay + ttl.dnskey),
                    Action::Submit,
                ),
                (false, KeyState::Published) => (
                    plus(t.publish, p.propagation_delay + ttl.dnskey),
                    Action::Replace,
                ),
                (true, KeyState::Ready) => (
                    (p.submission_timeout > 0)
                        .then(|| plus(t.ready, p.submission_timeout))
                        .flatten(),
                    Action::Replace,
                ),
                (ksk, KeyState::Active) => {
                    if self.running() || k.algorithm != p.algorithm {
                        continue;
                    }
                    let at = if ksk {
                        (p.ksk_lifetime > 0).then(|| k.created.saturating_add(p.ksk_lifetime))
                    } else {
                        (p.zsk_lifetime > 0)
                            .then(|| plus(t.active, p.zsk_lifetime))
                            .flatten()
                    };
                    (at, Action::Generate)
                }
                (true, KeyState::RetireActive) => {
                    if t.retire.is_some() || t.post_active.is_some() || t.remove.is_some() {
                        continue;
                    }
                    (
                        plus(t.retire_active, p.propagation_delay + ttl.dnskey),
                        Action::Retire,
                    )
                }
                (false, KeyState::RetireActive) => continue,
                (_, KeyState::PostActive) => (
                    plus(t.post_active, p.propagation_delay + ttl.dnskey),
                    Action::Remove,
                ),
                (ksk, KeyState::Retired) => {
                    // Every signature by it replaced (settled), then the
                    // caches' time; a KSK's own signatures are of the
                    // DNSKEY RRset only.
                    let since = if k.role.is_zsk() {
                        t.settled.map(|s| s.max(t.retire.unwrap_or(s)))
                    } else {
                        t.retire
                    };
                    let wait = if ksk && !k.role.is_zsk() {
                        ttl.dnskey
                    } else {
                        ttl.max
                    };
                    (plus(since, p.propagation_delay + wait), Action::Remove)
                }
                (_, KeyState::Removed) => (plus(t.remove, p.delete_delay), Action::Delete),
                _ => continue,
            };
            let Some(at) = at else { continue };
            if best.as_ref().is_none_or(|b| at < b.at) {
                best = Some(Next {
                    action,
                    at,
                    key: i,
                    role: k.role,
                });
            }
        }
        best
    }

    /// The old key of a new one's kind that is active (Knot's `key2retire`).
    fn to_retire(&self, new: usize) -> Option<usize> {
        let ksk = self.keys[new].role.is_ksk();
        (0..self.keys.len()).find(|&i| {
            i != new && self.keys[i].role.is_ksk() == ksk && self.state(i) == KeyState::Active
        })
    }

    /// The new key takes over (Knot's `exec_new_signatures`); the old one
    /// retires, and goes after `delay` (a KSK's: the parent's DS TTL).
    fn replace(&mut self, new: usize, delay: u64) {
        let now = self.now;
        if let Some(old) = self.to_retire(new) {
            let alg_diff = self.keys[old].algorithm != self.keys[new].algorithm;
            let old_role = self.keys[old].role;
            {
                let t = &mut self.keys[old].timing;
                if alg_diff {
                    t.retire_active = Some(now);
                    if old_role.is_ksk() {
                        t.post_active = Some(now + delay);
                    }
                } else if old_role.is_ksk() {
                    t.retire_active = Some(now);
                    if old_role.is_zsk() {
                        t.retire = Some(now + delay);
                    } else {
                        t.remove = Some(now + delay);
                    }
                } else {
                    t.retire = Some(now);
                }
            }
            self.touched(old);
            if self.keys[new].role.is_ksk() {
                // The old ZSK goes too in an algorithm rollover, or when a CSK
                // takes over.
                let new_csk = self.keys[new].role.is_zsk();
                let new_alg = self.keys[new].algorithm;
                let zsk = (0..self.keys.len()).find(|&i| {
                    let k = &self.keys[i];
                    k.role == Role::Zsk
                        && (k.algorithm != new_alg || new_csk)
                        && matches!(self.state(i), KeyState::Active | KeyState::RetireActive)
                });
                if let Some(z) = zsk {
                    let t = &mut self.keys[z].timing;
                    if alg_diff {
                        t.post_active = Some(now + delay);
                    } else {
                        t.retire = Some(now);
                    }
                    self.touched(z);
                }
            }
        }
        let t = &mut self.keys[new].timing;
        t.active = Some(t.active.map_or(now, |a| a.min(now)));
        self.touched(new);
    }

    fn ksk_retire(&mut self, i: usize) {
        let now = self.now;
        let friend = (0..self.keys.len()).find(|&j| {
            let k = &self.keys[j];
            let magic = if k.role == Role::Csk { 2 } else { 3 };
            k.role.is_zsk()
                && self.state(j) == KeyState::RetireActive
                && self.algorithm_present(k.algorithm) < magic
        });
        match friend {
            Some(f) => {
                self.keys[i].timing.post_active = Some(now);
                self.keys[f].timing.post_active = Some(now);
                self.touched(f);
            }
            None => self.keys[i].timing.retire = Some(now),
        }
        self.touched(i);
    }
}

/// Runs the key events due at `now` (and those `trigger` asks for) on
/// `keys` (the zone's, as read from its folder; new keys are pushed, keys
/// whose time is over taken out), and says what comes next. A manual
/// policy does nothing (Knot's `manual`), nor does one with an offline
/// KSK (its ZSKs' timers were set by [`pregenerate`]).
pub fn plan(
    keys: &mut Vec<SigningKey>,
    p: &KeyPolicy,
    ttl: Ttls,
    now: u64,
    trigger: Trigger,
    gen: &mut Generate<'_>,
) -> Result<Plan, KeyError> {
    let mut c = Ctx {
        keys,
        p,
        ttl,
        now,
        plan: Plan::default(),
    };
    c.first_keys(gen)?;
    if p.manual || p.offline_ksk {
        if trigger != Trigger::Timers {
            c.plan.refused = Some(if p.offline_ksk {
                "the policy has an offline KSK: ZSKs are made ahead (`lode dnssec pregenerate`), KSKs elsewhere".into()
            } else {
                "the policy is manual: keys are not rolled here".into()
            });
        }
        return Ok(c.plan);
    }
    c.steps(trigger, gen)?;
    Ok(c.plan)
}

/// Offline KSK, the ZSK side: the ZSK rollovers of `from` to `to` made
/// ahead (Knot's `keymgr pregenerate`), their keys pushed to `keys` with
/// every timer set, as the planner would set them as time goes. The
/// zone is taken as re-signed at once when a new ZSK becomes active (the
/// server signs it whole then under an offline KSK), so an old ZSK goes
/// a propagation delay and the largest TTL after. Returns what was done.
pub fn pregenerate(
    keys: &mut Vec<SigningKey>,
    p: &KeyPolicy,
    ttl: Ttls,
    from: u64,
    to: u64,
    gen: &mut Generate<'_>,
) -> Result<Plan, KeyError> {
    let p = KeyPolicy {
        manual: false,
        offline_ksk: true,
        // Keys are kept (their records may be in a response already).
        delete_delay: u64::MAX / 4,
        ..p.clone()
    };
    let mut all = Plan::default();
    let mut now = from;
    for _ in 0..100_000 {
        let mut c = Ctx {
            keys: &mut *keys,
            p: &p,
            ttl,
            now,
            plan: Plan::default(),
        };
        c.first_keys(gen)?;
        c.steps(Trigger::Timers, gen)?;
        for k in c.keys.iter_mut() {
            let waiting = matches!(k.timing.state(now), KeyState::PreActive | KeyState::Retired);
            if waiting && k.timing.settled.is_none() {
                k.timing.settled = Some(now);
            }
        }
        let next = c.next().map(|n| n.at);
        let plan = c.plan;
        for i in plan.changed {
            if !all.changed.contains(&i) {
                all.changed.push(i);
            }
        }
        all.log.extend(
            plan.log
                .into_iter()
                .map(|l| format!("{}: {l}", crate::offline::iso_time(now))),
        );
        match next.filter(|&n| n <= to && n > now) {
            Some(n) => now = n,
            None => break,
        }
    }
    // Every key's settling is a timer now: written with the rest.
    all.changed = (0..keys.len()).collect();
    Ok(all)
}

impl Ctx<'_> {
    /// The first keys (a manual policy too: a signed zone needs keys); a
    /// ZSK alone under an offline KSK.
    fn first_keys(&mut self, gen: &mut Generate<'_>) -> Result<(), KeyError> {
        let p = self.p;
        if p.offline_ksk {
            if !self.present(false, true) {
                self.generate(gen, false, Some(self.now), false)?;
            }
            return Ok(());
        }
        if !self.present(true, false) && !self.present(true, true) {
            self.generate(gen, true, Some(self.now), false)?;
            if !p.single_type && !self.present(false, true) {
                self.generate(gen, false, Some(self.now), false)?;
            }
        }
        Ok(())
    }

    /// The events `trigger` asks for and those due now.
    fn steps(&mut self, trigger: Trigger, gen: &mut Generate<'_>) -> Result<(), KeyError> {
        let (p, now) = (self.p, self.now);
        let c = self;
        match trigger {
            Trigger::Roll(role) => {
                if c.running() {
                    c.plan.refused = Some(format!(
                        "{role} rollover not started: a rollover is under way"
                    ));
                } else {
                    let ksk = role.is_ksk();
                    c.generate(gen, ksk || p.single_type, None, false)?;
                    c.plan.log.push(format!(
                        "{} rollover started",
                        if p.single_type { Role::Csk } else { role }
                    ));
                }
            }
            Trigger::Submitted { ds_ttl } => {
                let ready = (0..c.keys.len())
                    .find(|&i| c.keys[i].role.is_ksk() && c.state(i) == KeyState::Ready);
                match ready {
                    Some(i) => {
                        c.plan.log.push(format!(
                            "KSK submission of tag {} confirmed",
                            c.keys[i].tag()
                        ));
                        c.replace(i, ds_ttl);
                    }
                    None => {
                        c.plan.refused = Some("no KSK is waiting for its DS (none is ready)".into())
                    }
                }
            }
            Trigger::Timers => {}
        }
        // An algorithm rollover: no key of the policy's algorithm signs yet.
        if !p.offline_ksk && c.algorithm_present(p.algorithm) == 0 && !c.running() {
            c.generate(gen, true, None, true)?;
            if !p.single_type {
                c.generate(gen, false, None, true)?;
            }
            c.plan
                .log
                .push(format!("algorithm rollover to {} started", p.algorithm));
        }
        // A change between KSK+ZSK and CSK.
        if !p.offline_ksk && !c.scheme_present() && !c.running() {
            c.generate(gen, true, None, false)?;
            if !p.single_type {
                c.generate(gen, false, None, false)?;
            }
            c.plan.log.push("signing scheme rollover started".into());
        }
        // Every action due now, one after the other.
        for _ in 0..64 {
            let Some(next) = c.next() else { break };
            if next.at > now {
                break;
            }
            let tag = c.keys[next.key].tag();
            match next.action {
                Action::Generate => {
                    c.generate(gen, next.role.is_ksk(), None, false)?;
                    c.plan.log.push(format!("{} rollover started", next.role));
                    continue;
                }
                Action::Publish => {
                    c.keys[next.key].timing.publish = Some(now);
                    c.touched(next.key);
                }
                Action::Submit => {
                    // A ready KSK before it becomes active (Knot's submit_key).
                    for j in 0..c.keys.len() {
                        if c.keys[j].role.is_ksk() && c.state(j) == KeyState::Ready {
                            c.keys[j].timing.active = Some(now);
                            c.touched(j);
                        }
                    }
                    c.keys[next.key].timing.ready = Some(now);
                    c.touched(next.key);
                }
                Action::Replace => c.replace(next.key, 0),
                Action::Retire => c.ksk_retire(next.key),
                Action::Remove => {
                    c.keys[next.key].timing.remove = Some(now);
                    c.touched(next.key);
                }
                Action::Delete => {
                    let key = c.keys.remove(next.key);
                    c.plan.changed.retain(|&i| i != next.key);
                    for i in &mut c.plan.changed {
                        if *i > next.key {
                            *i -= 1;
                        }
                    }
                    c.plan.log.push(format!("{} tag {tag} deleted", key.role));
                    c.plan.deleted.push(key);
                    continue;
                }
            }
            c.plan
                .log
                .push(format!("{} tag {tag}, {}", next.role, next.action.name()));
        }
        if let Some(next) = c.next() {
            let what = match next.action {
                Action::Generate => format!(
                    "{}, generate",
                    if p.single_type { Role::Csk } else { next.role }
                ),
                a => format!("{} tag {}, {}", next.role, c.keys[next.key].tag(), a.name()),
            };
            c.plan.next = Some((next.at, what));
        }
        c.plan.waiting_ds = c
            .keys
            .iter()
            .find(|k| k.role.is_ksk() && k.timing.state(now) == KeyState::Ready)
            .map(SigningKey::tag);
        Ok(())
    }
}
