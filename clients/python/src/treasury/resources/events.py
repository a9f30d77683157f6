"""Events: ``client.events``."""

from __future__ import annotations

from typing import Optional

from .._base import path_segment as _seg
from .._pagination import Page
from .._types import RequestOptions
from ..types import Event, EventType
from ._base import APIResource

__all__ = ["Events"]


class Events(APIResource):
    """The platform's events, kept at least 30 days."""

    def list(
        self,
        *,
        type: Optional[EventType] = None,
        created_after: Optional[str] = None,
        created_before: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Page[Event]:
        """List events, newest first (``GET /events``). Iterate to walk all pages."""
        return self._list("/events", query={"type": type, "created_after": created_after,
                                            "created_before": created_before, "limit": limit, "cursor": cursor},
                          request_options=request_options)

    def retrieve(self, id: str, *, request_options: Optional[RequestOptions] = None) -> Event:
        """Get an event (``GET /events/{id}``)."""
        return self._get(f"/events/{_seg(id)}", request_options=request_options)
