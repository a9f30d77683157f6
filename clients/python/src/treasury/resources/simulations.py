"""Sandbox simulations: ``client.simulations`` (sandbox keys only; live keys get 403)."""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Union

from .._base import path_segment as _seg, strip_not_given
from .._types import NOT_GIVEN, NotGiven, RequestOptions
from ..types import (
    InboundTransfer,
    KYBOutcome,
    KYBReasonParam,
    KYBVerification,
    OriginatorParam,
    Payment,
    Rail,
)
from ._base import APIResource

if TYPE_CHECKING:
    from .._base import BaseClient

__all__ = ["Simulations", "SimulatedInboundTransfers", "SimulatedKYB", "SimulatedPayments"]


class SimulatedInboundTransfers(APIResource):
    """``client.simulations.inbound_transfers``."""

    def create(
        self,
        *,
        virtual_account_id: str,
        amount: int,
        rail: Rail,
        originator: OriginatorParam,
        description: Union[str, NotGiven] = NOT_GIVEN,
        idempotency_key: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> InboundTransfer:
        """Simulate funds arriving (``POST /simulations/inbound-transfers``): RTP and
        FedNow credit at once, ACH after the platform's sandbox delay."""
        body = strip_not_given(virtual_account_id=virtual_account_id, amount=amount, rail=rail,
                               originator=originator, description=description)
        return self._post("/simulations/inbound-transfers", body=body, idempotency_key=idempotency_key,
                          request_options=request_options)


class SimulatedKYB(APIResource):
    """``client.simulations.kyb``."""

    def decide(
        self,
        id: str,
        *,
        outcome: KYBOutcome,
        reasons: Union[List[KYBReasonParam], None, NotGiven] = NOT_GIVEN,
        idempotency_key: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> KYBVerification:
        """Decide a verification in ``pending_review`` (``POST /simulations/kyb/{id}/decision``)."""
        body = strip_not_given(outcome=outcome, reasons=reasons)
        return self._post(f"/simulations/kyb/{_seg(id)}/decision", body=body, idempotency_key=idempotency_key,
                          request_options=request_options)


class SimulatedPayments(APIResource):
    """``client.simulations.payments``."""

    def complete(self, id: str, *, idempotency_key: Optional[str] = None,
                 request_options: Optional[RequestOptions] = None) -> Payment:
        """Settle a payment now (``POST /simulations/payments/{id}/complete``)."""
        return self._post(f"/simulations/payments/{_seg(id)}/complete", idempotency_key=idempotency_key,
                          request_options=request_options)

    def fail(
        self,
        id: str,
        *,
        network_code: str,
        idempotency_key: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Payment:
        """Fail a payment with a network code, an ACH return (``R03``) or an ISO 20022
        reason (``AC04``) (``POST /simulations/payments/{id}/fail``)."""
        return self._post(f"/simulations/payments/{_seg(id)}/fail", body={"network_code": network_code},
                          idempotency_key=idempotency_key, request_options=request_options)

    def release(self, id: str, *, idempotency_key: Optional[str] = None,
                request_options: Optional[RequestOptions] = None) -> Payment:
        """Release a ``scheduled`` payment now, as its date would
        (``POST /simulations/payments/{id}/release``, no body).

        The rules run on today's balance, limit, fee and approval threshold: the
        payment is held and ``pending`` (``journal_entry_id`` set; event
        ``payment.released``), or ``requires_approval`` at the platform's threshold,
        or ``failed`` when a rule refuses it, with the rule's code in
        ``failure["code"]`` (``insufficient_funds``, ``limit_exceeded``,
        ``account_not_active``, ``kyb_not_approved``, ``compliance_rejected``) and
        ``failure["network_code"]`` ``None`` (event ``payment.failed``). A payment
        that is not ``scheduled`` raises :class:`~treasury.ConflictError`
        ``invalid_state``.
        """
        return self._post(f"/simulations/payments/{_seg(id)}/release", idempotency_key=idempotency_key,
                          request_options=request_options)


class Simulations(APIResource):
    """``client.simulations``: ``inbound_transfers``, ``kyb``, ``payments``."""

    inbound_transfers: SimulatedInboundTransfers
    kyb: SimulatedKYB
    payments: SimulatedPayments

    def __init__(self, client: "BaseClient") -> None:
        super().__init__(client)
        self.inbound_transfers = SimulatedInboundTransfers(client)
        self.kyb = SimulatedKYB(client)
        self.payments = SimulatedPayments(client)
