//! `serve`: the handshake, one request at a time, tokens and leases, bounded waits.

use std::collections::{HashMap, VecDeque};
use std::fmt::Display;
use std::io::{BufRead, BufReader};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::outcome::{floor_ms, Outcome, Tally, Vote};
use crate::proxy;
use crate::resp::Reply;
use crate::wire::{Hello, Output};

/// A lock as the kit drives it: one method per request, each run on a thread of its own
/// (the kit answers the harness in time even when the library does not return: its commands
/// are then no request's any more, and a grant it hands over too late is released at once).
pub trait Lock: Send + Sync + 'static {
    /// What `acquire` grants and `release`/`extend` get back: the library's lock object.
    type Lease: Send + Sync + 'static;
    /// Whether `extend` is the lock's own (the kit then announces the `extend` capability).
    const EXTENDS: bool = false;

    /// Tries once (the harness owns the retry loop): `granted`, `refused` or `failed`.
    /// `req.token` is the lease's token: store it as the lock's value when the library lets
    /// you choose one.
    fn acquire(&self, req: &Request) -> Outcome<Self::Lease>;
    /// `Released`, `refused` (certainly not ours any more), `Kept` or `failed`.
    fn release(&self, req: &Request, lease: &Self::Lease) -> Outcome<Self::Lease>;
    /// `extended` (or `granted` with a new lock object), `refused`, `Revoked`, `Invalidated`
    /// or `failed`. Only asked when `EXTENDS` is true.
    fn extend(&self, req: &Request, lease: &Self::Lease) -> Outcome<Self::Lease> {
        let _ = (req, lease);
        Outcome::failed(true, "this lock cannot extend")
    }
}

/// What the lock grants at once (docs/driver-protocol.md, describe).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Capacity {
    /// One holder: a mutex.
    #[default]
    Mutex,
    /// This many permits (a semaphore).
    Permits(u64),
    /// No limit (a read-write lock's readers).
    Unbounded,
}

/// What the driver says of itself and of what its lock needs (docs/driver-protocol.md,
/// describe). The kit adds the capabilities: `extend` from `Lock::EXTENDS`, `pause-points`
/// (its proxies announce every command) and `faked-clock` (Rust's `SystemTime` reads the
/// wall clock through libc's `clock_gettime`, which libfaketime moves).
#[derive(Clone, Debug, Default)]
pub struct Description {
    /// Its name, e.g. "rust-redlock".
    pub driver: String,
    /// The library it runs, with its version.
    pub library: String,
    /// It needs independent masters (a Redlock): `--topology auto` gives it standalone ones.
    pub standalone: bool,
    /// The fewest data nodes it can run on (0: one).
    pub min_nodes: u32,
    pub capacity: Capacity,
    /// "exclusive", "shared" (empty: exclusive only). The kit refuses an acquire that asks for
    /// another mode, or for more than `max_permits`, before the lock sees it.
    pub modes: Vec<&'static str>,
    /// It grants waiters in the order they asked.
    pub fair: bool,
    pub max_permits: Option<u64>,
    /// It renews its leases in the background (a watchdog): report each with `renewed`.
    pub renews: bool,
    /// The TTLs it can express are multiples of this many ms (1000: whole seconds; 0: any).
    pub ttl_granularity_ms: u64,
}

/// Which request a `Request` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Acquire,
    Release,
    Extend,
}

impl Op {
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Acquire => "acquire",
            Op::Release => "release",
            Op::Extend => "extend",
        }
    }
}

/// One command the kit's proxies forwarded for a request, and what its node answered (`None`:
/// no reply — the node did not answer in time, or the connection broke).
#[derive(Clone, Debug)]
struct Forwarded {
    node: usize,
    command: String,
    reply: Option<Reply>,
}

