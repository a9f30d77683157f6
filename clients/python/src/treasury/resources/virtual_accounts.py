"""Virtual accounts: ``client.virtual_accounts``."""

from __future__ import annotations

from typing import Literal, Optional, Union, overload

from .._base import path_segment as _seg, strip_not_given
from .._pagination import Page
from .._types import NOT_GIVEN, NotGiven, RequestOptions
from ..types import (
    Balance,
    Metadata,
    Statement,
    Transaction,
    TransactionStatus,
    TransactionType,
    VirtualAccount,
    VirtualAccountStatus,
    VirtualAccountType,
)
from ._base import APIResource

__all__ = ["VirtualAccounts"]


class VirtualAccounts(APIResource):
    """Open, read and change the status of virtual accounts; their balance, history and statements."""

    def create(
        self,
        *,
        platform_id: str,
        entity_ref: str,
        type: VirtualAccountType,
        metadata: Union[Metadata, None, NotGiven] = NOT_GIVEN,
        idempotency_key: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> VirtualAccount:
        """Open a virtual account (``POST /virtual-accounts``).

        Args:
            platform_id: The caller's platform id (``client.platform.retrieve()["id"]``).
            entity_ref: Your reference for the business, 1 to 128 characters.
            type: ``"checking"`` or ``"savings"``.
            metadata: Free-form string pairs.
        """
        body = strip_not_given(platform_id=platform_id, entity_ref=entity_ref, type=type, metadata=metadata)
        return self._post("/virtual-accounts", body=body, idempotency_key=idempotency_key,
                          request_options=request_options)

    def retrieve(self, id: str, *, request_options: Optional[RequestOptions] = None) -> VirtualAccount:
        """Get a virtual account with its current balance (``GET /virtual-accounts/{id}``)."""
        return self._get(f"/virtual-accounts/{_seg(id)}", request_options=request_options)

    def list(
        self,
        *,
        entity_ref: Optional[str] = None,
        status: Optional[VirtualAccountStatus] = None,
        metadata: Optional[Metadata] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Page[VirtualAccount]:
        """List virtual accounts, newest first (``GET /virtual-accounts``). Iterate to walk all pages.

        Args:
            metadata: Only the accounts whose metadata holds every one of these pairs
                (``{"region": "east", "tier": "gold"}``), sent as ``metadata[region]=east``
                and kept on every page's request.
        """
        return self._list("/virtual-accounts",
                          query={"entity_ref": entity_ref, "status": status, "metadata": metadata,
                                 "limit": limit, "cursor": cursor},
                          request_options=request_options)

    def balance(
        self,
        id: str,
        *,
        as_of: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Balance:
        """The account's balance now, or as it was at ``as_of`` (RFC 3339 or ``YYYY-MM-DD``)
        (``GET /virtual-accounts/{id}/balance``)."""
        return self._get(f"/virtual-accounts/{_seg(id)}/balance", query={"as_of": as_of},
                         request_options=request_options)

    def transactions(
        self,
        id: str,
        *,
        status: Optional[TransactionStatus] = None,
        type: Optional[TransactionType] = None,
        created_after: Optional[str] = None,
        created_before: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Page[Transaction]:
        """The account's transactions, newest first (``GET /virtual-accounts/{id}/transactions``)."""
        return self._list(
            f"/virtual-accounts/{_seg(id)}/transactions",
            query={"status": status, "type": type, "created_after": created_after,
                   "created_before": created_before, "limit": limit, "cursor": cursor},
            request_options=request_options,
        )

    @overload
    def statements(self, id: str, month: str, *, format: Literal["json"] = ...,
                   request_options: Optional[RequestOptions] = None) -> Statement: ...

    @overload
    def statements(self, id: str, month: str, *, format: Literal["csv"],
                   request_options: Optional[RequestOptions] = None) -> str: ...

    def statements(
        self,
        id: str,
        month: str,
        *,
        format: Literal["json", "csv"] = "json",
        request_options: Optional[RequestOptions] = None,
    ) -> Union[Statement, str]:
        """The account's statement of ``month`` (``YYYY-MM``, UTC)
        (``GET /virtual-accounts/{id}/statements/{month}``).

        Returns the :class:`~treasury.types.Statement` dict, or with ``format="csv"``
        the CSV text.
        """
        path = f"/virtual-accounts/{_seg(id)}/statements/{_seg(month)}"
        if format == "json":
            return self._get(path, request_options=request_options)
        return self._get(path, query={"format": format}, request_options=request_options, accept="text/csv")

    def freeze(self, id: str, *, idempotency_key: Optional[str] = None,
               request_options: Optional[RequestOptions] = None) -> VirtualAccount:
        """Freeze an active account: it can no longer send payments."""
        return self._post(f"/virtual-accounts/{_seg(id)}/freeze", idempotency_key=idempotency_key,
                          request_options=request_options)

    def unfreeze(self, id: str, *, idempotency_key: Optional[str] = None,
                 request_options: Optional[RequestOptions] = None) -> VirtualAccount:
        """Make a frozen account active again."""
        return self._post(f"/virtual-accounts/{_seg(id)}/unfreeze", idempotency_key=idempotency_key,
                          request_options=request_options)

    def close(self, id: str, *, idempotency_key: Optional[str] = None,
              request_options: Optional[RequestOptions] = None) -> VirtualAccount:
        """Close an active account at zero balance (final)."""
        return self._post(f"/virtual-accounts/{_seg(id)}/close", idempotency_key=idempotency_key,
                          request_options=request_options)
