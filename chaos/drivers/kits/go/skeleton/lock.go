// A compare-and-delete Redis lock on go-redis v9 as a lockchaos driver, on the Go driver kit
// (docs/driver-protocol.md, "Driver kits"): SET NX PX to acquire, a Lua compare-and-delete to
// release, a Lua compare-and-PEXPIRE to extend. Put your lock in their place.
package main

import (
	"github.com/redis/go-redis/v9"
	kit "lockchaos.dev/driverkit"
)

var description = kit.Description{Driver: "@NAME@", Library: "go-redis v9.23.0"}

const (
	releaseScript = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`
	extendScript  = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) end return 0`
)

type lock struct {
	client *redis.Client
	hello  *kit.Hello
}

// open connects (lazily) to the hello's first node, or with Sentinel to its master.
func open(h *kit.Hello) (*lock, error) {
	if len(h.Sentinels) > 0 {
		return &lock{kit.NewFailoverClient(h), h}, nil
	}
	return &lock{kit.NewClient(h, h.Nodes[0]), h}, nil
}

// Acquire stores the kit's token as the value; the lease is valid for the TTL from when SET
// was sent, so from the request on no longer than that.
func (l *lock) Acquire(r *kit.Request) kit.Outcome {
	set, err := l.client.SetNX(r.Ctx, l.hello.LockName, r.Token, l.hello.TTL()).Result()
	switch {
	case err != nil:
		return kit.Failure(err)
	case !set:
		return kit.Refused("taken")
	}
	return kit.Granted(nil, float64(l.hello.TTLMs))
}

func (l *lock) Release(r *kit.Request) kit.Outcome {
	deleted, err := l.client.Eval(r.Ctx, releaseScript, []string{l.hello.LockName}, r.Token).Int()
	switch {
	case err != nil:
		return kit.Failure(err)
	case deleted == 0:
		return kit.Refused("not ours any more")
	}
	return kit.Released()
}

func (l *lock) Extend(r *kit.Request) kit.Outcome {
	args := []any{r.Token, l.hello.TTLMs}
	extended, err := l.client.Eval(r.Ctx, extendScript, []string{l.hello.LockName}, args...).Int()
	switch {
	case err != nil:
		return kit.Failure(err)
	case extended == 0:
		return kit.Refused("not ours any more")
	}
	return kit.Granted(nil, float64(l.hello.TTLMs))
}
