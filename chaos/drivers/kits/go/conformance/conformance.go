// The Go kit's conformance driver (tests/drivers/test_kit_conformance.py): the skeleton's lock
// (../skeleton/lock.go, built with this file by ./run), misbehaving as LOCKCHAOS_CONFORMANCE
// says (chaos/drivers/kits/README.md):
//
//   - retry-forever: its acquire retries SET NX every 10 ms until it wins, with no bound of its
//     own (it keeps the request's context as a tag, not its cancellation): the kit's bound must
//     answer it in time, and release the grant that comes late;
//   - late-command: 300 ms after each acquire returned, the library sends GET on its own, with
//     the acquire's own context (a goroutine it left running);
//   - slow-start: the lock takes 2 s to build.
package main

import (
	"context"
	"os"
	"time"

	kit "lockchaos.dev/driverkit"
)

var behaviour = os.Getenv("LOCKCHAOS_CONFORMANCE")

const (
	retryEvery = 10 * time.Millisecond
	retryFor   = time.Minute // "forever" next to the harness's bound, and still a bound
	lateAfter  = 300 * time.Millisecond
	slowStart  = 2 * time.Second
)

type misbehaving struct{ *lock }

func main() {
	description.Driver = "go-conformance-" + behaviour
	kit.Serve(description, func(h *kit.Hello) (*misbehaving, error) {
		if behaviour == "slow-start" {
			time.Sleep(slowStart)
		}
		l, err := open(h)
		return &misbehaving{l}, err
	})
}

func (m *misbehaving) Acquire(r *kit.Request) kit.Outcome {
	if behaviour == "retry-forever" {
		r.Ctx = context.WithoutCancel(r.Ctx)
	}
	o := m.lock.Acquire(r)
	for deadline := time.Now().Add(retryFor); behaviour == "retry-forever" && !o.OK() && time.Now().Before(deadline); {
		time.Sleep(retryEvery)
		o = m.lock.Acquire(r)
	}
	if behaviour == "late-command" {
		time.AfterFunc(lateAfter, func() { m.client.Get(r.Ctx, m.hello.LockName) })
	}
	return o
}
