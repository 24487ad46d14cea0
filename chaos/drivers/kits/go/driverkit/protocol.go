package driverkit

// The wire: newline-delimited JSON, one object per line (docs/driver-protocol.md, Messages).

import (
	"encoding/json"
	"net"
	"os"
	"strconv"
	"sync"
	"time"
)

// Address is a node's address as the hello gives it: through this client's own proxies.
type Address struct {
	Host string `json:"host"`
	Port int    `json:"port"`
}

// String is host:port, as net.Dial and go-redis take it.
func (a Address) String() string { return net.JoinHostPort(a.Host, strconv.Itoa(a.Port)) }

// Unbounded is a Capacity with no limit (the hello's "capacity": null; a read-write lock's
// readers).
const Unbounded = -1

// Hello is the harness's first line: who this client is, what to lock, where to connect.
type Hello struct {
	ClientID        string    `json:"client_id"`
	LockName        string    `json:"lock_name"`
	TTLMs           int       `json:"ttl_ms"`
	Nodes           []Address `json:"nodes"`
	SocketTimeoutMs int       `json:"socket_timeout_ms"`
	Password        *string   `json:"password"`
	// With Sentinel: where to discover the master, and Route from each address the
	// Sentinels report ("host:port") to this client's proxy for that node.
	Sentinels  []Address          `json:"sentinels"`
	MasterName *string            `json:"master_name"`
	Route      map[string]Address `json:"route"`
	// Capacity is the run's permits: 1 unless the hello says otherwise (it says so only for
	// a lock whose description declared a capacity), Unbounded when it says null.
	Capacity int `json:"-"`
}

// TTL is the lease time the run asks for.
func (h *Hello) TTL() time.Duration { return time.Duration(h.TTLMs) * time.Millisecond }

// SocketTimeout is the per-command timeout the harness's own clients use.
func (h *Hello) SocketTimeout() time.Duration {
	return time.Duration(h.SocketTimeoutMs) * time.Millisecond
}

// incoming is any line the harness writes; which fields mean something depends on Type.
type incoming struct {
	Type     string          `json:"type"`
	ID       *int64          `json:"id"`
	Token    *string         `json:"token"`
	Announce bool            `json:"announce"`
	Mode     string          `json:"mode"`
	Permits  int             `json:"permits"`
	Capacity json.RawMessage `json:"capacity"`
	Hello
}

// capacity: absent is 1, null is Unbounded.
func (m *incoming) capacity() (int, error) {
	switch string(m.Capacity) {
	case "":
		return 1, nil
	case "null":
		return Unbounded, nil
	}
	var n int
	err := json.Unmarshal(m.Capacity, &n)
	return n, err
}

// reply answers a request (ok, refused, error, and the replies issue 34 added).
type reply struct {
	Type       string   `json:"type"`
	ID         int64    `json:"id"`
	Token      string   `json:"token,omitempty"`
	ValidityMs *float64 `json:"validity_ms,omitempty"`
	Fence      *int64   `json:"fence,omitempty"`
	Definite   *bool    `json:"definite,omitempty"`
	Message    string   `json:"message,omitempty"`
}

type before struct {
	Type    string `json:"type"`
	ID      int64  `json:"id"`
	Command string `json:"command"`
}

type renewed struct {
	Type       string  `json:"type"`
	Token      string  `json:"token"`
	ValidityMs float64 `json:"validity_ms"`
	SentNs     int64   `json:"sent_ns"`
}

type unasked struct {
	Type    string `json:"type"`
	Command string `json:"command,omitempty"`
	Message string `json:"message,omitempty"`
}

// output writes whole lines, one write each, from any goroutine. Once Serve runs it is the
// process's real standard output, and file descriptor 1 is standard error (serve.go).
type output struct {
	mu sync.Mutex
	f  *os.File
}

func (o *output) write(message any) {
	line, err := json.Marshal(message)
	if err != nil { // a kit bug: every message is a plain struct
		panic(err)
	}
	line = append(line, '\n')
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, err := o.f.Write(line); err != nil {
		os.Exit(0) // the harness is gone: nobody reads us any more
	}
}
