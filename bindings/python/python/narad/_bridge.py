"""Internal: the asyncio side of the engine bridge."""

import asyncio
import os
import weakref
from typing import Any, Optional

from . import _native

_channels: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


def channel(loop: Any) -> Any:
    """The completion channel of ``loop`` (created and watched on first use)."""
    ch = _channels.get(loop)
    if ch is None:
        ch = _native.LoopChannel(loop.call_soon)
        os.set_blocking(ch.fd, False)
        loop.add_reader(ch.fd, ch.drain)
        _channels[loop] = ch
        try:
            loop._narad_channel = ch  # the fast path the extension reads
            loop.close = _closing(loop.close, ch)
        except AttributeError:
            pass
    return ch


def _closing(close: Any, ch: Any) -> Any:
    """``loop.close`` that first hands calls still waiting for a poll on
    this loop to the engine's workers, so they finish (and free their
    session) though the loop is gone."""

    def wrapped() -> None:
        ch.close()
        close()

    return wrapped


def resolve(fut: Any, ok: bool, value: Any) -> None:
    """Sets ``fut``'s result (or exception) unless it was cancelled."""
    if fut.done():
        return
    if ok:
        fut.set_result(value)
    else:
        fut.set_exception(value)


class _Call(asyncio.Future):  # type: ignore[type-arg]
    """The asyncio future of one engine call. Cancelling it drops the
    call's engine future where it stands, as dropping it does in Rust (the
    extension sets ``_narad_drop`` while the call waits). An override, not
    a done callback: a callback would cost every call a loop turn."""

    __slots__ = ("_narad_drop",)

    def cancel(self, msg: Optional[Any] = None) -> bool:
        if not super().cancel(msg):
            return False
        drop = getattr(self, "_narad_drop", None)
        if drop is not None:
            self._narad_drop = None
            drop()
        return True
