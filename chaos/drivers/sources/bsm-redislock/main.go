// The lockchaos driver for github.com/bsm/redislock (a single-node lock over go-redis v9) on
// the Go driver kit (chaos/drivers/kits/go, docs/driver-protocol.md).
//
// Client.Obtain with the library's NoRetry strategy (one attempt: the harness owns the retry
// loop) and the kit's token as the lock's token (Options.Token; no metadata, so the value is
// the token), Lock.Refresh as extend, Lock.Release. Each runs its Lua script by EVALSHA (EVAL
// after a NOSCRIPT) on the hello's first node through the kit's client, with the request's
// context: Obtain sets its own deadline, now + TTL, on a context that has none.
package main

import (
	"errors"

	"github.com/bsm/redislock"
	kit "lockchaos.dev/driverkit"
)

type lock struct {
	client *redislock.Client
	hello  *kit.Hello
}

func open(h *kit.Hello) (*lock, error) {
	return &lock{redislock.New(kit.NewClient(h, h.Nodes[0])), h}, nil
}

// Acquire: the script's SET NX PX runs after the request was sent, so the lease is valid for
// the TTL from then (its re-obtain branch matches only this same token, never another's).
func (l *lock) Acquire(r *kit.Request) kit.Outcome {
	opt := &redislock.Options{Token: r.Token, RetryStrategy: redislock.NoRetry()}
	held, err := l.client.Obtain(r.Ctx, l.hello.LockName, l.hello.TTL(), opt)
	if errors.Is(err, redislock.ErrNotObtained) {
		return kit.Refused("taken")
	} else if err != nil {
		return kit.Failure(err)
	}
	return kit.Granted(held, float64(l.hello.TTLMs))
}

func (l *lock) Release(r *kit.Request) kit.Outcome {
	err := r.Lease.(*redislock.Lock).Release(r.Ctx)
	if errors.Is(err, redislock.ErrLockNotHeld) {
		return kit.Refused("not held")
	} else if err != nil {
		return kit.Failure(err)
	}
	return kit.Released()
}

// Extend: a compare-and-PEXPIRE, the TTL again from when it ran.
func (l *lock) Extend(r *kit.Request) kit.Outcome {
	err := r.Lease.(*redislock.Lock).Refresh(r.Ctx, l.hello.TTL(), nil)
	if errors.Is(err, redislock.ErrNotObtained) {
		return kit.Refused("not held")
	} else if err != nil {
		return kit.Failure(err)
	}
	return kit.Granted(nil, float64(l.hello.TTLMs))
}

func main() {
	kit.Serve(kit.Description{Driver: "bsm-redislock", Library: "github.com/bsm/redislock v0.9.4 + go-redis v9.23.0"}, open)
}
