"""The campaign's options on a command, made from its declaration (``chaos.campaign.spec``).

A command names the fields of ``Campaign`` it takes, with ``campaign_options``; each becomes a
typer option with the field's flag, help and type (in declaration order, after the command's
required options and before its others), and arrives as a keyword argument holding the
command line's value, which ``Campaign.from_options`` reads::

    @campaign_options("lock", "faults", "seed", clients=As(default=2))
    def explore_command(steps: int = typer.Option(20, "--steps"), **knobs: Any) -> None:
        campaign = Campaign.from_options(**knobs)

``As`` changes a field's default or help for one command (``explore`` runs 2 clients).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, get_type_hints

import typer

from chaos.campaign import DEFAULTS, KNOBS, Campaign

F = TypeVar("F", bound=Callable[..., Any])
_UNSET: Any = object()
_FIELDS = get_type_hints(Campaign)  # the fields' types, without their knobs


@dataclass(frozen=True)
class As:
    """One command's own default or help for a campaign field."""

    default: Any = _UNSET
    help: str | None = None


def option(name: str, change: As | None = None) -> Any:
    """The typer option of the campaign's field ``name`` (required when it has no default)."""
    knob, change = KNOBS[name], change or As()
    default = knob.default if knob.type is not None else DEFAULTS.get(name, ...)  # ...: required
    if change.default is not _UNSET:
        default = change.default
    flags = f"{knob.flag}/{knob.off}" if knob.off else knob.flag
    # Required, or unset (None): the help says what that means.
    shown = default is not ... and default is not None
    return typer.Option(default, flags, help=change.help or knob.help, show_default=shown,
                        **knob.click)


def option_type(name: str) -> Any:
    """What the command line gives for field ``name``: its knob's ``type``, else the field's
    (``list`` fields are text on the command line)."""
    knob = KNOBS[name]
    return knob.type if knob.type is not None else _FIELDS[name]


def campaign_options(*names: str, **changes: As) -> Callable[[F], F]:
    """Give a command function the options of the campaign's fields ``names`` (``changes``:
    its own defaults or help for some of them); it takes them as ``**knobs``, or as
    keyword-only parameters of the same names (typed as the command line gives them)."""
    unknown = sorted((set(names) | set(changes)) - set(KNOBS))
    if unknown:
        raise TypeError(f"Campaign has no field {unknown[0]!r}")

    def give(func: F) -> F:
        own = [p for p in inspect.signature(func, eval_str=True).parameters.values()
               if p.kind is not inspect.Parameter.VAR_KEYWORD and p.name not in names]
        taken = [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY,
                              default=option(name, changes.get(name)), annotation=option_type(name))
            for name in KNOBS if name in names
        ]
        own = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own]
        required = [p for p in own if getattr(p.default, "default", None) is ...]
        rest = [p for p in own if p not in required]
        # The command's required options, then the campaign's, then the rest of its own.
        params = [*required, *taken, *rest]
        func.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        return func

    return give

