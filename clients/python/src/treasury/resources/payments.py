"""Payments: ``client.payments``."""

from __future__ import annotations

from typing import Optional, Union

from .._base import path_segment as _seg, strip_not_given
from .._pagination import Page
from .._types import NOT_GIVEN, NotGiven, RequestOptions
from ..types import DestinationParam, Metadata, Payment, PaymentStatus, Rail
from ._base import APIResource

__all__ = ["Payments"]


class Payments(APIResource):
    """Send payments over ACH (standard, same day), RTP and FedNow; follow and cancel them."""

    def create(
        self,
        *,
        virtual_account_id: str,
        amount: int,
        rail: Rail,
        destination: DestinationParam,
        idempotency_key: Optional[str] = None,
        description: Union[str, NotGiven] = NOT_GIVEN,
        metadata: Union[Metadata, NotGiven] = NOT_GIVEN,
        request_options: Optional[RequestOptions] = None,
    ) -> Payment:
        """Send a payment (``POST /payments``).

        The same ``idempotency_key`` goes in the ``Idempotency-Key`` header and the
        body; without one the client makes a random key, the same on its own retries.
        Calling again with the same key and body returns the original payment; with
        another body, :class:`~treasury.ConflictError` ``idempotency_conflict``.

        Args:
            virtual_account_id: The account the money leaves.
            amount: Cents to send (the fee comes on top).
            rail: ``"ach_standard"``, ``"ach_same_day"``, ``"rtp"`` or ``"fednow"``.
            destination: ``{"account_number", "routing_number", "name"}``.
            idempotency_key: Makes the call safe to repeat (1 to 255 characters).
            description: At most 140 characters.
            metadata: Free-form string pairs.
        """
        key = idempotency_key or self._client._new_idempotency_key()
        body = strip_not_given(virtual_account_id=virtual_account_id, amount=amount, rail=rail,
                               destination=destination, idempotency_key=key, description=description,
                               metadata=metadata)
        return self._post("/payments", body=body, idempotency_key=key, request_options=request_options)

    def retrieve(self, id: str, *, request_options: Optional[RequestOptions] = None) -> Payment:
        """Get a payment (``GET /payments/{id}``): the path to poll."""
        return self._get(f"/payments/{_seg(id)}", request_options=request_options)

    def list(
        self,
        *,
        virtual_account_id: Optional[str] = None,
        status: Optional[PaymentStatus] = None,
        rail: Optional[Rail] = None,
        idempotency_key: Optional[str] = None,
        created_after: Optional[str] = None,
        created_before: Optional[str] = None,
        metadata: Optional[Metadata] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Page[Payment]:
        """List payments, newest first (``GET /payments``). Iterate to walk all pages.

        Args:
            metadata: Only the payments whose metadata holds every one of these pairs
                (``{"invoice": "42", "region": "east"}``), sent as ``metadata[invoice]=42``
                and kept on every page's request.
        """
        return self._list(
            "/payments",
            query={"virtual_account_id": virtual_account_id, "status": status, "rail": rail,
                   "idempotency_key": idempotency_key, "created_after": created_after,
                   "created_before": created_before, "metadata": metadata, "limit": limit, "cursor": cursor},
            request_options=request_options,
        )

    def cancel(self, id: str, *, idempotency_key: Optional[str] = None,
               request_options: Optional[RequestOptions] = None) -> Payment:
        """Cancel a ``pending`` payment (else :class:`~treasury.ConflictError` ``payment_not_cancelable``)."""
        return self._post(f"/payments/{_seg(id)}/cancel", idempotency_key=idempotency_key,
                          request_options=request_options)