/// One acquire, release or extend, as the lock's method sees it.
pub struct Request {
    pub id: u64,
    pub op: Op,
    /// acquire: the new lease's token; release, extend: the lease's.
    pub token: String,
    /// An acquire of a lock that is not a mutex: one of its modes, and at least 1 permit.
    pub mode: Option<String>,
    pub permits: u64,
    announce: bool,
    start: Instant,
    answered: AtomicBool,
    /// Its commands at the kit's proxies: held for their "go", or gone to the node and not
    /// answered yet. While one is, its library call waits for it (a call is one thread that
    /// waits for each reply), so a command on another connection is not the call's.
    in_flight: AtomicUsize,
    waiting: Mutex<Waiting>,
    forwarded: Mutex<Vec<Forwarded>>,
}

/// The announcements of a request waiting for their "go", oldest first (the before lines go
/// out in this order, under its lock), and how long the request has been held by them: the
/// harness's time, not the library's.
#[derive(Default)]
struct Waiting {
    queue: VecDeque<SyncSender<()>>,
    since: Option<Instant>, // when the queue last became non-empty
    held: Duration,         // every stretch in which it was not, before that
}

impl Waiting {
    fn push(&mut self, go: SyncSender<()>) {
        if self.queue.is_empty() {
            self.since = Some(Instant::now());
        }
        self.queue.push_back(go);
    }

    fn pop(&mut self) -> Option<SyncSender<()>> {
        let go = self.queue.pop_front();
        if self.queue.is_empty() {
            self.held += self.since.take().map_or(Duration::ZERO, |since| since.elapsed());
        }
        go
    }

    fn held(&self) -> Duration {
        self.held + self.since.map_or(Duration::ZERO, |since| since.elapsed())
    }
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Request {
    fn new(id: u64, op: Op, token: String, announce: bool) -> Request {
        Request {
            id,
            op,
            token,
            mode: None,
            permits: 1,
            announce,
            start: Instant::now(),
            answered: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
            waiting: Mutex::new(Waiting::default()),
            forwarded: Mutex::new(Vec::new()),
        }
    }

    /// The validity of a lease the library says has `left_ms` left at its return, in ms from
    /// when the request was sent: the time the request took is added back (floored: never
    /// more than the library's own reckoning). Call it as soon as the library returns.
    pub fn left_at_return(&self, left_ms: u64) -> f64 {
        floor_ms(u128::from(left_ms) + self.start.elapsed().as_millis())
    }

    /// The validity of a lease that ends at `end`, in ms from when the request was sent
    /// (floored; 0 if it ended before).
    pub fn until(&self, end: Instant) -> f64 {
        floor_ms(end.saturating_duration_since(self.start).as_millis())
    }

    /// What the nodes said to this request's commands named in `commands` (`SET`; `EVAL` and
    /// `EVALSHA`), as the kit's proxies saw it — for a library that does not say per node, or
    /// says nothing (an unlock that returns `()`). Per node, its last such command decides:
    /// `vote` reads its reply, no reply is `Unknown`, none sent is `NotSent`.
    pub fn tally(&self, commands: &[&str], vote: impl Fn(&Reply) -> Vote) -> Tally {
        let forwarded = locked(&self.forwarded);
        let mut tally = Tally::default();
        for node in 0..kit().nodes.get().copied().unwrap_or(0) {
            let last = forwarded
                .iter()
                .rev()
                .find(|f| f.node == node && commands.contains(&f.command.as_str()));
            tally.add(match last {
                None => Vote::NotSent,
                Some(Forwarded { reply: None, .. }) => Vote::Unknown,
                Some(Forwarded { reply: Some(reply), .. }) => vote(reply),
            });
        }
        tally
    }

    /// The answer to a request the library failed with an error: definite only when none of
    /// its commands left for a node (nothing was sent), else it may have happened.
    pub fn failure<L>(&self, error: impl Display) -> Outcome<L> {
        let sent = !locked(&self.forwarded).is_empty();
        Outcome::failed(!sent, error.to_string())
    }

    /// A command of this request reached a proxy (it is in flight until `done`).
    pub(crate) fn arrived(&self) {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
    }

    /// A command of this request leaves for `node` now: its reply goes to the returned index.
    pub(crate) fn forwarding(&self, node: usize, command: &str) -> usize {
        let mut forwarded = locked(&self.forwarded);
        forwarded.push(Forwarded { node, command: command.to_string(), reply: None });
        forwarded.len() - 1
    }

    /// A command of this request is done with: answered (`reply`), or its connection closed.
    pub(crate) fn done(&self, index: Option<usize>, reply: Option<Reply>) {
        if let (Some(index), Some(reply)) = (index, reply) {
            if let Some(f) = locked(&self.forwarded).get_mut(index) {
                f.reply = Some(reply);
            }
        }
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
    }

    pub(crate) fn answered(&self) -> bool {
        self.answered.load(Ordering::SeqCst)
    }

    pub(crate) fn announces(&self) -> bool {
        self.announce
    }
}

/// Whose commands a connection of the library carries, as far as the kit's proxy knows.
#[derive(Default)]
pub(crate) enum Owner {
    /// Not known yet (no command but its set-up), or not any more.
    #[default]
    Nobody,
    /// The library call that first used it, while that call runs.
    Call(Arc<Request>),
    /// It carried a command while no library call ran: no request's, for good.
    Background,
}

/// The process's one driver: its output, the request being served, the library calls running.
pub(crate) struct Kit {
    pub(crate) out: Output,
    state: Mutex<State>,
    /// How many data nodes the hello gave (set once, at the hello).
    nodes: OnceLock<usize>,
}

#[derive(Default)]
struct State {
    client_id: Option<String>, // Some once the hello was served
    current: Option<Arc<Request>>,
    last_id: u64,
    /// The library calls running: the current request's, and any the kit gave up on that
    /// have not returned yet (and the release of a grant that came too late).
    running: Vec<Arc<Request>>,
}

pub(crate) fn kit() -> &'static Kit {
    static KIT: OnceLock<Kit> = OnceLock::new();
    KIT.get_or_init(|| Kit {
        out: Output::take_stdout(),
        state: Mutex::new(State::default()),
        nodes: OnceLock::new(),
    })
}

