// Package driverkit turns a lock written in Go into a lockchaos driver
// (docs/driver-protocol.md): a driver is one call,
//
//	func main() { driverkit.Serve(description, newLock) }
//
// and a Lock with Acquire and Release (and Extend, when it can). The kit does the rest: the
// newline-delimited JSON on stdin and stdout, the handshake (describe, hello), one request at
// a time, a token per acquire and the map from it to the library's lease, every request
// answered within the harness's bound (a library that overruns it is answered "indeterminate"
// and a grant it hands over too late is released at once), the quorum rule for a multi-node
// lock (Tally), renewals dated by CLOCK_MONOTONIC (Renewed), and the go-redis v9 hook that
// announces each command of a request before sending it (pause points: NewClient).
//
// Only protocol lines go to the real standard output: the kit moves file descriptor 1 to
// standard error when it starts, so a library that prints or logs cannot break the protocol.
//
// A Go driver cannot have the faked-clock capability: a Go binary reads the wall clock
// through the vDSO, not through libc, so libfaketime cannot move it (docs/driver-protocol.md,
// Faults).
package driverkit
