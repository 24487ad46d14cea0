// The lockchaos driver for go-redsync (Redlock over go-redis v9) on the Go driver kit
// (chaos/drivers/kits/go, docs/driver-protocol.md).
//
// One redsync.Mutex per acquire, on every node of the hello (N standalone masters), with the
// library's defaults except: expiry = the run's TTL, one try (the harness owns the retry
// loop), a per-node timeout of TTL/10 (below) and the value = the kit's token. The kit's
// go-redis clients never retry a command, and its hook moves redsync's deadline on by the
// time the harness held an announced command.
package main

import (
	"errors"
	"fmt"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/hashicorp/go-multierror"
	kit "lockchaos.dev/driverkit"
)

type lock struct {
	rs    *redsync.Redsync
	hello *kit.Hello
}

func open(h *kit.Hello) (*lock, error) {
	pools := make([]redsyncredis.Pool, len(h.Nodes))
	for i, node := range h.Nodes {
		pools[i] = goredis.NewPool(kit.NewClient(h, node))
	}
	return &lock{redsync.New(pools...), h}, nil
}

func (l *lock) Acquire(r *kit.Request) kit.Outcome {
	mutex := l.rs.NewMutex(l.hello.LockName, redsync.WithExpiry(l.hello.TTL()), redsync.WithTries(1),
		// Per-node timeout: a tenth of the TTL, as chaos/locks/redlock.py. redsync's default
		// (5%) is 10 ms at the 200 ms TTLs lockchaos compresses time to, which a loaded
		// two-core machine misses on every node: nobody ever wins a quorum.
		redsync.WithTimeoutFactor(0.1),
		redsync.WithGenValueFunc(func() (string, error) { return r.Token, nil }))
	if err := mutex.TryLockContext(r.Ctx); err != nil {
		// Not acquired: redsync released what it got on every node (best effort).
		return l.votes(err).Failed(err.Error())
	}
	return kit.Granted(mutex, r.Until(mutex.Until()))
}

func (l *lock) Release(r *kit.Request) kit.Outcome {
	if ok, err := r.Lease.(*redsync.Mutex).UnlockContext(r.Ctx); !ok {
		return l.votes(err).Failed(fmt.Sprint(err))
	}
	return kit.Released()
}

// votes reads each node's vote off redsync's error: a Redis error is the kit's reading of
// go-redis's error; a node taken by another value, or whose key was gone, answered no. The
// nodes not in the error did it.
func (l *lock) votes(err error) (t kit.Tally) {
	var taken *redsync.ErrTaken
	var all *multierror.Error
	switch {
	case errors.As(err, &taken):
		t.Refused = len(taken.Nodes)
	case errors.As(err, &all):
		for _, e := range all.Errors {
			var re *redsync.RedisError
			if errors.As(e, &re) {
				t.Add(kit.VoteOf(re.Err))
			} else {
				t.Add(kit.VoteRefused)
			}
		}
	}
	t.Granted = len(l.hello.Nodes) - t.Nodes()
	return t
}

func main() {
	kit.Serve(kit.Description{Driver: "redsync", Library: "go-redsync v4.13.0 + go-redis v9.23.0",
		Topology: "standalone", MinNodes: 3}, open)
}
