"""The driver protocol's messages: one JSON object per line, tagged by ``type``.

The shapes here are the schema (docs/driver-protocol.schema.json) as msgspec Structs, so a
line is checked as it is read: a line that is not JSON, or not one of the driver's messages,
is a ``ProtocolError`` naming what was wrong. Unknown fields are ignored, so a driver may say
more than the harness reads. ``PROTOCOL`` is the version the harness speaks; it goes out in
``hello`` and ``describe``.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

PROTOCOL = 1
# The capabilities a driver may announce: ``extend`` (its client has extend()),
# ``pause-points`` (chaos.locks.contract.PAUSE_POINTS: it announces each command) and
# ``faked-clock`` (chaos.locks.contract.FAKED_CLOCK: libfaketime moves its wall clock).
EXTEND = "extend"


class ProtocolError(Exception):
    """A line from the driver that is not the protocol (the text says why, in one line)."""


# -- harness → driver ------------------------------------------------------------------------


class ToDriver(msgspec.Struct, tag_field="type", kw_only=True):
    """A line the harness writes."""


class Address(msgspec.Struct):
    host: str
    port: int


class Describe(ToDriver, tag="describe", kw_only=True):
    """Instead of ``hello``: what can you do? (The driver answers and exits at end of input.)"""

    protocol: int = PROTOCOL


class Hello(ToDriver, tag="hello", kw_only=True):
    """The first line: who this client is and where to connect, every address through this
    client's own proxies (Sentinel: where to discover the master, and ``route`` from each
    address the Sentinels report to this client's proxy for that node)."""

    protocol: int = PROTOCOL
    client_id: str
    lock_name: str
    ttl_ms: int
    nodes: list[Address]
    socket_timeout_ms: int
    password: str | None = None
    sentinels: list[Address] = msgspec.field(default_factory=list)
    master_name: str | None = None
    route: dict[str, Address] = msgspec.field(default_factory=dict)
    # The run's permits (``--capacity``) when they are not 1 (null: unbounded): sent only
    # then, so a mutex's hello is what it always was.
    capacity: int | msgspec.UnsetType | None = msgspec.UNSET


class Request(ToDriver, omit_defaults=True, kw_only=True):
    """One operation. ``announce``: say ``before`` each command and wait for ``go``."""

    id: int
    announce: bool = False


class Acquire(Request, tag="acquire", kw_only=True):
    """For a lock that is not a mutex (its ``describe`` declared ``capacity`` or ``modes``):
    the ``mode`` (one of its ``modes``) and the ``permits`` asked; a mutex's acquire carries
    neither, as before."""

    mode: str | None = None
    permits: Annotated[int, msgspec.Meta(ge=1)] | None = None


class Release(Request, tag="release", kw_only=True):
    token: str


class Extend(Request, tag="extend", kw_only=True):
    token: str


class Go(ToDriver, tag="go", kw_only=True):
    """Send the command you announced."""

    id: int


# -- driver → harness ------------------------------------------------------------------------


class FromDriver(msgspec.Struct, tag_field="type", kw_only=True):
    """A line the driver writes."""


class SelfDescription(FromDriver, kw_only=True):
    """What a driver says of itself, in ``describe`` and ``hello``."""

    driver: str | None = None
    language: str | None = None
    library: str | None = None
    capabilities: list[str] = msgspec.field(default_factory=list)


class Described(SelfDescription, tag="describe", kw_only=True):
    """The answer to ``describe``, and what the driver's lock needs of its deployment, as a
    bundled lock's entry says it (``chaos.locks.contract.LockInfo``): ``topology``
    "standalone" for independent masters (a Redlock), ``min_nodes`` at least that many; and
    what it grants (``capacity``, ``modes``, ``fair``)."""

    topology: Literal["any", "standalone"] = "any"
    min_nodes: Annotated[int, msgspec.Meta(ge=1)] = 1
    # What it grants (chaos.locks.contract.LockInfo): permits at once (null: unbounded, a
    # read-write lock's readers), its modes, and whether it grants waiters in order. Absent:
    # a mutex.
    capacity: Annotated[int, msgspec.Meta(ge=1)] | None = 1
    modes: list[Literal["exclusive", "shared"]] = msgspec.field(
        default_factory=lambda: ["exclusive"])
    fair: bool = False
    # The most permits one acquire may ask (null: up to the capacity).
    max_permits: Annotated[int, msgspec.Meta(ge=1)] | None = None
    # The TTLs it can express are multiples of this many ms (1000: whole seconds): a run's
    # --ttl-ms must be one (``chaos.lockspec.LockSpec.check_ttl``).
    ttl_granularity_ms: Annotated[int, msgspec.Meta(ge=1)] = 1
    # It renews its leases in the background (a watchdog): the checker holds it to that.
    renews: bool = False


class HelloReply(SelfDescription, tag="hello", kw_only=True):
    """Ready (``ok``), or cannot run here (not ``ok``, ``message`` says why in one line)."""

    ok: bool
    message: str | None = None


class Ok(FromDriver, tag="ok", kw_only=True):
    """Granted, released or extended; ``validity_ms`` counts from when the request was sent
    (``None``: the TTL)."""

    id: int
    token: str | None = None
    validity_ms: float | None = None
    fence: int | None = None


