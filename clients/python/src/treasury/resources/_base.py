"""The base of every resource namespace."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional

from .._pagination import Page
from .._types import RequestOptions

if TYPE_CHECKING:
    from .._base import BaseClient


class APIResource:
    """A group of API methods bound to one client."""

    def __init__(self, client: "BaseClient") -> None:
        self._client = client

    def _get(self, path: str, *, query: Optional[Mapping[str, Any]] = None,
             request_options: Optional[RequestOptions] = None, accept: str = "application/json") -> Any:
        return self._client._request("GET", path, query=query, options=request_options, accept=accept)

    def _post(self, path: str, *, body: Optional[Mapping[str, Any]] = None, idempotency_key: Optional[str] = None,
              request_options: Optional[RequestOptions] = None) -> Any:
        return self._client._request("POST", path, body=body, idempotency_key=idempotency_key,
                                     options=request_options)

    def _patch(self, path: str, *, body: Mapping[str, Any], request_options: Optional[RequestOptions] = None) -> Any:
        return self._client._request("PATCH", path, body=body, options=request_options)

    def _delete(self, path: str, *, request_options: Optional[RequestOptions] = None) -> Any:
        return self._client._request("DELETE", path, options=request_options)

    def _list(self, path: str, *, query: Dict[str, Any], request_options: Optional[RequestOptions] = None) -> Page[Any]:
        """Fetch the first page now; the :class:`Page` fetches the next ones as iterated.

        Every page is fetched with the same filters (a mapping filter such as
        ``metadata`` is copied here, so changing the caller's dict later changes
        no page), only ``cursor`` differing.
        """
        query = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in query.items()}

        def fetch(cursor: Optional[str]) -> Dict[str, Any]:
            q = dict(query)
            if cursor is not None:
                q["cursor"] = cursor
            return self._get(path, query=q, request_options=request_options)

        return Page(fetch(query.pop("cursor", None)), fetch)
