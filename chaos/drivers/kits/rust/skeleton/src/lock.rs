//! A correct lock on one Redis node, with redis-rs: `SET key token NX PX ttl` to acquire, a
//! Lua compare-and-delete to release, a Lua compare-and-`PEXPIRE` to extend. The kit gives
//! each acquire its token (`req.token`), which this lock stores as the key's value.

use std::sync::{Mutex, PoisonError};

use lockchaos_driver_kit::{Hello, Lock, Outcome, Request};
use redis::{Cmd, Connection, FromRedisValue, Value};

pub struct CompareAndDelete {
    client: redis::Client,
    connection: Mutex<Option<Connection>>, // opened when first needed, dropped after an error
    key: String,
    ttl_ms: u64,
}

impl CompareAndDelete {
    /// The lock of the hello: its node (the kit's proxy in front of it), key and TTL.
    pub fn open(hello: &Hello) -> Result<Self, String> {
        let client = redis::Client::open(hello.url(0)).map_err(|e| e.to_string())?;
        let (key, ttl_ms) = (hello.lock_name.clone(), hello.ttl_ms);
        Ok(CompareAndDelete { client, connection: Mutex::default(), key, ttl_ms })
    }

    /// Runs `command`. An error is the request's answer: definite only if nothing was sent
    /// (the kit saw what left for Redis).
    fn run<T: FromRedisValue>(&self, req: &Request, command: &Cmd) -> Result<T, Outcome<()>> {
        let mut slot = self.connection.lock().unwrap_or_else(PoisonError::into_inner);
        let mut connection = match slot.take() {
            Some(connection) => connection,
            None => self.client.get_connection().map_err(|e| req.failure(e))?,
        };
        let value = command.query(&mut connection).map_err(|e| req.failure(e))?;
        *slot = Some(connection); // kept after a command that worked
        Ok(value)
    }

    /// `then`, in one script, if the key still holds the lease's token: true if it did.
    fn if_ours(&self, req: &Request, then: &str) -> Result<bool, Outcome<()>> {
        let script = format!("if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end {then}");
        let mut eval = redis::cmd("EVAL");
        eval.arg(script).arg(1).arg(&self.key).arg(&req.token).arg(self.ttl_ms);
        self.run::<i64>(req, &eval).map(|done| done == 1)
    }
}

impl Lock for CompareAndDelete {
    type Lease = ();
    const EXTENDS: bool = true;

    fn acquire(&self, req: &Request) -> Outcome<()> {
        let mut set = redis::cmd("SET");
        set.arg(&self.key).arg(&req.token).arg("NX").arg("PX").arg(self.ttl_ms);
        match self.run(req, &set) {
            // valid for the TTL from when SET left, which is after the request was sent
            Ok(Value::Okay) => Outcome::granted((), self.ttl_ms as f64),
            Ok(_) => Outcome::refused(), // nil: someone else holds it
            Err(failed) => failed,
        }
    }

    fn release(&self, req: &Request, _: &()) -> Outcome<()> {
        match self.if_ours(req, "return redis.call('del', KEYS[1])") {
            Ok(true) => Outcome::Released,
            Ok(false) => Outcome::refused(), // not ours any more
            Err(failed) => failed,
        }
    }

    fn extend(&self, req: &Request, _: &()) -> Outcome<()> {
        match self.if_ours(req, "return redis.call('pexpire', KEYS[1], ARGV[2])") {
            Ok(true) => Outcome::extended(self.ttl_ms as f64),
            Ok(false) => Outcome::refused(),
            Err(failed) => failed,
        }
    }
}
