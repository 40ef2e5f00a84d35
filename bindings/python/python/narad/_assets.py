"""Typed commands for views (§9.6) and for attachments and artifacts
(§9.5), as the Rust engine's: no hand-written protocol JSON. Mixed into
:class:`narad.Engine`."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from . import _native
from ._more import _scope


class _AssetsMixin:
    _native: Any

    async def open_view(self, session_id: str, view_id: str, model: Any, *, run_id: Optional[str] = None,
                        workflow_id: Optional[str] = None,
                        idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        """Opens a view (``view.opened``) with its initial ``model``; returns
        the stored event. A view already open is refused
        (``view_already_open``)."""
        scope, sid = _scope(run_id, workflow_id)
        return json.loads(await _native.view(self._native, session_id, scope, sid, view_id, "open", model, None,
                                             idempotency_key))

    async def update_view(self, session_id: str, view_id: str, *, model: Any = None,
                          patch: Optional[List[Dict[str, Any]]] = None, run_id: Optional[str] = None,
                          workflow_id: Optional[str] = None,
                          idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        """Updates an open view (``view.updated``): give the new ``model``
        (``operation: replace``) or ``patch``, RFC 6902 operations
        (``{"op", "path", "value"|"from"}``). A view not open is refused
        (``view_not_open``); a patch that does not apply (``patch_failed``)
        appends nothing."""
        if (model is None) == (patch is None):
            raise TypeError("give either model or patch")
        scope, sid = _scope(run_id, workflow_id)
        return json.loads(await _native.view(self._native, session_id, scope, sid, view_id, "update", model, patch,
                                             idempotency_key))

    async def close_view(self, session_id: str, view_id: str, *, run_id: Optional[str] = None,
                         workflow_id: Optional[str] = None,
                         idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        """Closes an open view (``view.closed``); returns the stored event."""
        scope, sid = _scope(run_id, workflow_id)
        return json.loads(await _native.view(self._native, session_id, scope, sid, view_id, "close", None, None,
                                             idempotency_key))

    async def add_attachment(self, session_id: str, *, attachment_id: Optional[str] = None,
                             name: Optional[str] = None, media_type: Optional[str] = None,
                             uri: Optional[str] = None, size_bytes: Optional[int] = None,
                             metadata: Optional[Dict[str, Any]] = None, run_id: Optional[str] = None,
                             workflow_id: Optional[str] = None, idempotency_key: Optional[str] = None) -> str:
        """Admits an attachment (``attachment.added``) with its metadata and
        returns its ``attachmentId`` (the one given, or a fresh one). Events
        carry references, never bytes: a ``data:`` ``uri`` is refused.
        ``metadata`` adds other members (camelCase keys)."""
        scope, sid = _scope(run_id, workflow_id)
        return await _native.add_asset(self._native, session_id, scope, sid, False, attachment_id, name,
                                       media_type, uri, size_bytes, metadata, idempotency_key)

    async def update_attachment(self, session_id: str, attachment_id: str, step: str, *,
                                code: Optional[str] = None, message: Optional[str] = None,
                                run_id: Optional[str] = None, workflow_id: Optional[str] = None,
                                idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        """Moves an attachment on: ``step`` is ``ready``, ``failed`` (with a
        machine ``code`` and a user-safe ``message``) or ``removed``; returns
        the stored event. A step its lifecycle does not allow is refused
        (``lifecycle_invalid``; ``lifecycle_unknown`` for an id never added)."""
        scope, sid = _scope(run_id, workflow_id)
        return json.loads(await _native.update_asset(self._native, session_id, scope, sid, False, attachment_id,
                                                     step, code, message, idempotency_key))

    async def add_artifact(self, session_id: str, *, artifact_id: Optional[str] = None,
                           name: Optional[str] = None, media_type: Optional[str] = None,
                           uri: Optional[str] = None, size_bytes: Optional[int] = None,
                           metadata: Optional[Dict[str, Any]] = None, run_id: Optional[str] = None,
                           workflow_id: Optional[str] = None, idempotency_key: Optional[str] = None) -> str:
        """Records a produced artifact (``artifact.added``) with its metadata
        and returns its ``artifactId``; as :meth:`add_attachment`."""
        scope, sid = _scope(run_id, workflow_id)
        return await _native.add_asset(self._native, session_id, scope, sid, True, artifact_id, name,
                                       media_type, uri, size_bytes, metadata, idempotency_key)

    async def update_artifact(self, session_id: str, artifact_id: str, step: str, *,
                              code: Optional[str] = None, message: Optional[str] = None,
                              run_id: Optional[str] = None, workflow_id: Optional[str] = None,
                              idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        """Moves an artifact on: ``ready`` or ``failed`` (with ``code`` and
        ``message``); artifacts have no ``removed`` step
        (``invalid_command``)."""
        scope, sid = _scope(run_id, workflow_id)
        return json.loads(await _native.update_asset(self._native, session_id, scope, sid, True, artifact_id,
                                                     step, code, message, idempotency_key))
