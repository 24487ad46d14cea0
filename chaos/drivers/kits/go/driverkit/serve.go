package driverkit

// Serve: the handshake, one request at a time, tokens and leases, bounded waits.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Lock is a lock as the kit drives it: one method per request. Each gets the Request, whose
// Ctx it must pass to its library (it tags the library's commands as this request's, for the
// pause points, and is cancelled when the kit gives up on the request).
type Lock interface {
	// Acquire tries once (the harness owns the retry loop): Granted (the lease: what
	// Release and Extend get back as Request.Lease), Refused or Failed. Request.Token is
	// the lease's token: store it as the lock's value when the library lets you choose one.
	Acquire(r *Request) Outcome
	// Release: Released, Refused (certainly not ours any more), Kept or Failed.
	Release(r *Request) Outcome
}

// Extender is a Lock that can extend a lease: Granted (the new validity), Refused, Revoked,
// Invalidated or Failed. The kit announces the "extend" capability for it.
type Extender interface {
	Extend(r *Request) Outcome
}

// Description is what the driver says of itself and of what its lock needs
// (docs/driver-protocol.md, describe).
type Description struct {
	Driver  string // its name, e.g. "redsync"
	Library string // the library it runs, with its version
	// Capabilities beyond those the kit fills in: "extend" when the lock is an Extender,
	// "pause-points" when its clients come from NewClient or NewFailoverClient (or Hook).
	Capabilities []string
	// Unhooked: the library's commands do not pass the kit's go-redis hook (a client the
	// kit did not make): no pause-points.
	Unhooked bool
	// Topology: "standalone" when the lock needs independent masters (a Redlock); "" any.
	Topology string
	MinNodes int // the fewest data nodes it can run on (0: one); a hello with fewer is refused
	// What it grants: Capacity permits at once (0: a mutex; Unbounded: no limit), in Modes
	// ("exclusive", "shared"; nil: exclusive only), Fair if it grants waiters in order, at
	// most MaxPermits per acquire (0: up to the capacity). The kit refuses an acquire that
	// asks for another mode or more permits, definitely, before the lock sees it.
	Capacity   int
	Modes      []string
	Fair       bool
	MaxPermits int
	// TTLGranularityMs: the TTLs it can express are multiples of this (1000: whole seconds;
	// 0: any). Renews: it renews its leases in the background (report them with Renewed).
	TTLGranularityMs int
	Renews           bool
}

// Request is one acquire, release or extend.
type Request struct {
	ID      int64
	Op      string          // "acquire", "release" or "extend"
	Token   string          // acquire: the new lease's token; release, extend: the lease's
	Lease   any             // release, extend: what Acquire (or the last Extend) granted
	Mode    string          // acquire of a lock that is not a mutex: one of its modes
	Permits int             // acquire of a lock that is not a mutex: at least 1
	Ctx     context.Context // pass it to the library (see Lock)

	start    time.Time
	announce bool
	cancel   context.CancelFunc
	answered atomic.Bool
	over     chan struct{} // closed once answered: announcements of it wait no more
	waiting  []chan struct{}
	progress int // "go" lines received: the harness's time, not the library's
}

func newRequest(id int64, op, token string) *Request {
	ctx, cancel := context.WithCancel(context.Background())
	r := &Request{ID: id, Op: op, Token: token, start: time.Now(), cancel: cancel,
		over: make(chan struct{})}
	r.Ctx = context.WithValue(ctx, requestKey{}, r)
	return r
}

// Until is the validity of a lease that ends at t, in ms from when the request was sent,
// floored to a microsecond: never more than the library's own reckoning.
func (r *Request) Until(t time.Time) float64 { return floorMs(t.Sub(r.start)) }

// LeftAtReturn is the validity of a lease the library says has left at its return, in ms
// from when the request was sent: the time the request took is added back.
func (r *Request) LeftAtReturn(left time.Duration) float64 {
	return floorMs(left + time.Since(r.start))
}

func floorMs(d time.Duration) float64 { return math.Floor(float64(d)/1e3) / 1e3 }

// server is the process's one driver (Serve): the hook and Renewed reach it through std.
type server struct {
	out     *output
	mu      sync.Mutex // current, lastID, leases, order, each request's waiting and progress
	current *Request   // the request being served (not answered yet)
	lastID  int64
	leases  map[string]*lease
	order   []string
	hooked  atomic.Int32 // clients made with the kit's hook
	ready   atomic.Int32 // 0: no hello yet, 1: hello being served, 2: ready

	desc    Description
	extends bool
	open    func(*Hello) (Lock, error)
	lock    Lock // set before ready is 2
	hello   *Hello
	budget  time.Duration
}