impl Kit {
    fn log(&self, message: impl Display) {
        self.out.write(&json!({"type": "log", "message": message.to_string()}));
    }

    /// A line the kit cannot serve: a log line, and an error (definite: nothing was done)
    /// when it has an id to answer.
    fn refuse(&self, id: Option<u64>, why: &str) {
        self.log(why);
        if let Some(id) = id {
            self.out.write(&Outcome::<()>::failed(true, why).reply(id, ""));
        }
    }

    /// The library call a command on a connection belongs to, as the proxy that read it can
    /// tell: the call that first used the connection while that call still runs; else the one
    /// call running, unless a command of it is in flight on another connection (then it waits
    /// for that one's reply: a command here is someone else's) — it then owns the connection;
    /// else none: ambiguous (a call the kit gave up on still runs beside the current one), or
    /// outside any request (a connection that carries a command while no call runs is a
    /// background one, a watchdog's, for good). The proxies see connections, not threads: a
    /// thread of the library's own that talks on a request's connection while the request
    /// runs is taken for the request's.
    pub(crate) fn attribute(&self, owner: &mut Owner) -> Option<Arc<Request>> {
        let state = locked(&self.state);
        if let Owner::Call(call) = owner {
            if state.running.iter().any(|r| Arc::ptr_eq(r, call)) {
                return Some(Arc::clone(call));
            }
        }
        *owner = match (&*owner, state.running.as_slice()) {
            (Owner::Background, _) | (_, []) => Owner::Background,
            (_, [only]) if only.in_flight.load(Ordering::SeqCst) == 0 => {
                Owner::Call(Arc::clone(only))
            }
            _ => Owner::Nobody,
        };
        match owner {
            Owner::Call(call) => Some(Arc::clone(call)),
            _ => None,
        }
    }

    /// Announces one command of request `r` and waits for the harness's "go"; false when the
    /// request was answered first (the kit gave up on it): the command is then not sent.
    pub(crate) fn announce(&self, r: &Request, command: &str) -> bool {
        let (go, gone) = mpsc::sync_channel(1);
        {
            let mut waiting = locked(&r.waiting);
            if r.answered() {
                return false;
            }
            waiting.push(go);
            self.out.write(&json!({"type": "before", "id": r.id, "command": command}));
        }
        gone.recv().is_ok()
    }

