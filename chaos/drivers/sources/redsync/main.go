// The lockchaos driver for go-redsync (Redlock over go-redis v9), docs/driver-protocol.md.
//
// One redsync.Mutex per acquire, on every node of the hello (N standalone masters), with the
// library's defaults except: expiry = the run's TTL, one try (the harness owns the retry
// loop), a per-node timeout of TTL/10 (see below) and the value = a token that starts with
// the client id. go-redis never retries a
// command (MaxRetries -1): a retried SET NX whose first reply was lost would lie.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/hashicorp/go-multierror"
	goredislib "github.com/redis/go-redis/v9"
)

const library = "go-redsync v4.13.0 + go-redis v9.23.0"

type address struct {
	Host string `json:"host"`
	Port int    `json:"port"`
}

type message struct {
	Type            string    `json:"type"`
	ID              int64     `json:"id"`
	Token           string    `json:"token"`
	Announce        bool      `json:"announce"`
	ClientID        string    `json:"client_id"`
	LockName        string    `json:"lock_name"`
	TTLMs           int       `json:"ttl_ms"`
	Nodes           []address `json:"nodes"`
	SocketTimeoutMs int       `json:"socket_timeout_ms"`
	Password        *string   `json:"password"`
}

var (
	debug    = os.Getenv("LOCKCHAOS_DRIVER_DEBUG") != ""
	out      = bufio.NewWriter(os.Stdout)
	outMu    sync.Mutex
	in       *bufio.Scanner
	inMu     sync.Mutex // the pause-points exchange reads stdin from the command goroutines
	current  int64      = -1
	announce bool
)

func write(v map[string]any) {
	b, _ := json.Marshal(v)
	outMu.Lock()
	defer outMu.Unlock()
	out.Write(b)
	out.WriteByte('\n')
	out.Flush()
}

// announcer is a go-redis hook: with the pause-points capability, every command of an
// operation is announced ("before") and sent only once the harness says "go". A connection
// go-redis opens during one runs its set-up through the same hook (HELLO, AUTH; the rest is
// pipelined, which is not announced): not the lock's commands, so not announced.
//
// The harness's hold on a command (its announcement's round trip, queued behind the other
// nodes' — one stdin —, or a pause point) is not the library's time: the command leaves with
// what was left of its deadline when it was announced, as a Python client's socket timeout
// starts when it writes. redsync gives a whole acquire TTL/10 (20 ms at a 200 ms TTL); on a
// loaded machine five announcements often took longer, and the acquire ended in "i/o
// timeout" on the nodes announced last (five clients announcing every acquire: one grant in
// a 2 s warm-up).
type announcer struct{}

var setUp = map[string]bool{"hello": true, "auth": true}

func (announcer) DialHook(next goredislib.DialHook) goredislib.DialHook { return next }
func (announcer) ProcessPipelineHook(next goredislib.ProcessPipelineHook) goredislib.ProcessPipelineHook {
	return next
}
func (announcer) ProcessHook(next goredislib.ProcessHook) goredislib.ProcessHook {
	return func(ctx context.Context, cmd goredislib.Cmder) error {
		if announce && current >= 0 && !setUp[cmd.Name()] {
			announced := time.Now()
			inMu.Lock()
			write(map[string]any{"type": "before", "id": current, "command": strings.ToUpper(cmd.Name())})
			if !in.Scan() {
				os.Exit(0)
			}
			inMu.Unlock()
			if deadline, ok := ctx.Deadline(); ok {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(context.WithoutCancel(ctx), deadline.Add(time.Since(announced)))
				defer cancel()
			}
		}
		return next(ctx, cmd)
	}
}

func newToken(clientID string) string {
	b := make([]byte, 8)
	rand.Read(b)
	return clientID + ":" + hex.EncodeToString(b)
}

