"""Internal: the asyncio side of the engine bridge."""

import os
import weakref
from typing import Any

from . import _native

_channels: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


def channel(loop: Any) -> Any:
    """The completion channel of ``loop`` (created and watched on first use)."""
    ch = _channels.get(loop)
    if ch is None:
        ch = _native.LoopChannel()
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
