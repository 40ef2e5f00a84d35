"""Internal: completes an asyncio future from the engine's runtime."""

from typing import Any


def resolve(fut: Any, ok: bool, value: Any) -> None:
    """Sets ``fut``'s result (or exception) unless it was cancelled."""
    if fut.done():
        return
    if ok:
        fut.set_result(value)
    else:
        fut.set_exception(value)
