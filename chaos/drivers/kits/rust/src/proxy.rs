//! The kit's command hook: an in-process RESP proxy per node.
//!
//! redis-rs (and a library built on it, such as the `redlock` crate, which opens its own
//! connections) has no hook on the commands it sends. So the kit stands between the library
//! and each node: the lock connects to 127.0.0.1:<a port of the kit> (the hello it is given
//! says so), and the proxy forwards every byte to the node the harness named, reading each
//! command as it goes by. For the pause points it announces a command of a request that asked
//! (`before`) and forwards it once the harness says `go`; it reads every reply, so what each
//! node said is known even to a library that swallows it (an unlock that returns `()`:
//! `Request::tally`); and it closes a connection whose node did not answer a command within
//! the hello's `socket_timeout_ms` of its leaving — a read timeout for a client that has none,
//! started after the pause point, so the harness's hold never eats it. The connection's
//! set-up (`HELLO`, `AUTH`, `SELECT`, `CLIENT SETNAME`/`SETINFO`, `PING`, `READONLY`) is
//! forwarded at once and is no request's.

use std::collections::{HashMap, VecDeque};
use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::resp::{self, Reply};
use crate::serve::{kit, Owner, Request};
use crate::wire::{log, Hello, Node};

/// Replies are read in slices this long, to look at the oldest command's deadline between.
const SLICE: Duration = Duration::from_millis(20);

/// Starts a proxy for each data node of the hello (its `nodes`, and the nodes its `route`
/// maps to) and points the hello at them.
pub(crate) fn stand_in(hello: &mut Hello) -> io::Result<()> {
    let timeout = hello.socket_timeout();
    let mut proxies: HashMap<Node, Node> = HashMap::new();
    // route's nodes are nodes' links (with Sentinel), so a proxy's number is its node's
    for node in hello.nodes.iter_mut().chain(hello.route.values_mut()) {
        let proxy = match proxies.get(node) {
            Some(proxy) => proxy.clone(),
            None => {
                let proxy = start(proxies.len(), node.addr(), timeout)?;
                proxies.insert(node.clone(), proxy.clone());
                proxy
            }
        };
        *node = proxy;
    }
    Ok(())
}

/// A proxy for node number `node` at `upstream`: listens on 127.0.0.1, a thread per direction
/// of each connection (they live as long as the connection; the driver exits with its input).
fn start(node: usize, upstream: String, timeout: Duration) -> io::Result<Node> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let upstream = upstream.clone();
            thread::spawn(move || connect(node, client, &upstream, timeout));
        }
    });
    Ok(Node { host: "127.0.0.1".into(), port })
}

/// A command on its way to the node, waiting for its reply.
struct Pending {
    sent: Instant,
    /// The library call it belongs to (none: set-up, or no request's) and, if that call's
    /// request was not answered yet, its place in the request's log.
    of: Option<(Arc<Request>, Option<usize>)>,
}

/// One client connection and its connection to the node.
struct Link {
    node: usize,
    client: TcpStream,
    server: TcpStream,
    pending: Mutex<VecDeque<Pending>>,
    timeout: Duration,
}

fn connect(node: usize, client: TcpStream, upstream: &str, timeout: Duration) {
    let server = upstream
        .to_socket_addrs()
        .and_then(|mut addrs| addrs.next().ok_or_else(|| ErrorKind::NotFound.into()))
        .and_then(|addr: SocketAddr| TcpStream::connect_timeout(&addr, timeout));
    let Ok(server) = server else {
        return; // nothing was sent: dropping the client's connection closes it
    };
    let (Ok(to_client), Ok(from_server)) = (client.try_clone(), server.try_clone()) else { return };
    let _ = (client.set_nodelay(true), server.set_nodelay(true));
    let link = Arc::new(Link { node, client, server, pending: Mutex::new(VecDeque::new()), timeout });
    let replies = Arc::clone(&link);
    thread::spawn(move || replies.replies(from_server, to_client));
    link.commands();
    link.close();
}