type lease struct {
	value       any
	invalidated string // why its release cannot be sent any more
}

var std = &server{out: &output{f: os.Stdout}}

const (
	maxLeases   = 1024                   // remembered at once: older tokens are forgotten
	helloBudget = 20 * time.Second       // the harness waits 30 s for the hello's answer
	slice       = 50 * time.Millisecond  // a bounded wait looks at its budget this often
	stallGap    = 250 * time.Millisecond // a slice longer than this: the process was stopped
	maxSlices   = 1 << 20                // bounds the wait loop in count (SIGSTOPs do not count)
)

// Serve runs the driver until its input ends, then exits. open builds the lock from the hello
// (connect lazily: the harness waits at most 30 s); an error is the hello's refusal, one line,
// after which the driver exits. open must return the lock's concrete type (a pointer to your
// struct): the kit reads from it, before any hello, whether it can extend.
func Serve[L Lock](d Description, open func(h *Hello) (L, error)) {
	var zero L
	_, extends := any(zero).(Extender)
	s := std
	s.desc, s.extends = d, extends
	s.open = func(h *Hello) (Lock, error) { return open(h) }
	s.leases = map[string]*lease{}
	s.out.f = protocolOutput()
	if s.read(input()) {
		select {} // the reading went on in another goroutine, which exits at the input's end
	}
	os.Exit(0)
}

