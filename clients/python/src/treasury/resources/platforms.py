"""Operator routes about platforms: ``client.platforms`` (the operator key only)."""

from __future__ import annotations

from typing import Optional, Union

from .._base import path_segment as _seg, strip_not_given
from .._pagination import Page
from .._types import NOT_GIVEN, NotGiven, RequestOptions
from ..types import (
    Environment,
    FeeScheduleParam,
    JournalEntry,
    Metadata,
    Platform,
    PlatformWithKeys,
    RateLimitParam,
)
from ._base import APIResource

__all__ = ["Platforms"]


class Platforms(APIResource):
    """Register, approve, configure and fund platforms. Needs the operator key."""

    def register(
        self,
        *,
        name: str,
        contact_email: str,
        metadata: Union[Metadata, None, NotGiven] = NOT_GIVEN,
        idempotency_key: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Platform:
        """Register a platform (``POST /platforms``); it starts ``pending_approval``.

        A repeated ``idempotency_key`` with the same body returns the platform
        first registered.
        """
        body = strip_not_given(name=name, contact_email=contact_email, metadata=metadata)
        return self._post("/platforms", body=body, idempotency_key=idempotency_key, request_options=request_options)

    create = register

    def list(
        self,
        *,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Page[Platform]:
        """List every platform, newest first (``GET /operator/platforms``). Iterate to walk all pages."""
        return self._list("/operator/platforms", query={"limit": limit, "cursor": cursor},
                          request_options=request_options)

    def retrieve(self, id: str, *, request_options: Optional[RequestOptions] = None) -> Platform:
        """Get one platform (``GET /operator/platforms/{id}``)."""
        return self._get(f"/operator/platforms/{_seg(id)}", request_options=request_options)

    def update(
        self,
        id: str,
        *,
        revenue_share_rate: Union[str, NotGiven] = NOT_GIVEN,
        interest_rate: Union[str, NotGiven] = NOT_GIVEN,
        fee_schedule: Union[FeeScheduleParam, NotGiven] = NOT_GIVEN,
        rate_limit: Union[RateLimitParam, None, NotGiven] = NOT_GIVEN,
        request_options: Optional[RequestOptions] = None,
    ) -> Platform:
        """Configure a platform (``PATCH /operator/platforms/{id}``): only the fields given change.

        Args:
            revenue_share_rate: The platform's share of revenue, a decimal string ("0.30").
            interest_rate: Annual interest on balances, a decimal string ("0.045").
            fee_schedule: Fees in cents by rail; the rails given replace their fees.
            rate_limit: ``{"per_second": n, "burst": m}`` for all the platform's keys,
                or ``None`` to go back to the service's limits.
        """
        body = strip_not_given(revenue_share_rate=revenue_share_rate, interest_rate=interest_rate,
                               fee_schedule=fee_schedule, rate_limit=rate_limit)
        return self._patch(f"/operator/platforms/{_seg(id)}", body=body, request_options=request_options)

    def approve(
        self,
        id: str,
        *,
        idempotency_key: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> PlatformWithKeys:
        """Approve a platform; the answer carries ``sandbox_api_key`` with its ``secret`` (shown once)."""
        return self._post(f"/operator/platforms/{_seg(id)}/approve", idempotency_key=idempotency_key,
                          request_options=request_options)

    def enable_live(
        self,
        id: str,
        *,
        idempotency_key: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> PlatformWithKeys:
        """Open the live environment; the answer carries ``live_api_key`` with its ``secret`` (shown once)."""
        return self._post(f"/operator/platforms/{_seg(id)}/enable-live", idempotency_key=idempotency_key,
                          request_options=request_options)

    def fund(
        self,
        id: str,
        *,
        amount: int,
        environment: Union[Environment, NotGiven] = NOT_GIVEN,
        description: Union[str, NotGiven] = NOT_GIVEN,
        idempotency_key: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> JournalEntry:
        """Credit ``amount`` cents to the platform's ``platform_operating`` ledger account.

        Args:
            amount: Cents to credit.
            environment: ``"live"`` (the default) or ``"sandbox"``.
            description: The journal entry's description.
        """
        body = strip_not_given(amount=amount, environment=environment, description=description)
        return self._post(f"/operator/platforms/{_seg(id)}/fund", body=body, idempotency_key=idempotency_key,
                          request_options=request_options)