impl Link {
    /// Closes both sockets; the commands still waiting for a reply will get none.
    fn close(&self) {
        let _ = (self.client.shutdown(Shutdown::Both), self.server.shutdown(Shutdown::Both));
        for pending in self.pending().drain(..) {
            if let Some((call, index)) = pending.of {
                call.done(index, None);
            }
        }
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, VecDeque<Pending>> {
        self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Client → node: each command, announced when its request asked, then forwarded.
    fn commands(&self) {
        let (mut buf, mut chunk, mut owner) = (Vec::new(), [0u8; 16 * 1024], Owner::default());
        let (mut client, mut server) = (&self.client, &self.server);
        loop {
            loop {
                match resp::command(&buf) {
                    Ok(Some((len, words))) => {
                        if !self.forward(&buf[..len], &words, &mut owner, &mut server) {
                            return;
                        }
                        buf.drain(..len);
                    }
                    Ok(None) => break,
                    Err(e) => return log(format!("proxy: the library wrote a line that is not RESP: {e}")),
                }
            }
            match client.read(&mut chunk) {
                Ok(0) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }

    /// One command: false when the connection is done with (it was not sent).
    fn forward(&self, raw: &[u8], words: &[Vec<u8>], owner: &mut Owner,
               server: &mut &TcpStream) -> bool {
        let word = |i: usize| words.get(i).map(|w| String::from_utf8_lossy(w).to_uppercase());
        let name = word(0).unwrap_or_default();
        let setup = matches!(name.as_str(), "HELLO" | "AUTH" | "SELECT" | "PING" | "READONLY")
            || name == "CLIENT" && matches!(word(1).as_deref(), Some("SETNAME" | "SETINFO"));
        let call = if setup { None } else { kit().attribute(owner) };
        if let Some(call) = &call {
            call.arrived();
        }
        let current = call.as_ref().is_some_and(|r| !r.answered());
        match &call {
            _ if setup => {}
            Some(r) if current => {
                if r.announces() && !kit().announce(r, &name) {
                    r.done(None, None);
                    return false; // the kit gave up on the request while the harness held this
                }
            }
            _ => crate::wire::sent(&name), // no request's: a background command
        }
        let mut pending = self.pending();
        let of = call.map(|r| {
            let index = current.then(|| r.forwarding(self.node, &name));
            (r, index)
        });
        pending.push_back(Pending { sent: Instant::now(), of });
        drop(pending);
        server.write_all(raw).is_ok()
    }

    /// Node → client: each reply, recorded for its command's request and passed on; a node
    /// that leaves the oldest command unanswered for the timeout closes the connection.
    fn replies(&self, mut server: TcpStream, mut client: TcpStream) {
        let (mut buf, mut chunk) = (Vec::new(), [0u8; 16 * 1024]);
        if server.set_read_timeout(Some(SLICE)).is_err() {
            return self.close();
        }
        loop {
            loop {
                match resp::reply(&buf) {
                    Ok(Some((len, reply))) => {
                        self.replied(reply);
                        if client.write_all(&buf[..len]).is_err() {
                            return self.close();
                        }
                        buf.drain(..len);
                    }
                    Ok(None) => break,
                    Err(e) => {
                        log(format!("proxy: node {} answered something that is not RESP: {e}", self.node));
                        return self.close();
                    }
                }
            }
            match server.read(&mut chunk) {
                Ok(0) => return self.close(),
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    let stalled = self.pending().front().is_some_and(|p| p.sent.elapsed() >= self.timeout);
                    if stalled {
                        return self.close(); // the library reads an error: no reply came
                    }
                }
                Err(_) => return self.close(),
            }
        }
    }

    /// A reply for the oldest command waiting (none: a push, passed on as it is).
    fn replied(&self, reply: Reply) {
        let oldest = self.pending().pop_front();
        if let Some(Pending { of: Some((call, index)), .. }) = oldest {
            call.done(index, Some(reply));
        }
    }
}