    /// The harness's "go" for the oldest announcement of the current request.
    fn go(&self, id: Option<u64>) {
        let current = locked(&self.state).current.clone();
        let waiter = current
            .filter(|r| Some(r.id) == id)
            .and_then(|r| locked(&r.waiting).pop());
        match waiter {
            Some(go) => drop(go.send(())),
            None => self.log("a go that no announcement waits for: ignored"),
        }
    }

    /// A request line: checked for its place in the sequence, made current.
    fn request(&self, op: Op, line: &Value, extends: bool) -> Result<Arc<Request>, String> {
        let id = line["id"].as_u64().ok_or(format!("a {} without an id", op.as_str()))?;
        let mut state = locked(&self.state);
        let token = match (op, line["token"].as_str(), &state.client_id) {
            (_, _, None) => return Err(format!("{} #{id} before the hello", op.as_str())),
            (Op::Acquire, _, Some(client)) => new_token(client),
            (_, Some(token), _) => token.to_string(),
            (_, None, _) => return Err(format!("{} #{id} without a token", op.as_str())),
        };
        if let Some(current) = &state.current {
            return Err(format!("{} #{id} while #{} is not answered", op.as_str(), current.id));
        }
        if id <= state.last_id {
            return Err(format!("{} #{id} after #{}: ids grow", op.as_str(), state.last_id));
        }
        if op == Op::Extend && !extends {
            return Err(format!("extend #{id}: this lock cannot extend"));
        }
        let mut request = Request::new(id, op, token, line["announce"] == true);
        request.mode = line["mode"].as_str().map(str::to_string);
        request.permits = line["permits"].as_u64().unwrap_or(1);
        let request = Arc::new(request);
        state.current = Some(Arc::clone(&request));
        state.last_id = id;
        Ok(request)
    }

    /// The request is answered: it stops being current first (so the harness's next request
    /// is never taken for one out of turn), and its announcements wait no more.
    fn answer<L>(&self, r: &Request, outcome: &Outcome<L>) {
        {
            let mut state = locked(&self.state);
            if state.current.as_ref().is_some_and(|c| c.id == r.id) {
                state.current = None;
            }
        }
        {
            let mut waiting = locked(&r.waiting);
            r.answered.store(true, Ordering::SeqCst);
            waiting.queue.clear(); // each waiting announcement's receiver sees its sender gone
        }
        self.out.write(&outcome.reply(r.id, &r.token));
    }

    /// Runs one library call on this thread, registered as running while it does; a panic is
    /// an indeterminate error, not a dead driver.
    fn run<O>(&self, r: &Arc<Request>, call: impl FnOnce() -> Outcome<O>) -> Outcome<O> {
        locked(&self.state).running.push(Arc::clone(r));
        let outcome = catch_unwind(AssertUnwindSafe(call)).unwrap_or_else(|panic| {
            let why = panic
                .downcast_ref::<&str>()
                .map(ToString::to_string)
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Outcome::failed(false, format!("the lock's {} panicked: {why}", r.op.as_str()))
        });
        locked(&self.state).running.retain(|c| !Arc::ptr_eq(c, r));
        outcome
    }
}

fn new_token(client_id: &str) -> String {
    let mut bytes = [0u8; 8];
    // SAFETY: getrandom fills the buffer it is given, up to its length.
    let filled = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    assert_eq!(filled, 8, "getrandom never fails for 8 bytes");
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{client_id}:{hex}")
}

/// The harness waits 30 s for the hello's answer: the lock must be ready before.
const HELLO_BUDGET: Duration = Duration::from_secs(20);
/// A bounded wait looks at its budget this often.
const SLICE: Duration = Duration::from_millis(50);
/// A slice that took longer than this: the process was stopped (SIGSTOP), which stops the
/// harness's clock too, so it does not count.
const STALL: Duration = Duration::from_millis(250);
/// Bounds the wait loop in count (a stopped slice is not counted against the budget).
const MAX_SLICES: u32 = 1 << 20;
/// Leases remembered at once: older tokens are forgotten.
const MAX_LEASES: usize = 1024;

