//! lockchaos-driver-kit: a Redis lock written in Rust, as a lockchaos driver
//! (docs/driver-protocol.md). A driver is one call,
//!
//! ```ignore
//! fn main() { lockchaos_driver_kit::serve(description, MyLock::open) }
//! ```
//!
//! and a [`Lock`] with `acquire` and `release` (and `extend`, when it can). The kit does the
//! rest: the newline-delimited JSON on stdin and stdout, the handshake (`describe`, `hello`),
//! one request at a time, a token per acquire and the map from it to the library's lock
//! object, every request answered within the harness's bound (a library that overruns it is
//! answered "indeterminate", and a grant it hands over too late is released at once), the
//! quorum rule for a multi-node lock ([`Tally`]), renewals dated by `CLOCK_MONOTONIC`
//! ([`renewed`]), and — since redis-rs has no command hook — a RESP proxy per node in front of
//! the harness's, which announces each command of a request before it leaves (pause points),
//! sees every reply, and holds each command to the hello's socket timeout.
//!
//! Only protocol lines go to the real standard output: the kit points file descriptor 1 at
//! standard error when it starts, so a library that prints cannot break the protocol.
//!
//! A Rust driver has the `faked-clock` capability: `std::time::SystemTime` reads the wall
//! clock through libc's `clock_gettime`, which libfaketime replaces (checked: under a clock
//! file a day ahead, `SystemTime::now()` is a day ahead). Its monotonic clock must stay true
//! (`FAKETIME_DONT_FAKE_MONOTONIC=1`, as lockchaos runs it): std's timed waits compute their
//! deadlines from it, and under a faked one they wait for the whole offset.

mod outcome;
mod proxy;
mod resp;
mod serve;
mod wire;

pub use outcome::{Outcome, Tally, Vote};
pub use resp::Reply;
pub use serve::{serve, Capacity, Description, Lock, Op, Request};
pub use wire::{log, monotonic_ns, renewed, sent, Hello, Node};
