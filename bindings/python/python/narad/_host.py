"""What a host injects into the engine: a fixed clock and an authorizer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, List, Optional, Sequence, Tuple

from . import _native
from ._errors import _count

__all__ = ["Authorizer", "EngineConfig", "ManualClock", "Rule"]


class ManualClock:
    """A clock that moves only when told (tests, replays). Pass it to
    :meth:`narad.Engine.open` as ``clock=``; every timestamp and expiry the
    engine computes then comes from it."""

    def __init__(self, unix_seconds: float) -> None:
        self._native = _native.NativeClock(float(unix_seconds))

    def advance(self, seconds: float) -> None:
        """Moves the clock forward by ``seconds``."""
        self._native.advance(float(seconds))

    def now(self) -> float:
        """Now, in seconds since the Unix epoch."""
        return self._native.now()


@dataclass(frozen=True)
class Rule:
    """One allow rule. Every list left empty matches anything; ``"*"``
    matches anything too; an event type ending in ``*`` is a prefix.

    ``actions``: ``create_session``, ``write``, ``read``, ``client_lease``,
    ``read_workspace``. ``sessions`` narrows ``write`` and ``read``;
    ``event_types`` narrows ``write`` (and the control of
    ``client_lease``); ``workspaces`` narrows ``read_workspace``.
    """

    principals: Sequence[str] = ()
    actions: Sequence[str] = ()
    sessions: Sequence[str] = ()
    event_types: Sequence[str] = ()
    workspaces: Sequence[str] = ()


class Authorizer:
    """A declarative authorizer: allow rules evaluated in Rust; whatever no
    rule allows is refused with ``not_authorized`` (and appends nothing).
    ``debug`` names the principals that may write and read trace and debug
    events.

    Why rules and not a Python callable: the engine asks its authorizer
    synchronously on its own threads before every command and read. A
    Python callable there would take the GIL on an engine thread, stalling
    other sessions behind the interpreter, and could abort the process at
    interpreter exit. Rules never enter Python.
    """

    def __init__(self, rules: Iterable[Rule], *, debug: Iterable[str] = ()) -> None:
        self.rules: List[Rule] = list(rules)
        self.debug: List[str] = list(debug)
        self._native = _native.NativeRules(
            [(list(r.principals), list(r.actions), list(r.sessions), list(r.event_types), list(r.workspaces))
             for r in self.rules],
            self.debug)


@dataclass(frozen=True)
class EngineConfig:
    """Engine settings; ``None`` keeps the engine's default. Durations are
    seconds. ``snapshot_every=0`` turns automatic reducer snapshots off."""

    cached_sessions: Optional[int] = None
    history_limit: Optional[int] = None
    snapshot_every: Optional[int] = None
    max_retries: Optional[int] = None
    lease_ttl: Optional[float] = None
    heartbeat_interval: Optional[float] = None
    token_ttl: Optional[float] = None

    def _args(self) -> Tuple[Optional[int], Optional[int], Optional[int], Optional[int], Optional[float],
                             Optional[float], Optional[float]]:
        # A negative count (or one past 2**64 - 1) is the typed refusal a
        # negative duration gets, not the conversion's OverflowError.
        return (_count("cached_sessions", self.cached_sessions), _count("history_limit", self.history_limit),
                _count("snapshot_every", self.snapshot_every), _count("max_retries", self.max_retries),
                self.lease_ttl, self.heartbeat_interval, self.token_ttl)
