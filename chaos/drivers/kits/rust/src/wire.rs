//! The wire: newline-delimited JSON on stdin and stdout (docs/driver-protocol.md, Messages),
//! and the unasked lines a lock may write itself (renewals, background commands, log lines).

use std::collections::BTreeMap;
use std::fmt::Display;
use std::fs::File;
use std::io::Write;
use std::os::fd::FromRawFd;
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Deserializer};
use serde_json::{json, Value};

use crate::serve::kit;

/// A node's address, as the hello gives it.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq, Hash)]
pub struct Node {
    pub host: String,
    pub port: u16,
}

impl Node {
    /// `host:port`.
    pub fn addr(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// The harness's first line: who this client is, what to lock, where to connect. The kit
/// hands the lock a copy whose `nodes` (and `route`'s values) are the kit's own proxies on
/// 127.0.0.1, one per node, in front of the harness's: connect to those, never elsewhere.
#[derive(Clone, Debug, Deserialize)]
pub struct Hello {
    pub client_id: String,
    pub lock_name: String,
    pub ttl_ms: u64,
    pub nodes: Vec<Node>,
    pub socket_timeout_ms: u64,
    #[serde(default)]
    pub password: Option<String>,
    /// With Sentinel: where to discover the master (not proxied: they are not the lock's
    /// nodes), and `route` from each address the Sentinels report (`host:port`) to the proxy
    /// of that node.
    #[serde(default)]
    pub sentinels: Vec<Node>,
    #[serde(default)]
    pub master_name: Option<String>,
    #[serde(default)]
    pub route: BTreeMap<String, Node>,
    /// The run's permits: `Some(1)` unless the hello says otherwise (it does only for a lock
    /// that declared a capacity), `None` when it says `null` (unbounded).
    #[serde(default = "one_permit", deserialize_with = "nullable")]
    pub capacity: Option<u64>,
}

fn one_permit() -> Option<u64> {
    Some(1)
}

fn nullable<'de, D: Deserializer<'de>>(value: D) -> Result<Option<u64>, D::Error> {
    Option::deserialize(value)
}

impl Hello {
    /// The lease time the run asks for.
    pub fn ttl(&self) -> Duration {
        Duration::from_millis(self.ttl_ms)
    }

    /// The per-command timeout the harness's own clients use. The kit's proxies already hold
    /// every command to it (they close a connection whose node did not answer in time), from
    /// when the command left for the node: after any pause point.
    pub fn socket_timeout(&self) -> Duration {
        Duration::from_millis(self.socket_timeout_ms)
    }

    /// `redis://[:password@]host:port/` of node `i`: what a Redis client opens.
    pub fn url(&self, i: usize) -> String {
        let node = &self.nodes[i];
        let auth = self.password.as_deref().map_or(String::new(), |p| format!(":{}@", escape(p)));
        format!("redis://{auth}{}/", node.addr())
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn escape(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Where protocol lines go: the process's real standard output, kept for them alone. File
/// descriptor 1 becomes standard error, where whatever a library prints belongs (the harness
/// keeps it); lines are written whole, one write each, from any thread.
pub(crate) struct Output(Mutex<File>);

impl Output {
    pub(crate) fn take_stdout() -> Output {
        // SAFETY: plain descriptor calls; the duplicate is owned by the File from here on, and
        // descriptor 1 stays open (now a copy of 2) for Rust's own stdout.
        let file = unsafe {
            let fd = libc::fcntl(1, libc::F_DUPFD_CLOEXEC, 3);
            if fd >= 0 && libc::dup2(2, 1) >= 0 {
                File::from_raw_fd(fd)
            } else {
                File::from_raw_fd(libc::dup(1))
            }
        };
        Output(Mutex::new(file))
    }

    pub(crate) fn write(&self, message: &Value) {
        let mut line = message.to_string().into_bytes();
        line.push(b'\n');
        let mut out = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if out.write_all(&line).is_err() {
            std::process::exit(0); // the harness is gone: nobody reads us any more
        }
    }
}

/// This machine's `CLOCK_MONOTONIC` in nanoseconds: the history's clock, in which `renewed`
/// dates a renewal (`std::time::Instant` reads the same clock but hides its value).
pub fn monotonic_ns() -> i64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    assert_eq!(status, 0, "CLOCK_MONOTONIC exists on every Linux");
    now.tv_sec * 1_000_000_000 + now.tv_nsec
}

/// Reports a background renewal (a watchdog's) of the lease `token` that succeeded: valid for
/// `validity_ms` from `sent_ns` (`monotonic_ns()` when the renewal command was sent). Report
/// only renewals seen to succeed; one after which the library gave the lease up (it found the
/// key gone) with `validity_ms` 0.
pub fn renewed(token: &str, validity_ms: f64, sent_ns: i64) {
    kit().out.write(&json!({"type": "renewed", "token": token, "validity_ms": validity_ms,
                            "sent_ns": sent_ns}));
}

/// Reports a command the library sent on its own, outside any request, as it goes out. The
/// kit's proxies report those they see by themselves.
pub fn sent(command: &str) {
    kit().out.write(&json!({"type": "sent", "command": command}));
}

/// A line for the driver's log (shown when the driver breaks).
pub fn log(message: impl Display) {
    kit().out.write(&json!({"type": "log", "message": message.to_string()}));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hello_parses_with_what_it_leaves_out() {
        let hello: Hello = serde_json::from_str(
            r#"{"type": "hello", "protocol": 1, "client_id": "c1", "lock_name": "k",
                "ttl_ms": 200, "nodes": [{"host": "127.0.0.1", "port": 7001}],
                "socket_timeout_ms": 500, "password": "p@ss w"}"#,
        )
        .unwrap();
        assert_eq!(hello.capacity, Some(1));
        assert_eq!(hello.url(0), "redis://:p%40ss%20w@127.0.0.1:7001/");
        let unbounded: Hello = serde_json::from_str(
            r#"{"client_id": "c1", "lock_name": "k", "ttl_ms": 200, "nodes": [],
                "socket_timeout_ms": 500, "capacity": null}"#,
        )
        .unwrap();
        assert_eq!(unbounded.capacity, None);
    }
}