func main() {
	in = bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	var (
		rs      *redsync.Redsync
		hello   message
		nodes   int
		mutexes = map[string]*redsync.Mutex{}
	)
	for in.Scan() {
		line := strings.TrimSpace(in.Text())
		if line == "" {
			continue
		}
		var m message
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			fmt.Fprintln(os.Stderr, "redsync driver: bad request:", err)
			os.Exit(2)
		}
		caps := []string{"pause-points"}
		switch m.Type {
		case "describe":
			write(map[string]any{"type": "describe", "driver": "redsync", "language": "go", "library": library, "capabilities": caps})
			continue
		case "hello":
			hello = m
			timeout := time.Duration(m.SocketTimeoutMs) * time.Millisecond
			var pools []redsyncredis.Pool
			for _, a := range m.Nodes {
				opts := &goredislib.Options{
					Addr:                  net.JoinHostPort(a.Host, strconv.Itoa(a.Port)),
					DialTimeout:           timeout,
					ReadTimeout:           timeout,
					WriteTimeout:          timeout,
					MaxRetries:            -1,
					PoolSize:              4,
					Protocol:              2,
					DisableIdentity:       true,
					ContextTimeoutEnabled: true,
				}
				if m.Password != nil {
					opts.Password = *m.Password
				}
				client := goredislib.NewClient(opts)
				client.AddHook(announcer{})
				pools = append(pools, goredis.NewPool(client))
			}
			nodes = len(pools)
			if nodes < 3 {
				write(map[string]any{"type": "hello", "ok": false, "message": fmt.Sprintf("redsync needs at least 3 independent masters (got %d): use --topology standalone --nodes 5", nodes)})
				return
			}
			rs = redsync.New(pools...)
			write(map[string]any{"type": "hello", "ok": true, "driver": "redsync", "language": "go", "library": library, "capabilities": caps})
			continue
		}
		if rs == nil {
			write(map[string]any{"type": "error", "id": m.ID, "definite": true, "message": "no hello yet"})
			continue
		}
		current, announce = m.ID, m.Announce
		var reply map[string]any
		switch m.Type {
		case "acquire":
			token := newToken(hello.ClientID)
			mutex := rs.NewMutex(hello.LockName,
				redsync.WithExpiry(time.Duration(hello.TTLMs)*time.Millisecond),
				redsync.WithTries(1),
				// Per-node timeout: a tenth of the TTL, as chaos/locks/redlock.py. redsync's
				// default (5%) is 10 ms at the 200 ms TTLs lockchaos compresses time to, which a
				// loaded two-core machine misses on every node: nobody ever wins a quorum.
				redsync.WithTimeoutFactor(0.1),
				redsync.WithGenValueFunc(func() (string, error) { return token, nil }))
			start := time.Now()
			if err := mutex.TryLock(); err != nil {
				// Not acquired: redsync released what it got on every node (best effort).
				if debug {
					fmt.Fprintln(os.Stderr, time.Now().Format("15:04:05.000"), "acquire refused:", err)
				}
				reply = notAcquired(err, m.ID, nodes)
			} else {
				mutexes = map[string]*redsync.Mutex{token: mutex}
				validity := float64(mutex.Until().Sub(start).Microseconds()) / 1000
				reply = map[string]any{"type": "ok", "id": m.ID, "token": token, "validity_ms": validity}
			}
		case "release":
			mutex, ok := mutexes[m.Token]
			if !ok {
				reply = map[string]any{"type": "refused", "id": m.ID, "message": "no such lease"}
				break
			}
			delete(mutexes, m.Token)
			reply = release(mutex, m.ID, nodes)
		default:
			reply = map[string]any{"type": "error", "id": m.ID, "definite": true, "message": "unsupported request " + m.Type}
		}
		current, announce = -1, false
		write(reply)
	}
}

// votes: of the nodes, how many did it (done) and how many may have (unknown: a Redis error,
// after which the command may have landed), read off redsync's error for the rest.
func votes(err error, nodes int) (done, unknown int) {
	definite := 0
	var merr *multierror.Error
	if errors.As(err, &merr) {
		for _, e := range merr.Errors {
			var re *redsync.RedisError
			if errors.As(e, &re) {
				unknown++
			} else {
				definite++
			}
		}
	}
	return nodes - definite - unknown, unknown
}

// notAcquired: refused when the nodes that answered decide it whichever way the unknown ones
// went — a quorum taken by someone else, too few that could have granted, or a quorum granted
// too late (redsync's validity came out ≤ 0: Redlock says no, and redsync unlocked) —
// otherwise (a quorum lost to nodes that did not answer) indeterminate
// (docs/driver-protocol.md, "decides by quorum").
func notAcquired(err error, id int64, nodes int) map[string]any {
	quorum := nodes/2 + 1
	var taken *redsync.ErrTaken
	granted, unknown := votes(err, nodes)
	if errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken) ||
		granted >= quorum || granted+unknown < quorum {
		return map[string]any{"type": "refused", "id": id, "message": err.Error()}
	}
	return map[string]any{"type": "error", "id": id, "definite": false, "message": err.Error()}
}

// release: ok when a quorum deleted our value; refused when the nodes that answered prove no
// quorum did; otherwise (nodes that did not answer could decide it) an indeterminate error.
func release(mutex *redsync.Mutex, id int64, nodes int) map[string]any {
	ok, err := mutex.Unlock()
	if ok {
		return map[string]any{"type": "ok", "id": id}
	}
	quorum := nodes/2 + 1
	var taken *redsync.ErrTaken
	if errors.As(err, &taken) {
		return map[string]any{"type": "refused", "id": id, "message": err.Error()}
	}
	deleted, unknown := votes(err, nodes)
	if deleted+unknown < quorum {
		return map[string]any{"type": "refused", "id": id, "message": fmt.Sprint(err)}
	}
	return map[string]any{"type": "error", "id": id, "definite": false, "message": fmt.Sprint(err)}
}
