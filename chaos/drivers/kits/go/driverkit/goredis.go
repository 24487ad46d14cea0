package driverkit

// go-redis v9: clients configured as the rules require, and the hook that announces each
// command of a request (docs/driver-protocol.md, pause points).

import (
	"context"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Options for one node, as the rules require: no retried command (MaxRetries -1: a SET NX
// retried after its reply was lost comes back "taken" although the lock is ours), one dial per
// command (the harness owns the retry loop), the hello's socket timeout for dialing, reading
// and writing — or the operation's context deadline when that is sooner
// (ContextTimeoutEnabled: a Redlock's per-node timeout, far below the TTL) — RESP2 and no
// CLIENT SETINFO (less connection set-up), a small pool.
func Options(h *Hello, node Address) *redis.Options {
	t := h.SocketTimeout()
	o := &redis.Options{Addr: node.String(), DialTimeout: t, ReadTimeout: t, WriteTimeout: t,
		MaxRetries: -1, DialerRetries: 1, PoolSize: 4, Protocol: 2, DisableIdentity: true,
		ContextTimeoutEnabled: true}
	if h.Password != nil {
		o.Password = *h.Password
	}
	return o
}

// NewClient is a client of one node (Options) with the kit's hook.
func NewClient(h *Hello, node Address) *redis.Client {
	c := redis.NewClient(Options(h, node))
	Hook(c)
	return c
}

// NewFailoverClient is a client of the master the hello's Sentinels report, every address
// they report mapped through the hello's route (this client's proxies), with the kit's hook.
func NewFailoverClient(h *Hello) *redis.Client {
	o := Options(h, Address{})
	sentinels := make([]string, len(h.Sentinels))
	for i, a := range h.Sentinels {
		sentinels[i] = a.String()
	}
	master := ""
	if h.MasterName != nil {
		master = *h.MasterName
	}
	dialer := &net.Dialer{Timeout: o.DialTimeout}
	c := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: master, SentinelAddrs: sentinels, Password: o.Password,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if proxy, ok := h.Route[addr]; ok {
				addr = proxy.String()
			}
			return dialer.DialContext(ctx, network, addr)
		},
		DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
		MaxRetries: o.MaxRetries, DialerRetries: o.DialerRetries, PoolSize: o.PoolSize,
		Protocol: o.Protocol, DisableIdentity: true, ContextTimeoutEnabled: true})
	Hook(c)
	return c
}

// Hook installs the kit's hook on a client the kit did not make (configure it as Options
// does). Every command it sends with a request's context (Request.Ctx, or one derived from
// it) is announced and sent once the harness says go; one sent with any other context, or
// after its request was answered (a renewal timer, a goroutine the library left running), is
// reported as sent. Pass the request's context to the library, or its commands go unannounced.
func Hook(c interface{ AddHook(redis.Hook) }) {
	c.AddHook(hook{})
	std.hooked.Add(1)
}

// setUp: a connection's own set-up, which go-redis runs through the hooks inside the operation
// that needed the connection (HELLO, AUTH; the rest pipelined): not the lock's commands.
var setUp = map[string]bool{"hello": true, "auth": true, "select": true, "client": true,
	"ping": true, "readonly": true}

type hook struct{}

func (hook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		ctx, done, err := std.hold(ctx, cmd)
		if err != nil {
			cmd.SetErr(err)
			return err
		}
		defer done()
		return next(ctx, cmd)
	}
}

func (hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		ctx, done, err := std.hold(ctx, cmds...)
		if err != nil {
			for _, cmd := range cmds {
				cmd.SetErr(err)
			}
			return err
		}
		defer done()
		return next(ctx, cmds)
	}
}

// hold announces the commands about to go out, or reports them sent, and returns the context
// to send them with: the harness's hold on them is not the library's time, so a deadline the
// library set before the announcements moves on by it — the command leaves with what was
// left of its deadline, as a Python client's socket timeout starts when it writes. (redsync
// gives a whole acquire TTL/10, 20 ms at a 200 ms TTL; announcements queued behind each other
// on a loaded machine ate it, and announced acquires ended in "i/o timeout".)
func (s *server) hold(ctx context.Context, cmds ...redis.Cmder) (context.Context, func(), error) {
	r := requestOf(ctx)
	var held time.Duration
	for _, cmd := range cmds {
		if setUp[cmd.Name()] {
			continue
		}
		switch {
		case r == nil || r.answered.Load():
			Sent(strings.ToUpper(cmd.Name()))
		case r.announce:
			d, err := s.announce(r, strings.ToUpper(cmd.Name()))
			if err != nil {
				return ctx, func() {}, err
			}
			held += d
		}
	}
	deadline, ok := ctx.Deadline()
	if held == 0 || !ok {
		return ctx, func() {}, nil
	}
	if err := ctx.Err(); err != nil && err != context.DeadlineExceeded {
		return ctx, func() {}, err // cancelled by the library or by the kit: not sent
	}
	moved, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline.Add(held))
	stop := context.AfterFunc(r.Ctx, cancel) // the kit's cancel still reaches it
	return moved, func() { stop(); cancel() }, nil
}
