//! The Rust kit's conformance driver (tests/drivers/test_kit_conformance.py): the skeleton's
//! lock (../skeleton/src/lock.rs), misbehaving as `LOCKCHAOS_CONFORMANCE` asks
//! (chaos/drivers/kits/README.md), so the tests can see the kit answer each case as the
//! protocol says:
//!
//! * `retry-forever`: acquire retries `SET NX` every 10 ms until it wins, with no bound of its
//!   own — the kit must answer in time and release the grant that comes too late;
//! * `late-command`: 300 ms after each acquire returned, a timer it started sends
//!   `GET <lock_name>` on its own connection — never a command of the next request;
//! * `slow-start`: building the lock takes 2 s;
//! * unset or empty: the skeleton's lock as it is.
//!
//! Whatever the behaviour, it logs its wall clock (`SystemTime::now()`) when it opens: under
//! libfaketime that is the faked one, which is why the kit announces `faked-clock`.

#[path = "../../skeleton/src/lock.rs"]
mod lock;

use std::thread::{sleep, spawn};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use lockchaos_driver_kit::{log, serve, Description, Hello, Lock, Outcome, Request};
use lock::CompareAndDelete;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Behaviour {
    AsIs,
    RetryForever,
    LateCommand,
    SlowStart,
}

struct Conformance {
    lock: CompareAndDelete,
    behaviour: Behaviour,
    /// Where `late-command`'s timer sends its GET, and the key it reads.
    client: redis::Client,
    key: String,
}

impl Conformance {
    /// A timer of the library's: `GET key`, 300 ms from now, on a connection of its own.
    fn get_later(&self) {
        let (client, mut get) = (self.client.clone(), redis::cmd("GET"));
        get.arg(&self.key);
        spawn(move || {
            sleep(Duration::from_millis(300));
            let _ = client.get_connection().and_then(|mut c| get.query::<Option<String>>(&mut c));
        });
    }
}

/// A library's retries that never give up, bounded all the same (as every loop here).
const RETRY_FOREVER: Duration = Duration::from_secs(600);

impl Lock for Conformance {
    type Lease = ();
    const EXTENDS: bool = true;

    fn acquire(&self, req: &Request) -> Outcome<()> {
        let start = Instant::now();
        loop {
            let outcome = self.lock.acquire(req);
            let won = matches!(outcome, Outcome::Granted { .. });
            if self.behaviour != Behaviour::RetryForever || won || start.elapsed() > RETRY_FOREVER {
                if self.behaviour == Behaviour::LateCommand {
                    self.get_later();
                }
                return outcome;
            }
            sleep(Duration::from_millis(10));
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
    let behaviour = match std::env::var("LOCKCHAOS_CONFORMANCE").as_deref() {
        Ok("retry-forever") => Behaviour::RetryForever,
        Ok("late-command") => Behaviour::LateCommand,
        Ok("slow-start") => Behaviour::SlowStart,
        Ok("") | Err(_) => Behaviour::AsIs,
        Ok(other) => {
            eprintln!("LOCKCHAOS_CONFORMANCE={other}: retry-forever, late-command or slow-start");
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
        if behaviour == Behaviour::SlowStart {
            sleep(Duration::from_secs(2));
        }
        let client = redis::Client::open(hello.url(0)).map_err(|e| e.to_string())?;
        let lock = CompareAndDelete::open(hello)?;
        Ok(Conformance { lock, behaviour, client, key: hello.lock_name.clone() })
    })
}
