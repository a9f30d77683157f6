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
    """Send payments over ACH (standard, same day), RTP and FedNow, now or on a later
    date; follow, cancel, approve and deny them."""

    def create(
        self,
        *,
        virtual_account_id: str,
        amount: int,
        rail: Rail,
        destination: Union[DestinationParam, NotGiven] = NOT_GIVEN,
        counterparty_id: Union[str, NotGiven] = NOT_GIVEN,
        idempotency_key: Optional[str] = None,
        description: Union[str, NotGiven] = NOT_GIVEN,
        metadata: Union[Metadata, NotGiven] = NOT_GIVEN,
        scheduled_for: Union[str, NotGiven] = NOT_GIVEN,
        request_options: Optional[RequestOptions] = None,
    ) -> Payment:
        """Send a payment (``POST /payments``) to a ``destination`` or to a saved
        counterparty (``counterparty_id``): exactly one of the two, else
        :class:`~treasury.BadRequestError` with ``param`` ``"counterparty_id"``.

        With ``counterparty_id`` the counterparty's name, account and routing numbers
        are copied into the payment's ``destination``, and the payment shows
        ``counterparty_id``; an unknown, deleted, or another platform's or
        environment's counterparty raises :class:`~treasury.NotFoundError` (``param``
        ``"counterparty_id"``). With the platform's ``require_verified_counterparty``
        on, a payment to a counterparty that is not ``verified``, or to a raw
        ``destination``, raises :class:`~treasury.UnprocessableEntityError`
        ``counterparty_not_verified``.

        The same ``idempotency_key`` goes in the ``Idempotency-Key`` header and the
        body; without one the client makes a random key, the same on its own retries.
        Calling again with the same key and body returns the original payment; with
        another body, :class:`~treasury.ConflictError` ``idempotency_conflict``.

        When the platform's ``payment_approval_threshold`` is set (``client.platform.
        settings.update``) and ``amount`` is at or above it, the payment passes the
        same rules and is held the same way, but is created ``requires_approval``
        with an ``approval`` object: no rail sees it until another key of the
        platform approves it (:meth:`approve`); it may be denied (:meth:`deny`) or
        canceled meanwhile, and is canceled (``cancellation_reason``
        ``"approval_expired"``) if still unapproved 7 days after its creation.

        The answer's ``journal_entry_id`` is the journal entry that holds amount +
        fee (``client.ledger.journal_entries.retrieve``; its ``source`` is this
        payment): posted at completion, archived if the payment fails before, is
        canceled or denied.

        With ``scheduled_for`` (a date ``"YYYY-MM-DD"``, Eastern, after today and at
        most 365 days ahead, else :class:`~treasury.BadRequestError` ``param``
        ``"scheduled_for"``) the payment is created ``scheduled``: the account, its
        business and the destination's screening are checked now, but nothing is
        held (``journal_entry_id`` is ``None``) and no rail sees it. At 06:00 ET on
        that date it is released: the rules run again on that day's balance, limit,
        fee and approval threshold, and it is held and ``pending`` (or
        ``requires_approval``; event ``payment.released``), or ``failed`` with the
        rule's code in ``failure["code"]`` and ``failure["network_code"]`` ``None``.
        Cancel it meanwhile with :meth:`cancel`; in the sandbox,
        ``client.simulations.payments.release`` releases it at once.

        Args:
            virtual_account_id: The account the money leaves.
            amount: Cents to send (the fee comes on top).
            rail: ``"ach_standard"``, ``"ach_same_day"``, ``"rtp"`` or ``"fednow"``.
            destination: ``{"account_number", "routing_number", "name"}``; or give ``counterparty_id``.
            counterparty_id: Instead of ``destination``: a counterparty (``cp_…``,
                ``client.counterparties``) of the key's environment.
            idempotency_key: Makes the call safe to repeat (1 to 255 characters).
            description: At most 140 characters.
            metadata: Free-form string pairs.
            scheduled_for: The date (``"2026-12-01"``, Eastern) to release it on.
        """
        key = idempotency_key or self._client._new_idempotency_key()
        body = strip_not_given(virtual_account_id=virtual_account_id, amount=amount, rail=rail,
                               destination=destination, counterparty_id=counterparty_id, idempotency_key=key,
                               description=description,
                               metadata=metadata, scheduled_for=scheduled_for)
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
            status: One of ``"scheduled"``, ``"requires_approval"``, ``"pending"``,
                ``"submitted"``, ``"completed"``, ``"failed"``, ``"canceled"``, ``"denied"``:
                ``status="requires_approval"`` lists the payments waiting for a second key,
                ``status="scheduled"`` those waiting for their date.
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
        """Cancel a ``pending`` payment, or one in ``requires_approval`` or
        ``scheduled`` (``POST /payments/{id}/cancel``): it becomes ``canceled`` and its
        hold (amount + fee) is released (a ``scheduled`` one held nothing). Any other status (``submitted``, ``completed``,
        ``failed``, ``denied``, ``canceled``) raises :class:`~treasury.ConflictError`
        ``payment_not_cancelable``."""
        return self._post(f"/payments/{_seg(id)}/cancel", idempotency_key=idempotency_key,
                          request_options=request_options)

    def approve(self, id: str, *, idempotency_key: Optional[str] = None,
                request_options: Optional[RequestOptions] = None) -> Payment:
        """Approve a payment in ``requires_approval`` (``POST /payments/{id}/approve``):
        it becomes ``pending`` and goes to its rail like any payment from now on (its
        ``expected_settlement_at`` counts from now); ``approval["approved_at"]`` and
        ``approval["approved_by"]`` (this client's key) are set, and
        ``payment.approved`` is emitted.

        An approval takes a second key: the key that created the payment
        (``approval["created_by"]``) raises :class:`~treasury.PermissionDeniedError`
        ``forbidden`` — make another with ``client.platform.api_keys.create`` and
        approve through ``client.with_options(api_key=its_secret)``. A payment in any
        other status raises :class:`~treasury.ConflictError` ``invalid_state``;
        another platform's or environment's, :class:`~treasury.NotFoundError`.
        """
        return self._post(f"/payments/{_seg(id)}/approve", idempotency_key=idempotency_key,
                          request_options=request_options)

    def deny(self, id: str, *, reason: Union[str, NotGiven] = NOT_GIVEN, idempotency_key: Optional[str] = None,
             request_options: Optional[RequestOptions] = None) -> Payment:
        """Deny a payment in ``requires_approval`` (``POST /payments/{id}/deny``): it
        becomes ``denied`` (final) and its hold (amount + fee) is released;
        ``approval["denied_at"]``, ``approval["denied_by"]`` and
        ``approval["denial_reason"]`` are set, and ``payment.denied`` is emitted. Any
        key of the platform may deny, the creating key included (to withdraw a
        payment).

        A payment in any other status raises :class:`~treasury.ConflictError`
        ``invalid_state``; another platform's or environment's,
        :class:`~treasury.NotFoundError`; a ``reason`` over 500 characters,
        :class:`~treasury.BadRequestError` (``param`` ``"reason"``).

        Args:
            reason: Why, kept as ``approval["denial_reason"]`` (at most 500 characters).
        """
        return self._post(f"/payments/{_seg(id)}/deny", body=strip_not_given(reason=reason),
                          idempotency_key=idempotency_key, request_options=request_options)
