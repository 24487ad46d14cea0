//! The Rust kit's conformance driver (tests/drivers/test_kit_conformance.py): the skeleton's
//! lock (../skeleton/src/lock.rs), misbehaving as `LOCKCHAOS_CONFORMANCE` asks, so the tests
//! can see the kit answer each case as the protocol says:
//!
//! * `retry-forever`: acquire retries until it wins, as a library that cannot be told to try
//!   once: the kit must answer within the harness's bound (indeterminate) and release the
//!   grant that comes too late;
//! * `late-hook`: acquire's command goes out only after the kit's bound, so after its answer —
//!   the only way a command of a request can reach the kit's proxies after the answer, since
//!   they see connections, not threads: it must be reported `sent`, never announced under the
//!   next request, and its grant released;
//! * `slow-start`: the lock takes 5 s to open (a cold start): the hello waits for it;
//! * unset: the skeleton's lock as it is.
//!
//! Whatever the knob, it logs its wall clock (`SystemTime::now()`) when it opens: under
//! libfaketime that is the faked one, which is why the kit announces `faked-clock`.

#[path = "../../skeleton/src/lock.rs"]
mod lock;

use std::thread::sleep;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use lockchaos_driver_kit::{log, serve, Description, Hello, Lock, Outcome, Request};
use lock::CompareAndDelete;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Knob {
    None,
    RetryForever,
    LateHook,
    SlowStart,
}

struct Conformance {
    lock: CompareAndDelete,
    knob: Knob,
    /// The kit's bound on a request (max(3 s, 4 × TTL) × 0.8), which `late-hook` outlasts.
    bound: Duration,
}

/// A library's retries that never give up, bounded all the same (as every loop here).
const RETRY_FOREVER: Duration = Duration::from_secs(600);

impl Lock for Conformance {
    type Lease = ();
    const EXTENDS: bool = true;

    fn acquire(&self, req: &Request) -> Outcome<()> {
        match self.knob {
            Knob::RetryForever => {
                let start = Instant::now();
                loop {
                    let outcome = self.lock.acquire(req);
                    if matches!(outcome, Outcome::Granted { .. }) || start.elapsed() > RETRY_FOREVER {
                        return outcome;
                    }
                    sleep(Duration::from_millis(20));
                }
            }
            Knob::LateHook => {
                sleep(self.bound + Duration::from_millis(500));
                self.lock.acquire(req)
            }
            Knob::None | Knob::SlowStart => self.lock.acquire(req),
        }
    }

    fn release(&self, req: &Request, lease: &()) -> Outcome<()> {
        self.lock.release(req, lease)
    }

    fn extend(&self, req: &Request, lease: &()) -> Outcome<()> {
        self.lock.extend(req, lease)
    }
}

fn main() {
    let knob = match std::env::var("LOCKCHAOS_CONFORMANCE").as_deref() {
        Ok("retry-forever") => Knob::RetryForever,
        Ok("late-hook") => Knob::LateHook,
        Ok("slow-start") => Knob::SlowStart,
        Ok("") | Err(_) => Knob::None,
        Ok(other) => {
            eprintln!("LOCKCHAOS_CONFORMANCE={other}: one of retry-forever, late-hook, slow-start");
            std::process::exit(2);
        }
    };
    let description = Description {
        driver: "rust-conformance".into(),
        library: "redis-rs 0.23 (the Rust kit's skeleton)".into(),
        ..Description::default()
    };
    serve(description, move |hello: &Hello| {
        let wall = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        log(format!("wall clock: {} ms since the epoch", wall.as_millis()));
        if knob == Knob::SlowStart {
            sleep(Duration::from_secs(5));
        }
        let bound = Duration::from_secs(3).max(4 * hello.ttl()) * 4 / 5;
        Ok(Conformance { lock: CompareAndDelete::open(hello)?, knob, bound })
    })
}
