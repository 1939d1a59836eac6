//! A signed zone's dealings with its parent as a state machine: looking for
//! a ready KSK's DS at the parent's servers (`ksk-submission`: at once when
//! a key event leaves a KSK waiting, then every `check-interval` until
//! every server serves it) and pushing the DS set to the parent's primaries
//! (`ds-push`: a propagation delay after the CDS changed, again
//! [`RETRY`] after a push not taken, a moment later while the ready KSK's
//! CDS is not served yet). One round of DS queries and one push at a time;
//! when the server's slots for work with parents are all taken, a moment
//! later ([`BUSY_WAIT`]). The zone's writer (the runtime) runs the queries
//! and pushes on threads of their own and tells how they ended; no clock is
//! read here.
//!
//! ```text
//!  waiting_for_ds(waiting, now) ─▶ check_due(now) ─▶ check_started(now, interval) … check_ended()
//!  push_after(now, delay)       ─▶ push_due(now)  ─▶ push_started() … push_ended(taken, now)
//!  (no slot: check_busy / push_busy; no CDS yet: push_not_ready)    next_wake(now)
//! ```

use std::time::{Duration, Instant};

/// After a push the parent did not take, the next (Knot's `DS_PUSH_RETRY`).
pub const RETRY: Duration = Duration::from_secs(600);
/// When every slot for work with parents is taken, or the CDS to push is
/// not served yet: tried again this much later.
pub const BUSY_WAIT: Duration = Duration::from_secs(1);
/// While a push runs, its end is looked for this often.
pub const POLL: Duration = Duration::from_millis(200);

/// One signed zone's parent work.
#[derive(Debug, Clone, Default)]
pub struct Parent {
    /// A ready KSK's DS is looked for: the next round's time.
    check_at: Option<Instant>,
    /// A round of DS queries runs.
    checking: bool,
    /// When the DS set is pushed next.
    push_at: Option<Instant>,
    /// A push runs.
    pushing: bool,
}

impl Parent {
    /// Nothing to do.
    pub fn new() -> Parent {
        Parent::default()
    }

    /// After a key event: whether a KSK waits for its DS to be looked for
    /// at the parent (`ksk-submission` set: a round of queries at once), or
    /// not (the rounds stop).
    pub fn waiting_for_ds(&mut self, check: bool, now: Instant) {
        self.check_at = check.then_some(now);
    }

    /// Whether a round of DS queries is to start at `now`.
    pub fn check_due(&self, now: Instant) -> bool {
        !self.checking && self.check_at.is_some_and(|t| now >= t)
    }

    /// No slot for the round: a moment later.
    pub fn check_busy(&mut self, now: Instant) {
        if self.check_at.is_some() {
            self.check_at = Some(now + BUSY_WAIT);
        }
    }

    /// A round started at `now`; the next one `interval` later unless the
    /// DS is found (a key event then stops the rounds).
    pub fn check_started(&mut self, now: Instant, interval: Duration) {
        self.checking = true;
        if self.check_at.is_some() {
            self.check_at = Some(now + interval);
        }
    }

    /// The round ended.
    pub fn check_ended(&mut self) {
        self.checking = false;
    }

    /// Whether a round of DS queries runs.
    pub fn checking(&self) -> bool {
        self.checking
    }

    /// The CDS changed (or a KSK became ready) at `now`: the DS set is
    /// pushed `delay` (a propagation delay) later.
    pub fn push_after(&mut self, now: Instant, delay: Duration) {
        self.push_at = Some(now + delay);
    }

    /// Whether a push is to start at `now`.
    pub fn push_due(&self, now: Instant) -> bool {
        !self.pushing && self.push_at.is_some_and(|t| now >= t)
    }

    /// No slot for the push: a moment later.
    pub fn push_busy(&mut self, now: Instant) {
        self.push_at = Some(now + BUSY_WAIT);
    }

    /// No CDS served to push: a moment later while a KSK waits for its DS
    /// (`ksk_waits`: its CDS comes with a signing still running); else
    /// nothing to push (Knot's).
    pub fn push_not_ready(&mut self, now: Instant, ksk_waits: bool) {
        self.push_at = ksk_waits.then_some(now + BUSY_WAIT);
    }

    /// A push started.
    pub fn push_started(&mut self) {
        self.pushing = true;
        self.push_at = None;
    }

    /// The push ended at `now`: taken by the parent, or tried again
    /// [`RETRY`] later.
    pub fn push_ended(&mut self, taken: bool, now: Instant) {
        self.pushing = false;
        if !taken {
            self.push_at = Some(now + RETRY);
        }
    }

    /// Whether a push runs.
    pub fn pushing(&self) -> bool {
        self.pushing
    }

    /// When the writer is to wake for its parent work (None: nothing due).
    pub fn next_wake(&self, now: Instant) -> Option<Instant> {
        let poll = self.pushing.then_some(now + POLL);
        // A round that outlasts its interval is looked for, not run again.
        let check = match self.check_at {
            Some(t) if self.checking => Some(t.max(now + POLL)),
            t => t,
        };
        [poll, check, self.push_at].into_iter().flatten().min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ready KSK: a round at once, then every interval; a busy slot
    /// defers it a moment; the rounds stop when no KSK waits.
    #[test]
    fn ds_rounds_while_a_ksk_waits() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut p = Parent::new();
        assert!(!p.check_due(t0) && p.next_wake(t0).is_none());
        p.waiting_for_ds(true, t0);
        assert!(p.check_due(t0));
        p.check_busy(t0);
        assert!(!p.check_due(t0) && p.check_due(t0 + BUSY_WAIT));
        p.check_started(t0 + s(1), s(60));
        assert!(!p.check_due(t0 + s(3600)), "one round at a time");
        assert_eq!(p.next_wake(t0 + s(1)), Some(t0 + s(61)));
        assert_eq!(
            p.next_wake(t0 + s(100)),
            Some(t0 + s(100) + POLL),
            "a round outlasting its interval is looked for"
        );
        p.check_ended();
        assert_eq!(p.next_wake(t0 + s(1)), Some(t0 + s(61)));
        assert!(p.check_due(t0 + s(61)));
        p.waiting_for_ds(false, t0 + s(62));
        assert!(!p.check_due(t0 + s(3600)) && p.next_wake(t0).is_none());
    }

    /// A push a delay after the CDS changed; one not taken again after
    /// RETRY; no CDS yet: a moment later only while a KSK waits.
    #[test]
    fn pushes_follow_the_cds_and_retry() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut p = Parent::new();
        p.push_after(t0, s(30));
        assert!(!p.push_due(t0 + s(29)) && p.push_due(t0 + s(30)));
        p.push_busy(t0 + s(30));
        assert!(p.push_due(t0 + s(31)));
        p.push_started();
        assert!(!p.push_due(t0 + s(3600)));
        assert_eq!(p.next_wake(t0 + s(31)), Some(t0 + s(31) + POLL));
        p.push_ended(false, t0 + s(32));
        assert!(!p.push_due(t0 + s(33)) && p.push_due(t0 + s(32) + RETRY));
        p.push_started();
        p.push_ended(true, t0 + s(40));
        assert!(p.next_wake(t0 + s(40)).is_none(), "taken: nothing left");
        p.push_not_ready(t0 + s(41), false);
        assert!(!p.push_due(t0 + s(3600)), "no KSK waits: nothing to push");
        p.push_not_ready(t0 + s(41), true);
        assert!(p.push_due(t0 + s(42)));
    }
}