struct Lease<T> {
    value: Arc<T>,
    invalidated: Option<String>, // why its release cannot be sent any more
}

/// What the serving thread owns: the lock, its leases, the budget of a request.
struct Server<L: Lock> {
    lock: Arc<L>,
    leases: HashMap<String, Lease<L::Lease>>,
    order: VecDeque<String>,
    budget: Duration,
}

enum Work {
    Hello(Box<Hello>),
    Request(Arc<Request>),
}

/// Runs the driver until its input ends, then exits. `open` builds the lock from the hello
/// (whose nodes are the kit's proxies: connect lazily, the harness waits at most 30 s); an
/// `Err` is the hello's refusal, one line, after which the driver exits.
pub fn serve<L, F>(description: Description, open: F) -> !
where
    L: Lock,
    F: FnOnce(&Hello) -> Result<L, String> + Send + 'static,
{
    let kit = kit();
    let capabilities = capabilities::<L>();
    let described = describe(&description, &capabilities);
    let (work, todo) = mpsc::channel();
    let hello_reply = json!({"type": "hello", "ok": true, "driver": description.driver,
                             "language": "rust", "library": description.library,
                             "capabilities": capabilities});
    thread::spawn(move || serve_work(&description, open, &hello_reply, &todo));
    let mut hello_seen = false;
    for line in BufReader::new(std::io::stdin().lock()).split(b'\n').map_while(Result::ok) {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let message: Value = match serde_json::from_slice(&line) {
            Ok(message @ Value::Object(_)) => message,
            _ => {
                let text = String::from_utf8_lossy(&line);
                kit.refuse(None, &format!("a line that is not a JSON object: {text:.80}"));
                continue;
            }
        };
        let id = message["id"].as_u64();
        let op = match message["type"].as_str() {
            Some("go") => {
                kit.go(id);
                continue;
            }
            Some("describe") => {
                kit.out.write(&described);
                continue;
            }
            Some("hello") if hello_seen => {
                kit.log("a second hello: ignored");
                continue;
            }
            Some("hello") => {
                hello_seen = true;
                match serde_json::from_value::<Hello>(message) {
                    Ok(hello) => drop(work.send(Work::Hello(Box::new(hello)))),
                    Err(e) => refuse_hello(&format!("a hello that is not the protocol: {e}")),
                }
                continue;
            }
            Some("acquire") => Op::Acquire,
            Some("release") => Op::Release,
            Some("extend") => Op::Extend,
            other => {
                kit.refuse(id, &format!("an unknown request type {other:?}"));
                continue;
            }
        };
        match kit.request(op, &message, L::EXTENDS) {
            Ok(request) => drop(work.send(Work::Request(request))),
            Err(why) => kit.refuse(id, &why),
        }
    }
    std::process::exit(0) // the client stopped: exit at once, whatever still runs
}

fn capabilities<L: Lock>() -> Vec<&'static str> {
    let mut capabilities = vec!["pause-points", "faked-clock"];
    if L::EXTENDS {
        capabilities.push("extend");
    }
    capabilities
}

fn describe(d: &Description, capabilities: &[&str]) -> Value {
    let mut line = json!({"type": "describe", "driver": d.driver, "language": "rust",
                          "library": d.library, "capabilities": capabilities});
    if d.standalone {
        line["topology"] = json!("standalone");
    }
    if d.min_nodes > 0 {
        line["min_nodes"] = json!(d.min_nodes);
    }
    match d.capacity {
        Capacity::Mutex => {}
        Capacity::Permits(n) => line["capacity"] = json!(n),
        Capacity::Unbounded => line["capacity"] = Value::Null,
    }
    if !d.modes.is_empty() {
        line["modes"] = json!(d.modes);
    }
    if d.fair {
        line["fair"] = json!(true);
    }
    if let Some(n) = d.max_permits {
        line["max_permits"] = json!(n);
    }
    if d.renews {
        line["renews"] = json!(true);
    }
    if d.ttl_granularity_ms > 1 {
        line["ttl_granularity_ms"] = json!(d.ttl_granularity_ms);
    }
    line
}

