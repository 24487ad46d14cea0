package driverkit

// What a Lock's method answers, and the quorum rule that turns per-node votes into it
// (docs/driver-protocol.md, "decides by quorum").

import (
	"errors"
	"fmt"
	"net"

	"github.com/redis/go-redis/v9"
)

type kind int

const (
	granted     kind = iota // ok: acquired, released or extended
	refused                 // certainly not: not granted, not ours any more, not extended
	failed                  // an error: definite (it certainly did not happen) or not
	revoked                 // not extended, and the library deleted or gave up the lease
	invalidated             // the library invalidated the lock object: no release can be sent
	kept                    // released by keeping the key until it expires (a minimum hold)
)

// wire: each kind's "type" on the wire.
var wire = map[kind]string{
	granted: "ok", refused: "refused", failed: "error",
	revoked: "revoked", invalidated: "invalidated", kept: "kept",
}

// Outcome is one request's answer. Make it with Granted, Released, Refused, Failed, Revoked,
// Invalidated or Kept.
type Outcome struct {
	kind     kind
	lease    any
	validity *float64
	fence    *int64
	definite bool
	message  string
}

// Granted: the acquire or extend succeeded; the lease is valid for validityMs from when the
// request was sent (Request.Until and Request.LeftAtReturn measure it). lease is what Release
// and Extend get back as Request.Lease (the library's lock object); an extend's nil lease keeps
// the one it had, another replaces it (a library whose extend returns a new object).
func Granted(lease any, validityMs float64) Outcome {
	return Outcome{kind: granted, lease: lease, validity: &validityMs}
}

// OK: the outcome is ok (granted, released or extended).
func (o Outcome) OK() bool { return o.kind == granted }

// Failure is a go-redis error of one command as the answer: definite when nothing was sent
// (VoteOf: no connection could be opened), else it may have happened. (A library that sends
// to several nodes decides by Tally instead.)
func Failure(err error) Outcome { return Failed(VoteOf(err) == VoteNotSent, err.Error()) }

// WithFence adds a fencing token to a grant.
func (o Outcome) WithFence(fence int64) Outcome {
	o.fence = &fence
	return o
}

// Released: the release deleted the lease.
func Released() Outcome { return Outcome{kind: granted} }

// Refused: certainly not — not granted, not ours any more, not extended.
func Refused(message string) Outcome { return Outcome{kind: refused, message: message} }

// Failed: an error. definite: it certainly did not happen (nothing was sent; the harness
// takes it as Refused); otherwise it may have happened (a timeout after sending): the history
// records an indeterminate outcome. Never turn a timeout into Refused.
func Failed(definite bool, message string) Outcome {
	return Outcome{kind: failed, definite: definite, message: message}
}

// Revoked: not extended, and the library deleted or gave up the lease (it unlocked after a
// failed extend).
func Revoked(message string) Outcome { return Outcome{kind: revoked, message: message} }

// Invalidated: an extend after which the library's lock object is invalid (the extend consumed
// or replaced it), so nothing more can be sent for the lease and its key stays until it
// expires; the kit answers a later release of it "not sent". definite: the extend certainly did
// not happen; otherwise it may have.
func Invalidated(definite bool, message string) Outcome {
	return Outcome{kind: invalidated, definite: definite, message: message}
}

// Kept: a release that keeps the key on purpose until the lease's deadline then in effect (a
// lock with a minimum hold time): nobody can get the lock before. KeptFor says until when.
func Kept() Outcome { return Outcome{kind: kept} }

// KeptFor: a release that keeps the key on purpose for validityMs from when the request was sent.
func KeptFor(validityMs float64) Outcome { return Outcome{kind: kept, validity: &validityMs} }

// answers: which request each answer may end (any may end with ok, refused or an error).
var answers = map[kind]string{revoked: "extend", invalidated: "extend", kept: "release"}

func (o Outcome) reply(id int64, token string) reply {
	r := reply{Type: wire[o.kind], ID: id, ValidityMs: o.validity, Fence: o.fence, Message: o.message}
	switch o.kind {
	case granted:
		r.Token = token
	case failed, invalidated:
		r.Definite = &o.definite
	}
	return r
}

// Vote is what one node of a multi-node lock (a Redlock) did with one command.
type Vote int

const (
	VoteGranted Vote = iota // it did it: set, deleted, extended
	VoteRefused             // it answered no: the key is someone else's, or gone
	VoteUnknown             // the command may have reached it: a timeout, a reset, an error reply
	VoteNotSent             // nothing was sent: no connection could be opened
)

// Tally counts the nodes' votes on one acquire, release or extend. A library that cannot
// tell refused from error for a node counts it Unknown: indeterminate is never wrong, only
// less informative.
type Tally struct{ Granted, Refused, Unknown, NotSent int }

// Add counts one node's vote.
func (t *Tally) Add(v Vote) {
	switch v {
	case VoteGranted:
		t.Granted++
	case VoteRefused:
		t.Refused++
	case VoteUnknown:
		t.Unknown++
	case VoteNotSent:
		t.NotSent++
	}
}

// Nodes is how many voted; Quorum a majority of them.
func (t Tally) Nodes() int  { return t.Granted + t.Refused + t.Unknown + t.NotSent }
func (t Tally) Quorum() int { return t.Nodes()/2 + 1 }

// Decide answers an operation from the votes alone: ok when the granted nodes reach the
// quorum, else as Failed.
func (t Tally) Decide(ok Outcome, message string) Outcome {
	if t.Granted >= t.Quorum() {
		return ok
	}
	return t.Failed(message)
}

// Failed answers an operation the library reports failed, for acquires, releases and
// extends alike: definite only when the nodes that answered decide it whichever way the
// unknown ones went. Granted + unknown could still reach the quorum: indeterminate (a quorum
// lost to timeouts is not refused, even when the library unlocked). Otherwise refused when a
// quorum said no, or when a quorum did it and the library still said no (Redlock: the time
// spent ate the validity, and it unlocked); else a definite error: too few nodes were even
// reached.
func (t Tally) Failed(message string) Outcome {
	q := t.Quorum()
	switch {
	case t.Granted < q && t.Granted+t.Unknown >= q:
		return Failed(false, fmt.Sprintf("%s (%d of %d nodes did not answer, enough to decide it)",
			message, t.Unknown, t.Nodes()))
	case t.Granted >= q || t.Refused >= q:
		return Refused(message)
	}
	return Failed(true, fmt.Sprintf("%s (no quorum: %d of %d nodes not reached, %d refused)",
		message, t.NotSent, t.Nodes(), t.Refused))
}

// VoteOf reads a go-redis error as a vote: nothing sent when no connection could be opened
// (a dial error, an exhausted or closed pool), unknown for anything after sending (a timeout,
// a reset, an error reply such as READONLY: it may have been executed), refused for
// redis.Nil (no such key), granted for nil.
func VoteOf(err error) Vote {
	var op *net.OpError
	switch {
	case err == nil:
		return VoteGranted
	case errors.Is(err, redis.Nil):
		return VoteRefused
	case errors.As(err, &op) && op.Op == "dial",
		errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrClosed):
		return VoteNotSent
	}
	return VoteUnknown
}
