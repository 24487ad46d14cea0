package driverkit

// Unasked lines: renewals, background commands, log lines.

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// MonotonicNs is this machine's CLOCK_MONOTONIC in nanoseconds: the history's clock, in which
// Renewed dates a renewal. (time.Now's monotonic reading has another origin.)
func MonotonicNs() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err) // CLOCK_MONOTONIC exists on every Linux
	}
	return ts.Nano()
}

// Renewed reports a background renewal (a watchdog's) of the lease token that succeeded: valid
// for validityMs from sentNs (MonotonicNs when the renewal command was sent). Report only
// renewals seen to succeed; one after which the library gave the lease up (it found the key
// gone) with validityMs 0.
func Renewed(token string, validityMs float64, sentNs int64) {
	std.out.write(renewed{Type: "renewed", Token: token, ValidityMs: validityMs, SentNs: sentNs})
}

// Sent reports a command the library sent on its own, outside any request, as it goes out.
// The kit's hook reports go-redis's by itself.
func Sent(command string) {
	std.out.write(unasked{Type: "sent", Command: command})
}

// Log writes a line to the driver's log (shown when the driver breaks).
func Log(format string, args ...any) { std.Log(format, args...) }

func (s *server) Log(format string, args ...any) {
	s.out.write(unasked{Type: "log", Message: fmt.Sprintf(format, args...)})
}
