//! What a lock's method answers, and the quorum rule that turns per-node votes into it
//! (docs/driver-protocol.md, "decides by quorum").

use serde_json::{json, Value};

/// One request's answer. A `Lock`'s `acquire`, `release` and `extend` each return one.
#[derive(Debug)]
pub enum Outcome<L> {
    /// Acquired or extended: valid for `validity_ms` from when the request was sent
    /// (`Request::left_at_return` and `Request::until` measure it; never more than the library
    /// claims). An acquire's `lease` is what `release` and `extend` get back (the library's lock
    /// object); an extend's `None` keeps the lease it had, `Some` replaces it.
    Granted { lease: Option<L>, validity_ms: f64, fence: Option<i64> },
    /// The release deleted the lease.
    Released,
    /// Certainly not: not granted, not ours any more, not extended.
    Refused(Option<String>),
    /// An error. `definite`: it certainly did not happen (nothing was sent: the harness takes it
    /// as refused); otherwise it may have (a timeout after sending). Never turn a timeout into
    /// `Refused`.
    Failed { definite: bool, message: String },
    /// An extend's answer: not extended, and the library deleted or gave up the lease.
    Revoked(String),
    /// An extend's answer: the library invalidated the lease's lock object, so nothing more can
    /// be sent for it (the kit answers a later release of it "not sent"). `definite`: the extend
    /// certainly did not happen.
    Invalidated { definite: bool, message: String },
    /// A release's answer: released, and the library keeps the key on purpose until
    /// `validity_ms` from when the request was sent (a minimum hold; `None`: until the lease's
    /// deadline then in effect).
    Kept(Option<f64>),
}

impl<L> Outcome<L> {
    /// An acquire's grant of `lease`, valid for `validity_ms` from when the request was sent.
    pub fn granted(lease: L, validity_ms: f64) -> Self {
        Outcome::Granted { lease: Some(lease), validity_ms, fence: None }
    }

    /// An extend's success that keeps the lease's lock object.
    pub fn extended(validity_ms: f64) -> Self {
        Outcome::Granted { lease: None, validity_ms, fence: None }
    }

    /// Adds a fencing token to a grant (anything else is returned as it is).
    #[must_use]
    pub fn with_fence(self, token: i64) -> Self {
        match self {
            Outcome::Granted { lease, validity_ms, .. } => {
                Outcome::Granted { lease, validity_ms, fence: Some(token) }
            }
            other => other,
        }
    }

    pub fn refused() -> Self {
        Outcome::Refused(None)
    }

    pub fn failed(definite: bool, message: impl Into<String>) -> Self {
        Outcome::Failed { definite, message: message.into() }
    }

    /// The reply line for request `id`; `token` is the lease's.
    pub(crate) fn reply(&self, id: u64, token: &str) -> Value {
        let (kind, mut line) = match self {
            Outcome::Granted { validity_ms, fence, .. } => {
                ("ok", json!({"token": token, "validity_ms": validity_ms, "fence": fence}))
            }
            Outcome::Released => ("ok", json!({})),
            Outcome::Refused(message) => ("refused", json!({"message": message})),
            Outcome::Failed { definite, message } => {
                ("error", json!({"definite": definite, "message": message}))
            }
            Outcome::Revoked(message) => ("revoked", json!({"message": message})),
            Outcome::Invalidated { definite, message } => {
                ("invalidated", json!({"definite": definite, "message": message}))
            }
            Outcome::Kept(validity_ms) => ("kept", json!({"validity_ms": validity_ms})),
        };
        line["type"] = json!(kind);
        line["id"] = json!(id);
        line
    }
}

/// What one node of a multi-node lock (a Redlock) did with one command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vote {
    /// It did it: set, deleted, extended.
    Granted,
    /// It answered no: the key is someone else's, or gone.
    Refused,
    /// The command may have reached it: no reply (a timeout, a reset), an error reply.
    Unknown,
    /// Nothing was sent to it.
    NotSent,
}

/// The nodes' votes on one acquire, release or extend. A library that cannot tell refused from
/// error for a node counts it `Unknown`: indeterminate is never wrong, only less informative.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub granted: usize,
    pub refused: usize,
    pub unknown: usize,
    pub not_sent: usize,
}