class Refused(FromDriver, tag="refused", kw_only=True):
    """A definite no."""

    id: int
    message: str | None = None


class Error(FromDriver, tag="error", kw_only=True):
    """``definite``: it certainly did not happen (as ``Refused``); else it may have."""

    id: int
    definite: bool
    message: str | None = None


class Revoked(FromDriver, tag="revoked", kw_only=True):
    """An extend's answer: not extended, and the library gave the lease up — it deleted the
    key (an unlock after a failed extend) or told its caller the lock is lost. The lease is
    valid no more from when the request was sent, and the client holds the lock no longer
    (chaos.locks.contract.REVOKED)."""

    id: int
    message: str | None = None


class Invalidated(FromDriver, tag="invalidated", kw_only=True):
    """An extend's answer: the library invalidated the lease's lock object (an extend that
    consumes or replaces it), so nothing more can be sent for the lease — no release, no
    extend — and its key stays until it expires. ``definite``: the extend certainly did not
    happen; else it may have (chaos.locks.contract.INVALIDATED, ``LeaseInvalidated``)."""

    id: int
    definite: bool = True
    message: str | None = None


class Kept(FromDriver, tag="kept", kw_only=True):
    """A release's answer: released, and the library keeps the key on purpose until
    ``validity_ms`` from when the request was sent (a minimum hold; null: until the lease's
    deadline then in effect) — nobody can get the lock before (chaos.locks.contract.Kept)."""

    id: int
    validity_ms: float | None = None


# Which requests each of these may answer: anything else is a driver that broke the protocol.
ANSWERS_ONLY: dict[type[FromDriver], str] = {Revoked: "extend", Invalidated: "extend",
                                              Kept: "release"}


class Before(FromDriver, tag="before", kw_only=True):
    """Pause points: the driver is about to send ``command`` for request ``id``."""

    id: int
    command: str


class Renewed(FromDriver, tag="renewed", kw_only=True):
    """Unasked: a background renewal of ``token`` succeeded (``validity_ms`` 0: it found the
    lease gone, and the library gave it up), or raised (``error``: what it raised; no answer,
    the lease may still be there). It was sent at ``sent_ns`` (this
    machine's ``CLOCK_MONOTONIC``, the history's clock), else ``age_ms`` before this line was
    written: the line's trip to the harness then counts as part of the lease (``renewal_sent``)."""

    token: str
    validity_ms: float | None = None
    error: str | None = None
    age_ms: float = 0.0
    sent_ns: int | None = None


class Sent(FromDriver, tag="sent", kw_only=True):
    """Unasked: the library sent ``command`` on its own, outside any request (a watchdog's
    renewal), just now. Never waited on: a network fault's watch takes it as it takes an
    announced command, since a holder at work sends nothing else."""

    command: str


class Log(FromDriver, tag="log", kw_only=True):
    """Unasked: a line for the driver's log."""

    message: str


Answer = Ok | Refused | Error | Revoked | Invalidated | Kept  # what ends a request
_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(
    Described | HelloReply | Ok | Refused | Error | Revoked | Invalidated | Kept | Before
    | Renewed | Sent | Log
)


def encode(message: ToDriver) -> bytes:
    """``message`` as one line."""
    return _encoder.encode(message) + b"\n"


def decode(line: str) -> FromDriver:
    """The message on one line the driver wrote; ``ProtocolError`` if it is none."""
    shown = line if len(line) <= 80 else line[:77] + "..."
    try:
        message: FromDriver = _decoder.decode(line)
    except msgspec.ValidationError as exc:  # JSON, but not one of the driver's messages
        raise ProtocolError(f"wrote a line that is not the protocol ({exc}): {shown!r}") from None
    except msgspec.DecodeError:
        raise ProtocolError(f"wrote a line that is not a JSON object: {shown!r}") from None
    return message


# How far before its line arrived a renewal may say it was sent: beyond it, ``sent_ns`` is
# read from some other clock (a wall clock, a process-relative one).
SENT_BOUND_NS = 60_000_000_000


def renewal_sent(message: Renewed, received_ns: int) -> int:
    """When the renewal ``message`` (its line read at ``received_ns``) was sent, in the
    history's clock. ``age_ms`` alone gives a time late by the line's trip from the driver,
    milliseconds on a loaded machine: the lease then seems to last that much longer than the
    one Redis kept, and a client taking the lock at its true expiry overlapped it "within
    both leases" (a hard violation the lock never made, Redisson × client-pause). Hence
    ``sent_ns``; ``ProtocolError`` when it cannot be this machine's monotonic clock."""
    if message.sent_ns is None:
        return received_ns - int(message.age_ms * 1e6)
    before_s = (received_ns - message.sent_ns) / 1e9
    if not 0 <= before_s <= SENT_BOUND_NS / 1e9:
        raise ProtocolError(
            f"said a renewal was sent {before_s:.3f} s before its line arrived (sent_ns "
            f"{message.sent_ns}): read sent_ns from CLOCK_MONOTONIC (Java System.nanoTime(), "
            "Node process.hrtime.bigint()), or send age_ms alone"
        )
    return message.sent_ns


def wire_text(message: msgspec.Struct) -> str:
    """``message`` as it was on the wire, cut for an error line."""
    return _encoder.encode(message).decode()[:120]