// protocolOutput keeps the real standard output for the protocol alone and points file
// descriptor 1 (and os.Stdout) at standard error, where whatever a library prints belongs.
func protocolOutput() *os.File {
	fd, err := unix.FcntlInt(1, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil || unix.Dup2(2, 1) != nil {
		return os.Stdout
	}
	out := os.NewFile(uintptr(fd), "protocol")
	os.Stdout = os.Stderr
	return out
}

// input: the harness's lines, read through Go's poller (standard input made non-blocking), so
// that waiting for one parks a goroutine, not a thread.
func input() *bufio.Scanner {
	stdin := os.Stdin
	if unix.SetNonblock(0, true) == nil {
		stdin = os.NewFile(0, "stdin")
	}
	in := bufio.NewScanner(stdin)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	return in
}

// read: every harness line until the input ends (false: the client stopped, exit at once) or
// a request comes (true). The goroutine that read a request serves it, and a new one reads on
// meanwhile (go lines, the input's end): the request runs at once, without waking a thread.
func (s *server) read(in *bufio.Scanner) bool {
	for in.Scan() {
		line := bytes.TrimSpace(in.Bytes())
		if len(line) == 0 {
			continue
		}
		var m incoming
		if err := json.Unmarshal(line, &m); err != nil {
			s.refuse(idOf(line), fmt.Sprintf("a line that is not the protocol (%v): %.80s", err, line))
			continue
		}
		switch m.Type {
		case "go":
			s.goAhead(m.ID)
		case "describe":
			s.out.write(s.description())
		case "hello":
			if !s.ready.CompareAndSwap(0, 1) {
				s.Log("a second hello: ignored")
				continue
			}
			h := m.Hello
			capacity, err := m.capacity()
			if err == nil {
				err = s.enough(&h)
			}
			if err != nil {
				s.refuseHello(err)
			}
			h.Capacity = capacity
			go s.start(&h)
		case "acquire", "release", "extend":
			if r := s.request(&m); r != nil {
				go s.readOn(in)
				s.handle(r)
				return true
			}
		default:
			s.refuse(m.ID, fmt.Sprintf("an unknown request type %q", m.Type))
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "driverkit: reading the harness:", err)
	}
	return false
}

func (s *server) readOn(in *bufio.Scanner) {
	if !s.read(in) {
		os.Exit(0)
	}
}

// refuse: a line the kit cannot serve gets a log line, and an error (definite: nothing was
// done) when it has an id to answer.
func (s *server) refuse(id *int64, why string) {
	s.Log("%s", why)
	if id != nil {
		s.out.write(Failed(true, why).reply(*id, ""))
	}
}

// idOf: the id of a line that is not the protocol, if it has one to answer.
func idOf(line []byte) *int64 {
	var probe struct{ ID json.RawMessage }
	var id int64
	if json.Unmarshal(line, &probe) != nil || json.Unmarshal(probe.ID, &id) != nil {
		return nil
	}
	return &id
}

// request checks one request's place in the sequence: the request to serve, or nil when it
// was answered here.
func (s *server) request(m *incoming) *Request {
	if m.ID == nil {
		s.Log("a %s without an id: ignored", m.Type)
		return nil
	}
	s.mu.Lock()
	why := ""
	switch {
	case s.ready.Load() != 2:
		why = "no hello answered yet"
	case s.current != nil:
		why = fmt.Sprintf("%s #%d while #%d is not answered", m.Type, *m.ID, s.current.ID)
	case *m.ID <= s.lastID:
		why = fmt.Sprintf("%s #%d after #%d: ids grow", m.Type, *m.ID, s.lastID)
	case m.Type != "acquire" && m.Token == nil:
		why = m.Type + " without a token"
	case m.Type == "extend" && !s.extends:
		why = "extend: this lock cannot extend"
	}
	if why != "" {
		s.mu.Unlock()
		s.refuse(m.ID, why)
		return nil
	}
	token := ""
	if m.Token != nil {
		token = *m.Token
	}
	r := newRequest(*m.ID, m.Type, token)
	r.Mode, r.Permits, r.announce = m.Mode, m.Permits, m.Announce
	s.current, s.lastID = r, r.ID // one at a time: the next is refused while this one is current
	s.mu.Unlock()
	return r
}

// goAhead: the harness's "go" for the oldest announcement of the current request.
func (s *server) goAhead(id *int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.current
	if id == nil || r == nil || r.ID != *id || len(r.waiting) == 0 {
		s.Log("a go that no announcement waits for: ignored")
		return
	}
	close(r.waiting[0])
	r.waiting = r.waiting[1:]
	r.progress++
}

func (s *server) description() map[string]any {
	d := map[string]any{"type": "describe", "driver": s.desc.Driver, "language": "go",
		"library": s.desc.Library, "capabilities": s.capabilities(!s.desc.Unhooked)}
	if s.desc.Topology != "" {
		d["topology"] = s.desc.Topology
	}
	if s.desc.MinNodes > 0 {
		d["min_nodes"] = s.desc.MinNodes
	}
	switch {
	case s.desc.Capacity == Unbounded:
		d["capacity"] = nil
	case s.desc.Capacity > 0:
		d["capacity"] = s.desc.Capacity
	}
	if len(s.desc.Modes) > 0 {
		d["modes"] = s.desc.Modes
	}
	if s.desc.Fair {
		d["fair"] = true
	}
	if s.desc.MaxPermits > 0 {
		d["max_permits"] = s.desc.MaxPermits
	}
	if s.desc.TTLGranularityMs > 1 {
		d["ttl_granularity_ms"] = s.desc.TTLGranularityMs
	}
	if s.desc.Renews {
		d["renews"] = true
	}
	return d
}

func (s *server) capabilities(hooked bool) []string {
	caps := slices.Clone(s.desc.Capabilities)
	if s.extends {
		caps = append(caps, "extend")
	}
	if hooked {
		caps = append(caps, "pause-points")
	}
	if caps == nil {
		caps = []string{}
	}
	return caps
}

func (s *server) start(h *Hello) {
	type opened struct {
		lock Lock
		err  error
	}
	done := make(chan opened, 1)
	go func() {
		lock, err := s.open(h)
		done <- opened{lock, err}
	}()
	var o opened
	select {
	case o = <-done:
	case <-time.After(helloBudget):
		o.err = fmt.Errorf("the lock was not ready within %s (connect lazily)", helloBudget)
	}
	if o.err != nil {
		s.refuseHello(o.err)
	}
	s.lock, s.hello = o.lock, h
	// A bound below the harness's, max(3 s, 4 × TTL): answered before it gives up.
	s.budget = max(3*time.Second, 4*h.TTL()) * 4 / 5
	hooked := !s.desc.Unhooked
	if hooked && s.hooked.Load() == 0 {
		s.Log("no client of the lock has the kit's hook (driverkit.NewClient): no pause-points")
		hooked = false
	}
	s.ready.Store(2) // before the answer: the harness's first request may follow it at once
	s.out.write(map[string]any{"type": "hello", "ok": true, "driver": s.desc.Driver,
		"language": "go", "library": s.desc.Library, "capabilities": s.capabilities(hooked)})
}

// refuseHello answers the hello with its refusal, one line, and exits.
func (s *server) refuseHello(err error) {
	why, _, _ := strings.Cut(err.Error(), "\n")
	s.out.write(map[string]any{"type": "hello", "ok": false, "message": why})
	os.Exit(0)
}

// enough: the hello's nodes are at least the MinNodes described (else the hello's refusal).
func (s *server) enough(h *Hello) error {
	if len(h.Nodes) >= s.desc.MinNodes {
		return nil
	}
	if s.desc.Topology == "standalone" {
		return fmt.Errorf("%s needs at least %d independent masters (got %d): use --topology "+
			"standalone --nodes %d", s.desc.Driver, s.desc.MinNodes, len(h.Nodes), max(5, s.desc.MinNodes))
	}
	return fmt.Errorf("%s needs at least %d nodes (got %d): use --nodes %d", s.desc.Driver,
		s.desc.MinNodes, len(h.Nodes), s.desc.MinNodes)
}

// handle serves one request and answers it, unless its bound (watch) answered it first.
func (s *server) handle(r *Request) {
	if o, ok := s.prepare(r); !ok {
		s.answer(r, o)
		return
	}
	stop := s.watch(r)
	o := s.call(r)
	stop()
	if only, limited := answers[o.kind]; limited && only != r.Op {
		o = Failed(false, fmt.Sprintf("the lock answered %s #%d with %s, which only an %s may have",
			r.Op, r.ID, wire[o.kind], only))
	}
	if !s.answer(r, o) {
		s.late(r, o)
	}
}

// prepare checks what only the kit knows (the lease of the token, the modes and permits the
// lock declared) and fills the request in; false with the answer when the lock is not asked.
func (s *server) prepare(r *Request) (Outcome, bool) {
	if r.Op == "acquire" {
		switch {
		case r.Mode != "" && !slices.Contains(s.modes(), r.Mode):
			return Failed(true, fmt.Sprintf("no mode %q: it grants %v", r.Mode, s.modes())), false
		case s.desc.MaxPermits > 0 && r.Permits > s.desc.MaxPermits:
			return Failed(true, fmt.Sprintf("at most %d permits per acquire, not %d",
				s.desc.MaxPermits, r.Permits)), false
		}
		if r.Permits == 0 {
			r.Permits = 1
		}
		r.Token = newToken(s.hello.ClientID)
		return Outcome{}, true
	}
	s.mu.Lock()
	l := s.leases[r.Token]
	s.mu.Unlock()
	switch {
	case l == nil:
		why := fmt.Sprintf("%s #%d: no lease %s (never granted, or released)", r.Op, r.ID, r.Token)
		s.Log("%s", why)
		return Failed(true, why), false
	case l.invalidated != "":
		return Failed(true, "not sent: the library invalidated the lease's lock object ("+l.invalidated+")"), false
	}
	r.Lease = l.value
	return Outcome{}, true
}

func (s *server) modes() []string {
	if len(s.desc.Modes) == 0 {
		return []string{"exclusive"}
	}
	return s.desc.Modes
}

// call runs the lock's method; a panic is an indeterminate error, not a dead driver.
func (s *server) call(r *Request) (o Outcome) {
	defer func() {
		if p := recover(); p != nil {
			o = Failed(false, fmt.Sprintf("the lock's %s panicked: %v", r.Op, p))
		}
	}()
	switch r.Op {
	case "acquire":
		return s.lock.Acquire(r)
	case "release":
		return s.lock.Release(r)
	}
	return s.lock.(Extender).Extend(r)
}

// watch bounds the request: it answers it (indeterminate) and cancels its context once the
// budget is spent, counted as the harness counts its own bound — only time the process ran (a
// slice that took far longer than asked was a SIGSTOP, which stops the harness's clock too),
// and not while a command of the request waits for the harness's "go" (each go starts the
// budget afresh, as each line restarts the harness's wait). A timer, not a goroutine: a
// request that returns in time costs one timer made and stopped.
func (s *server) watch(r *Request) (stop func()) {
	var (
		mu       sync.Mutex
		stopped  bool
		spent    time.Duration
		last     = time.Now()
		progress int
		timer    *time.Timer
		slices   int
	)
	check := func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		now := time.Now()
		gap := now.Sub(last)
		last = now
		s.mu.Lock()
		held := len(r.waiting) > 0 || r.progress != progress
		progress = r.progress
		s.mu.Unlock()
		switch {
		case held:
			spent = 0
		case gap < stallGap:
			spent += gap
		}
		if slices++; spent < s.budget && slices < maxSlices {
			timer.Reset(slice)
			return
		}
		r.cancel()
		s.answer(r, Failed(false, fmt.Sprintf("the lock's %s did not return within %.1f s (the "+
			"kit's bound, below the harness's): it may have happened", r.Op, s.budget.Seconds())))
	}
	mu.Lock()
	timer = time.AfterFunc(slice, check)
	mu.Unlock()
	return func() {
		mu.Lock()
		stopped = true
		timer.Stop()
		mu.Unlock()
	}
}