impl Tally {
    pub fn add(&mut self, vote: Vote) {
        match vote {
            Vote::Granted => self.granted += 1,
            Vote::Refused => self.refused += 1,
            Vote::Unknown => self.unknown += 1,
            Vote::NotSent => self.not_sent += 1,
        }
    }

    /// How many nodes voted.
    pub fn nodes(&self) -> usize {
        self.granted + self.refused + self.unknown + self.not_sent
    }

    /// A majority of them.
    pub fn quorum(&self) -> usize {
        self.nodes() / 2 + 1
    }

    /// `ok` when the granted nodes reach the quorum, else as `failed`.
    pub fn decide<L>(&self, ok: Outcome<L>, message: &str) -> Outcome<L> {
        if self.granted >= self.quorum() {
            ok
        } else {
            self.failed(message)
        }
    }

    /// An operation the library reports failed (acquire, release or extend alike): definite
    /// only when the nodes that answered decide it whichever way the unknown ones went.
    /// Granted + unknown could still reach the quorum: indeterminate (a quorum lost to timeouts
    /// is not refused, even when the library unlocked). Otherwise refused when a quorum said no,
    /// or did it and the library still said no (Redlock: the time spent ate the validity, and
    /// it unlocked); else a definite error: too few nodes were even reached.
    pub fn failed<L>(&self, message: &str) -> Outcome<L> {
        let quorum = self.quorum();
        if self.granted < quorum && self.granted + self.unknown >= quorum {
            Outcome::failed(
                false,
                format!("{message} ({} of {} nodes did not answer, enough to decide it)",
                        self.unknown, self.nodes()),
            )
        } else if self.granted >= quorum || self.refused >= quorum {
            Outcome::Refused(Some(message.to_string()))
        } else {
            Outcome::failed(
                true,
                format!("{message} (no quorum: {} of {} nodes not reached, {} refused)",
                        self.not_sent, self.nodes(), self.refused),
            )
        }
    }
}

/// Floors a whole number of ms to the nearest `f64` at or below it: a validity is never
/// rounded up (an `f64` holds integers exactly only up to 2^53; a `usize` that wrapped is
/// far above that).
pub(crate) fn floor_ms(ms: u128) -> f64 {
    #[allow(clippy::cast_precision_loss)] // the very loss the next line corrects downwards
    let mut value = ms as f64;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    if value as u128 > ms {
        value = value.next_down();
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(granted: usize, refused: usize, unknown: usize, not_sent: usize) -> Tally {
        Tally { granted, refused, unknown, not_sent }
    }

    fn kind(o: &Outcome<()>) -> String {
        o.reply(1, "t")["type"].as_str().unwrap().to_string()
            + match o {
                Outcome::Failed { definite: true, .. } => "/definite",
                _ => "",
            }
    }

    #[test]
    fn the_quorum_rule() {
        let ok = || Outcome::<()>::Released;
        assert_eq!(kind(&tally(3, 2, 0, 0).decide(ok(), "m")), "ok");
        assert_eq!(kind(&tally(2, 0, 1, 2).decide(ok(), "m")), "error"); // 2 + 1 unknown ≥ 3
        assert_eq!(kind(&tally(2, 3, 0, 0).decide(ok(), "m")), "refused");
        assert_eq!(kind(&tally(3, 0, 0, 2).failed::<()>("m")), "refused"); // the library said no
        assert_eq!(kind(&tally(0, 0, 0, 5).failed::<()>("m")), "error/definite");
        assert_eq!(kind(&tally(1, 1, 1, 2).failed::<()>("m")), "error/definite");
        assert_eq!(kind(&tally(0, 0, 1, 0).failed::<()>("m")), "error"); // one node, no reply
    }

    #[test]
    fn a_validity_is_never_rounded_up() {
        let wrapped = u128::from(u64::MAX - 68); // redlock's usize underflow
        assert!(floor_ms(wrapped) as u128 <= wrapped);
        assert!(floor_ms(wrapped) > 1.8e19);
        assert_eq!(floor_ms(198), 198.0);
    }
}