fn refuse_hello(why: &str) -> ! {
    kit().out.write(&json!({"type": "hello", "ok": false, "message": why}));
    std::process::exit(0)
}

/// The serving thread: the hello, then each request, one at a time.
fn serve_work<L, F>(description: &Description, open: F, hello_reply: &Value, todo: &Receiver<Work>)
where
    L: Lock,
    F: FnOnce(&Hello) -> Result<L, String> + Send + 'static,
{
    let Ok(Work::Hello(hello)) = todo.recv() else { return };
    let mut server = Server::<L>::start(*hello, open);
    kit().out.write(hello_reply);
    let modes = if description.modes.is_empty() { vec!["exclusive"] } else { description.modes.clone() };
    for work in todo {
        if let Work::Request(r) = work {
            server.handle(&r, &modes, description.max_permits);
        }
    }
}

impl<L: Lock> Server<L> {
    /// The hello: a proxy per node, then the lock, built within the hello's budget.
    fn start<F>(mut hello: Hello, open: F) -> Server<L>
    where
        F: FnOnce(&Hello) -> Result<L, String> + Send + 'static,
    {
        let kit = kit();
        if let Err(e) = proxy::stand_in(&mut hello) {
            refuse_hello(&format!("cannot start the kit's proxies: {e}"));
        }
        kit.nodes.get_or_init(|| hello.nodes.len());
        let budget = Duration::from_secs(3).max(4 * hello.ttl()) * 4 / 5;
        let client_id = hello.client_id.clone();
        let (done, opened) = mpsc::channel();
        thread::spawn(move || drop(done.send(open(&hello))));
        let lock = match opened.recv_timeout(HELLO_BUDGET) {
            Ok(Ok(lock)) => lock,
            Ok(Err(why)) => refuse_hello(why.lines().next().unwrap_or("the lock would not start")),
            Err(_) => refuse_hello(&format!(
                "the lock was not ready within {} s (connect lazily)", HELLO_BUDGET.as_secs())),
        };
        locked(&kit.state).client_id = Some(client_id);
        Server { lock: Arc::new(lock), leases: HashMap::new(), order: VecDeque::new(), budget }
    }

    /// Serves one request within the budget and answers it.
    fn handle(&mut self, r: &Arc<Request>, modes: &[&str], max_permits: Option<u64>) {
        let kit = kit();
        let lease = match self.prepare(r, modes, max_permits) {
            Ok(lease) => lease,
            Err(outcome) => return kit.answer(r, &outcome),
        };
        let (done, returned) = mpsc::channel();
        let (lock, call) = (Arc::clone(&self.lock), Arc::clone(r));
        thread::spawn(move || {
            let outcome = kit.run(&call, || match (&lease, call.op) {
                (Some(lease), Op::Release) => lock.release(&call, lease),
                (Some(lease), _) => lock.extend(&call, lease),
                (None, _) => lock.acquire(&call),
            });
            drop(done.send(outcome));
        });
        if let Some(outcome) = self.wait(r, &returned) {
            return self.answer(r, outcome);
        }
        self.answer(r, Outcome::failed(false, format!(
            "the lock's {} did not return within {:.1} s (the kit's bound, below the harness's): \
             it may have happened", r.op.as_str(), self.budget.as_secs_f64())));
        if r.op == Op::Acquire {
            let lock = Arc::clone(&self.lock);
            let (id, token) = (r.id, r.token.clone());
            thread::spawn(move || release_late(&lock, id, token, &returned));
        }
    }