// late: the method of a request the kit had answered without it returned at last. A grant
// nobody asked for any more (the history says this client does not hold it) is released at
// once; its commands belong to no request, so they are reported as sent.
func (s *server) late(r *Request, o Outcome) {
	if r.Op != "acquire" || o.kind != granted {
		return
	}
	s.Log("acquire #%d granted after the kit answered it: releasing it", r.ID)
	gone := newRequest(r.ID, "release", r.Token)
	gone.Lease = o.lease
	gone.answered.Store(true)
	close(gone.over)
	stop := time.AfterFunc(s.budget, gone.cancel)
	defer stop.Stop()
	s.call(gone)
}

// answer writes the request's reply, once (false: it was answered already), and keeps the
// lease map up to date. The request stops being current first, so the harness's next request
// is never taken for one out of turn.
func (s *server) answer(r *Request, o Outcome) bool {
	s.mu.Lock()
	if r.answered.Load() {
		s.mu.Unlock()
		return false
	}
	r.answered.Store(true)
	close(r.over)
	r.waiting = nil
	if s.current == r {
		s.current = nil
	}
	switch {
	case r.Op == "acquire" && o.kind == granted:
		s.keep(r.Token, &lease{value: o.lease})
	case r.Op == "extend" && o.kind == granted && o.lease != nil:
		s.leases[r.Token].value = o.lease
	case r.Op != "acquire" && o.kind == invalidated:
		s.leases[r.Token].invalidated = fmt.Sprintf("%s #%d: %s", r.Op, r.ID, o.message)
	case r.Op == "release" && !(o.kind == failed && o.definite):
		delete(s.leases, r.Token) // a release that certainly did not happen can be asked again
	}
	s.mu.Unlock()
	reply := o.reply(r.ID, r.Token)
	if debug {
		fmt.Fprintf(os.Stderr, "%s %s #%d: %s %s\n", time.Now().Format("15:04:05.000"), r.Op, r.ID,
			reply.Type, reply.Message)
	}
	s.out.write(reply)
	return true
}

