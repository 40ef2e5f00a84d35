"""Exceptions raised by the engine: one class per family, all ``NaradError``."""

from __future__ import annotations

from typing import Any, Optional

__all__ = [
    "NaradError",
    "ProtocolError",
    "SessionBusyError",
    "NotAuthorizedError",
    "NotFoundError",
    "ConflictError",
    "InvalidCommandError",
    "ClientExecutionError",
    "StoreError",
]


class NaradError(Exception):
    """A refused command or a failed read. Nothing was appended.

    ``code`` is the engine's stable machine code (e.g. ``open_work``);
    ``section`` the spec section it cites (e.g. ``"6.2"``), or ``None``.
    """

    code: str
    section: Optional[str]

    def __init__(self, code: str, section: Optional[str], message: str) -> None:
        super().__init__(message)
        self.code = code
        self.section = section
        self.message = message

    def __str__(self) -> str:
        where = f" (§{self.section})" if self.section else ""
        return f"{self.code}: {self.message}{where}"


class ProtocolError(NaradError):
    """The command would break a protocol rule (the checker's code)."""


class SessionBusyError(ProtocolError):
    """The session slot is busy (``session_slot_busy``); pass ``queue=True`` to wait."""


class NotAuthorizedError(NaradError):
    """The principal may not do this (``not_authorized``)."""


class NotFoundError(NaradError):
    """No such session, run, tool call or open interrupt."""


class ConflictError(NaradError):
    """The command conflicts with the session as it stands: it exists, a
    revision or idempotency key conflicts, the interrupt expired or was
    resolved, nothing runs, it has open work, it is archived, or another
    writer kept moving its head."""


class InvalidCommandError(NaradError):
    """A malformed argument or an inactive profile, or a closed engine."""


class ClientExecutionError(NaradError):
    """A client-execution control was refused (§11)."""


class StoreError(NaradError):
    """The store failed or holds an unreadable record."""


_FAMILIES = {
    cls.__name__: cls
    for cls in (
        ProtocolError,
        SessionBusyError,
        NotAuthorizedError,
        NotFoundError,
        ConflictError,
        InvalidCommandError,
        ClientExecutionError,
        StoreError,
    )
}


def _from_native(family: str, code: str, section: Optional[str], message: str) -> NaradError:
    """Builds the exception the extension module raises (internal)."""
    return _FAMILIES.get(family, NaradError)(code, section, message)


_U64_MAX = 2**64 - 1


def _count(name: str, value: Any, code: str = "invalid_command") -> Any:
    """``value`` when it is an ``int`` from 0 to 2**64 - 1 (``None`` passes:
    the argument is optional); else the typed refusal, as the engine
    refuses a page limit of 0, rather than the ``OverflowError`` of the
    conversion to a native count (internal)."""
    if value is None or isinstance(value, bool) or not isinstance(value, int):
        return value  # None, or a wrong type: the native call's TypeError names it
    if value < 0:
        raise InvalidCommandError(code, None, f"{name} must not be negative")
    if value > _U64_MAX:
        raise InvalidCommandError(code, None, f"{name} is past 2**64 - 1")
    return value
