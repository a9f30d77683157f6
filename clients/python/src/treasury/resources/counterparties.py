"""Counterparties: ``client.counterparties``."""

from __future__ import annotations

from typing import Optional, Union

from .._base import path_segment as _seg, strip_not_given
from .._pagination import Page
from .._types import NOT_GIVEN, NotGiven, RequestOptions
from ..types import (
    Counterparty,
    CounterpartyAccountType,
    CounterpartyVerificationMethod,
    CounterpartyVerificationStatus,
    DeletedCounterparty,
    Metadata,
)
from ._base import APIResource

__all__ = ["Counterparties"]


class Counterparties(APIResource):
    """Bank accounts saved once and paid again and again
    (``client.payments.create(counterparty_id=…)``), verified by a zero-dollar ACH prenote."""

    def create(
        self,
        *,
        name: str,
        account_number: str,
        routing_number: str,
        account_type: CounterpartyAccountType,
        metadata: Union[Metadata, NotGiven] = NOT_GIVEN,
        idempotency_key: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Counterparty:
        """Save a counterparty (``POST /counterparties``): 201, ``verification["status"]``
        ``"unverified"`` and ``verification["method"]`` ``None``.

        The whole account number is stored (a payment to the counterparty copies it)
        but never shown again: the answer has ``account_number_last4`` only.

        The request carries an ``Idempotency-Key`` header (yours, else a random one,
        the same on the client's own retries): the same key and body return the
        original counterparty (200, ``Idempotent-Replayed: true``); the key with another
        body raises :class:`~treasury.ConflictError` ``idempotency_conflict``
        (``resource_id`` the counterparty).

        Fields are checked as a payment's ``destination`` is:
        :class:`~treasury.BadRequestError` with ``param`` the field.

        Args:
            name: The account holder, 1 to 80 characters (screened at each payment).
            account_number: 4 to 17 digits.
            routing_number: 9 digits with a valid ABA checksum.
            account_type: ``"checking"`` or ``"savings"``.
            metadata: Free-form string pairs.
            idempotency_key: Makes the call safe to repeat (1 to 255 characters).
        """
        body = strip_not_given(name=name, account_number=account_number, routing_number=routing_number,
                               account_type=account_type, metadata=metadata)
        return self._post("/counterparties", body=body, idempotency_key=idempotency_key,
                          request_options=request_options)

    def retrieve(self, id: str, *, request_options: Optional[RequestOptions] = None) -> Counterparty:
        """Get a counterparty (``GET /counterparties/{id}``). An unknown, deleted, or
        another platform's or environment's id raises :class:`~treasury.NotFoundError`."""
        return self._get(f"/counterparties/{_seg(id)}", request_options=request_options)

    def list(
        self,
        *,
        verification_status: Optional[CounterpartyVerificationStatus] = None,
        created_after: Optional[str] = None,
        created_before: Optional[str] = None,
        metadata: Optional[Metadata] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Page[Counterparty]:
        """List counterparties, newest first, deleted ones left out (``GET /counterparties``).
        Iterate to walk all pages.

        Args:
            verification_status: ``"unverified"``, ``"pending"``, ``"verified"`` or ``"failed"``.
            created_after: Only those created at or after this instant: RFC 3339, or
                ``YYYY-MM-DD`` for its midnight UTC.
            created_before: Only those created before this instant (exclusive).
            metadata: Only the counterparties whose metadata holds every one of these
                pairs (``{"vendor": "42"}``), sent as ``metadata[vendor]=42`` and kept on
                every page's request.
        """
        return self._list(
            "/counterparties",
            query={"verification_status": verification_status, "created_after": created_after,
                   "created_before": created_before, "metadata": metadata, "limit": limit, "cursor": cursor},
            request_options=request_options,
        )

    def delete(self, id: str, *, request_options: Optional[RequestOptions] = None) -> DeletedCounterparty:
        """Delete a counterparty (``DELETE /counterparties/{id}``): ``{"id", "object",
        "deleted": True}``. From then on it is :class:`~treasury.NotFoundError`
        everywhere, new payments naming it too; a payment to it already made keeps its
        copied destination and goes on."""
        return self._delete(f"/counterparties/{_seg(id)}", request_options=request_options)

    def verify(
        self,
        id: str,
        *,
        method: CounterpartyVerificationMethod,
        idempotency_key: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Counterparty:
        """Verify the counterparty's account by a zero-dollar ACH prenote
        (``POST /counterparties/{id}/verify``, ``method="prenote"``): the answer is the counterparty with
        ``verification["status"]`` ``"pending"`` and ``method`` ``"prenote"``.

        In the sandbox it becomes ``verified`` after the platform's
        ``sandbox.ach_same_day_delay_seconds`` (default 5 s; event
        ``counterparty.verified``), or ``failed`` with ``verification["failure_code"]``
        the return code for the magic account numbers 4000000002/03/04/16/23 (R02, R03,
        R04, R16, R23; event ``counterparty.verification_failed``): poll
        :meth:`retrieve` or listen for the events.

        With a live key the answer is the same (``pending``, ``method`` ``"prenote"``):
        the prenote leaves in the next outbound ACH file (a zero-dollar entry,
        transaction code 23, or 33 to a savings account). It becomes ``verified`` when
        its entry settles without a return (event ``counterparty.verified``), or
        ``failed`` with the return code when the receiving bank returns it, even after
        it was verified (event ``counterparty.verification_failed``). Nothing answers
        quickly in live: it stays ``pending`` until a file is cut and settled.

        A ``pending`` or ``verified`` counterparty, in either environment, raises
        :class:`~treasury.ConflictError` ``invalid_state`` (a ``failed`` one may be
        verified again).

        Args:
            method: ``"prenote"``, the one method (required, as the API requires it).
            idempotency_key: Sent as the ``Idempotency-Key`` header (default: a random one).
        """
        return self._post(f"/counterparties/{_seg(id)}/verify", body={"method": method},
                          idempotency_key=idempotency_key, request_options=request_options)