// debug (LOCKCHAOS_DRIVER_DEBUG set): every answer is logged on standard error too.
var debug = os.Getenv("LOCKCHAOS_DRIVER_DEBUG") != ""

func (s *server) keep(token string, l *lease) {
	s.leases[token] = l
	s.order = append(s.order, token)
	if len(s.order) > maxLeases {
		delete(s.leases, s.order[0])
		s.order = s.order[1:]
	}
}

func newToken(clientID string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return clientID + ":" + hex.EncodeToString(b)
}

// requestKey tags a context with the request it serves (Request.Ctx).
type requestKey struct{}

// requestOf: the request a context serves, nil outside any.
func requestOf(ctx context.Context) *Request {
	r, _ := ctx.Value(requestKey{}).(*Request)
	return r
}

var errAnswered = errors.New("not sent: the kit had answered its request (it gave up waiting)")

// announce says "before" for one command of r and waits for the harness's "go"; how long it
// was held. The before line and the waiter are queued together, under one lock, so several
// announcements of one request (a Redlock's nodes, at once) are answered in the order written.
func (s *server) announce(r *Request, command string) (time.Duration, error) {
	start := time.Now()
	ready := make(chan struct{})
	s.mu.Lock()
	if r.answered.Load() {
		s.mu.Unlock()
		return 0, errAnswered
	}
	r.waiting = append(r.waiting, ready)
	s.out.write(before{Type: "before", ID: r.ID, Command: command})
	s.mu.Unlock()
	select {
	case <-ready:
		return time.Since(start), nil
	case <-r.over:
		return time.Since(start), errAnswered
	}
}
