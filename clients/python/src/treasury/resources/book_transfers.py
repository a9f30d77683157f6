"""Book transfers: ``client.book_transfers``."""

from __future__ import annotations

from typing import Optional, Union

from .._base import path_segment as _seg, strip_not_given
from .._pagination import Page
from .._types import NOT_GIVEN, NotGiven, RequestOptions
from ..types import BookTransfer, Metadata
from ._base import APIResource

__all__ = ["BookTransfers"]


class BookTransfers(APIResource):
    """Move money at once between two virtual accounts of the platform, and list those moves."""

    def create(
        self,
        *,
        from_virtual_account_id: str,
        to_virtual_account_id: str,
        amount: int,
        idempotency_key: Optional[str] = None,
        description: Union[str, NotGiven] = NOT_GIVEN,
        metadata: Union[Metadata, NotGiven] = NOT_GIVEN,
        request_options: Optional[RequestOptions] = None,
    ) -> BookTransfer:
        """Move ``amount`` cents from one of the platform's accounts to another
        (``POST /book-transfers``). Both balances move at once: the transfer is
        ``completed`` in the answer, with no fee.

        The server requires an idempotency key: the same ``idempotency_key`` goes in
        the ``Idempotency-Key`` header and the body; without one the client makes a
        random key, the same on its own retries. Calling again with the same key and
        body returns the original transfer; with another body,
        :class:`~treasury.ConflictError` ``idempotency_conflict`` (``resource_id`` the
        transfer).

        Refusals: the same account twice, a bad amount or description,
        :class:`~treasury.BadRequestError` (``param`` names the field); an account
        of another platform or environment, or an unknown one,
        :class:`~treasury.NotFoundError`; then, as
        :class:`~treasury.UnprocessableEntityError` with the account in
        ``resource_id``: a sender not ``active`` or a receiver ``closed``
        (``account_not_active``; a frozen account still receives), a sender whose
        business is not KYB-approved (``kyb_not_approved``), a sender's
        ``available`` balance short of the amount (``insufficient_funds``), a
        receiver's balance past the ledger's bound (``limit_exceeded``). A refused
        request moves nothing.

        Args:
            from_virtual_account_id: The account debited: ``active``, its business KYB-approved.
            to_virtual_account_id: The account credited: another one, not ``closed``.
            amount: Cents to move (1 to 10,000,000,000,000).
            idempotency_key: Makes the call safe to repeat (1 to 255 characters).
            description: At most 140 characters (the journal entry's description; by
                default ``"Book transfer to <to_virtual_account_id>"``).
            metadata: Free-form string pairs.
        """
        key = idempotency_key or self._client._new_idempotency_key()
        body = strip_not_given(from_virtual_account_id=from_virtual_account_id,
                               to_virtual_account_id=to_virtual_account_id, amount=amount, idempotency_key=key,
                               description=description, metadata=metadata)
        return self._post("/book-transfers", body=body, idempotency_key=key, request_options=request_options)

    def retrieve(self, id: str, *, request_options: Optional[RequestOptions] = None) -> BookTransfer:
        """Get a book transfer (``GET /book-transfers/{id}``). Another platform's or
        environment's id, or an unknown one, raises :class:`~treasury.NotFoundError`."""
        return self._get(f"/book-transfers/{_seg(id)}", request_options=request_options)

    def list(
        self,
        *,
        virtual_account_id: Optional[str] = None,
        created_after: Optional[str] = None,
        created_before: Optional[str] = None,
        metadata: Optional[Metadata] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Page[BookTransfer]:
        """List book transfers, newest first (``GET /book-transfers``). Iterate to walk all pages.

        Args:
            virtual_account_id: Only the transfers out of or into this account.
            created_after: Only those created at or after this instant: RFC 3339, or
                ``YYYY-MM-DD`` for its midnight UTC.
            created_before: Only those created before this instant (exclusive).
            metadata: Only the transfers whose metadata holds every one of these pairs
                (``{"invoice": "42"}``), sent as ``metadata[invoice]=42`` and kept on
                every page's request.
        """
        return self._list(
            "/book-transfers",
            query={"virtual_account_id": virtual_account_id, "created_after": created_after,
                   "created_before": created_before, "metadata": metadata, "limit": limit, "cursor": cursor},
            request_options=request_options,
        )
