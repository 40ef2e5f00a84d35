"""Typed session state (dataclasses) built from the engine's reduced state."""
from __future__ import annotations
import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

__all__ = ["SessionState"]

@dataclass
class SessionState:
    session_id: str
    raw: Dict[str, Any]

    @classmethod
    def _from_json(cls, sid: str, d: Dict[str, Any]) -> "SessionState":
        return cls(sid, d)
