//! The `redlock` crate 2.0.0 (Redlock on N standalone masters, over redis-rs 0.23), as
//! lockchaos's bundled `rust-redlock` driver, on the Rust driver kit.
//!
//! `lock()` tries once (`set_retry(1, 1)`: `set_retry(n, 0)` panics on the first refused
//! attempt, `rng.gen_range(0..0)`) on every node in turn, through the kit's proxies. Its
//! `Lock::validity_time` is what the library says is left at its return, in `usize`: the kit
//! adds the request's time back, as the protocol asks, and a validity that wrapped (an acquire
//! that outlasted `ttl - drift`) is reported as the huge claim it is. `unlock()` returns `()`
//! and swallows every error: what each node said to its compare-and-delete script is read
//! from the proxies instead, and the quorum rule decides.

use lockchaos_driver_kit::{serve, Description, Hello, Lock, Outcome, Reply, Request, Tally, Vote};
use redlock::RedLock;

struct Redlock {
    manager: &'static RedLock, // its `Lock`s borrow it for as long as the driver keeps them
    resource: Vec<u8>,
    ttl_ms: usize,
}

impl Redlock {
    fn open(hello: &Hello) -> Result<Redlock, String> {
        let clients = (0..hello.nodes.len()).map(|i| redis::Client::open(hello.url(i)));
        let clients = clients.collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string())?;
        let mut manager = RedLock::with_clients(clients);
        manager.set_retry(1, 1);
        let ttl_ms = usize::try_from(hello.ttl_ms).map_err(|e| e.to_string())?;
        Ok(Redlock { manager: Box::leak(Box::new(manager)), resource: hello.lock_name.clone().into(), ttl_ms })
    }

    /// Each node's vote on this request's `commands`, by its reply.
    fn votes(req: &Request, commands: &[&str], granted: &Reply, refused: &Reply) -> Tally {
        req.tally(commands, |reply| match reply {
            r if r == granted => Vote::Granted,
            r if r == refused => Vote::Refused,
            _ => Vote::Unknown,
        })
    }
}

impl Lock for Redlock {
    type Lease = redlock::Lock<'static>;

    fn acquire(&self, req: &Request) -> Outcome<Self::Lease> {
        let result = self.manager.lock(&self.resource, self.ttl_ms);
        let votes = || Self::votes(req, &["SET"], &Reply::Status("OK".into()), &Reply::Nil);
        match result {
            Ok(Some(lock)) => {
                let validity_ms = req.left_at_return(lock.validity_time as u64);
                Outcome::granted(lock, validity_ms)
            }
            Ok(None) => votes().failed("not acquired: no quorum, or no validity left"),
            Err(e) => votes().failed(&format!("lock: {e}")),
        }
    }

    fn release(&self, req: &Request, lease: &Self::Lease) -> Outcome<Self::Lease> {
        self.manager.unlock(lease);
        let votes = Self::votes(req, &["EVALSHA", "EVAL"], &Reply::Int(1), &Reply::Int(0));
        votes.decide(Outcome::Released, "unlock: the compare-and-delete script")
    }
}

fn main() {
    let description = Description {
        driver: "rust-redlock".into(),
        library: "redlock 2.0.0 + redis 0.23.5".into(),
        standalone: true,
        min_nodes: 3,
        ..Description::default()
    };
    serve(description, Redlock::open)
}