    /// What only the kit knows: the lease of the token (a token never granted here, or
    /// already released, is a request the kit cannot serve: a log line and a definite
    /// error), the modes and permits the lock declared; `Err` with the answer when the lock
    /// is not asked.
    fn prepare(&self, r: &Request, modes: &[&str], max_permits: Option<u64>)
        -> Result<Option<Arc<L::Lease>>, Outcome<L::Lease>> {
        if r.op == Op::Acquire {
            if let Some(mode) = r.mode.as_deref().filter(|m| !modes.contains(m)) {
                return Err(Outcome::failed(true, format!("no mode {mode:?}: it grants {modes:?}")));
            }
            if let Some(most) = max_permits.filter(|&most| r.permits > most) {
                return Err(Outcome::failed(true, format!(
                    "at most {most} permits per acquire, not {}", r.permits)));
            }
            return Ok(None);
        }
        match self.leases.get(&r.token) {
            None => {
                let why = format!("{} #{}: no lease {} was granted here", r.op.as_str(), r.id, r.token);
                kit().log(&why);
                Err(Outcome::failed(true, why))
            }
            Some(Lease { invalidated: Some(why), .. }) => Err(Outcome::failed(true, format!(
                "not sent: the library invalidated the lease's lock object ({why})"))),
            Some(lease) => Ok(Some(Arc::clone(&lease.value))),
        }
    }

    /// Waits for the lock's answer within the budget, counting only the library's own time:
    /// not a slice in which the process was stopped (it took far longer than asked: a SIGSTOP,
    /// which stops the harness's clock too), nor one in which a command of the request waited
    /// for the harness's "go" (the harness's time: a deadline set before an announcement is
    /// moved on by it). A library that retries forever is answered after the budget of its
    /// own time, however many commands it announces on the way.
    fn wait(&self, r: &Request, outcome: &Receiver<Outcome<L::Lease>>) -> Option<Outcome<L::Lease>> {
        let (mut stopped, mut last) = (Duration::ZERO, r.start);
        for _ in 0..MAX_SLICES {
            match outcome.recv_timeout(SLICE) {
                Ok(outcome) => return Some(outcome),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Some(Outcome::failed(false, "the lock's thread ended without an answer"));
                }
            }
            let now = Instant::now();
            let gap = now - last;
            last = now;
            if gap >= STALL {
                stopped += gap - SLICE;
            }
            let held = locked(&r.waiting).held();
            if (now - r.start).saturating_sub(stopped + held) >= self.budget {
                return None;
            }
        }
        None
    }

    /// Writes the answer and keeps the lease map up to date.
    fn answer(&mut self, r: &Request, outcome: Outcome<L::Lease>) {
        kit().answer(r, &outcome);
        match (r.op, outcome) {
            (Op::Acquire, Outcome::Granted { lease: Some(lease), .. }) => {
                self.leases.insert(r.token.clone(), Lease { value: Arc::new(lease), invalidated: None });
                self.order.push_back(r.token.clone());
                if self.order.len() > MAX_LEASES {
                    self.order.pop_front().map(|old| self.leases.remove(&old));
                }
            }
            (Op::Extend, Outcome::Granted { lease: Some(lease), .. }) => {
                if let Some(kept) = self.leases.get_mut(&r.token) {
                    kept.value = Arc::new(lease);
                }
            }
            (Op::Extend, Outcome::Invalidated { message, .. }) => {
                if let Some(kept) = self.leases.get_mut(&r.token) {
                    kept.invalidated = Some(format!("extend #{}: {message}", r.id));
                }
            }
            (Op::Release, Outcome::Failed { definite: true, .. }) => {} // may be asked again
            (Op::Release, _) => drop(self.leases.remove(&r.token)),
            _ => {}
        }
    }
}

/// An acquire the kit answered without it returned at last: a grant nobody asked for any more
/// (the history says this client does not hold it) is released at once; its commands belong
/// to no request, so the proxies report them as sent.
fn release_late<L: Lock>(lock: &Arc<L>, id: u64, token: String, returned: &Receiver<Outcome<L::Lease>>) {
    let Ok(Outcome::Granted { lease: Some(lease), .. }) = returned.recv() else { return };
    let kit = kit();
    kit.log(format!("acquire #{id} was granted after the kit answered it: releasing it"));
    let gone = Arc::new(Request::new(id, Op::Release, token, false));
    gone.answered.store(true, Ordering::SeqCst);
    let outcome = kit.run(&gone, || lock.release(&gone, &lease));
    kit.log(format!("the late grant of acquire #{id}, released: {}", outcome.reply(id, "")));
}
