"""The client executor library (§11): runs a client tool from
``client.tool.execute``, durably accepting the token first, so a tool never
runs twice, even across a crash."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Dict, Optional, Tuple, Union

from . import _native

__all__ = ["ClientToolExecutor", "Handled", "Tool"]

Tool = Callable[[str, Dict[str, Any]], Awaitable[Union[Any, Tuple[str, Any]]]]
"""``async def tool(name, args)`` returning a response (success) or
``(outcome, response)`` with outcome ``success``, ``error`` or ``cancelled``."""


@dataclass(frozen=True)
class Handled:
    """What :meth:`ClientToolExecutor.handle` did.

    ``kind`` is ``finish`` (``finish`` holds the ``client.tool.finish`` bytes
    to send to the host), ``attached`` (``lease_id``), ``accepted_before``
    (accepted earlier without a recorded finish: not run again) or
    ``ignored`` (``reason``).
    """

    kind: str
    finish: Optional[bytes] = None
    lease_id: Optional[str] = None
    reason: Optional[str] = None


class ClientToolExecutor:
    """A client executor with a durable ledger (a redb or SQLite file)."""

    def __init__(self, native: Any, executor_id: str) -> None:
        self._native = native
        self.executor_id = executor_id

    @classmethod
    async def open(cls, ledger_url: str, executor_id: str) -> "ClientToolExecutor":
        """Opens (or creates) the ledger ``ledger_url`` for ``executor_id``."""
        return cls(await _native.NativeExecutor.open(ledger_url, executor_id), executor_id)

    async def handle(self, message: bytes, tool: Tool) -> Handled:
        """Handles one control message. For a ``client.tool.execute``
        addressed to this executor, the token is recorded as accepted
        before ``tool`` runs; a repeat never runs it again (the recorded
        finish is returned instead). A tool that raises finishes as
        ``error`` with response ``{"code": "tool_raised"}``."""

        async def call(name: str, args: Dict[str, Any]) -> Tuple[str, Any]:
            out = await tool(name, args)
            if isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], str):
                return out[0], out[1]
            return "success", out

        kind, finish, text = await self._native.handle(bytes(message), call)
        if kind == "finish":
            return Handled(kind, finish=finish)
        if kind == "attached":
            return Handled(kind, lease_id=text)
        if kind == "ignored":
            return Handled(kind, reason=text)
        return Handled(kind)

    async def serve_once(self, engine: Any, tool: Tool, timeout: Optional[float] = None) -> Optional[Handled]:
        """In-process transport: takes the next message from ``engine``'s
        outbox for this executor, handles it, and sends a finish back."""
        msg = await engine.outbox_next(self.executor_id, timeout)
        if msg is None:
            return None
        h = await self.handle(msg, tool)
        if h.finish is not None:
            await engine.client_finish(h.finish)
        return h
