"""The caller's own platform: ``client.platform`` (a platform key)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Union

from .._base import path_segment as _seg, strip_not_given
from .._pagination import Page
from .._types import NOT_GIVEN, NotGiven, RequestOptions
from ..types import (
    APIKey,
    Environment,
    Platform,
    PlatformSettings,
    RevenueShareReport,
    SandboxSettingsParam,
    WebhookRetryPolicyParam,
)
from ._base import APIResource

if TYPE_CHECKING:
    from .._base import BaseClient

__all__ = ["PlatformResource", "Settings", "APIKeys"]


class Settings(APIResource):
    """The platform's settings in the caller's environment: ``client.platform.settings``."""

    def retrieve(self, *, request_options: Optional[RequestOptions] = None) -> PlatformSettings:
        """Get the settings (``GET /platform/settings``)."""
        return self._get("/platform/settings", request_options=request_options)

    def update(
        self,
        *,
        webhook_retry_policy: Union[WebhookRetryPolicyParam, None, NotGiven] = NOT_GIVEN,
        payment_approval_threshold: Union[int, None, NotGiven] = NOT_GIVEN,
        daily_payment_limit: Union[int, None, NotGiven] = NOT_GIVEN,
        require_verified_counterparty: Union[bool, NotGiven] = NOT_GIVEN,
        sandbox: Union[SandboxSettingsParam, NotGiven] = NOT_GIVEN,
        request_options: Optional[RequestOptions] = None,
    ) -> PlatformSettings:
        """Change the settings (``PATCH /platform/settings``): only the fields given change.

        Args:
            webhook_retry_policy: Default retry policy of new endpoints; ``None`` restores the default.
            payment_approval_threshold: Cents, or ``None`` for no threshold: a payment of this
                amount or more is created ``requires_approval`` and waits for another key's
                ``client.payments.approve`` (or ``deny``).
            daily_payment_limit: Cents per virtual account per UTC day, or ``None`` for no limit.
            require_verified_counterparty: ``True``: payments go only to ``verified``
                counterparties (else 422 ``counterparty_not_verified``, raw destinations
                included); ``False`` (the default) turns it off. ``None`` is refused (400).
            sandbox: ``auto_settle``, ``ach_same_day_delay_seconds``, ``ach_standard_delay_seconds``
                (sandbox keys only).
        """
        body = strip_not_given(webhook_retry_policy=webhook_retry_policy,
                               payment_approval_threshold=payment_approval_threshold,
                               daily_payment_limit=daily_payment_limit,
                               require_verified_counterparty=require_verified_counterparty, sandbox=sandbox)
        return self._patch("/platform/settings", body=body, request_options=request_options)


class APIKeys(APIResource):
    """The platform's API keys: ``client.platform.api_keys``."""

    def create(
        self,
        *,
        name: str,
        environment: Union[Environment, None, NotGiven] = NOT_GIVEN,
        idempotency_key: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> APIKey:
        """Create a key (``POST /platform/api-keys``); its ``secret`` is in this answer only.

        Args:
            name: A label, 1 to 100 characters.
            environment: Default: the caller's. A sandbox key cannot create a live key.
        """
        body = strip_not_given(name=name, environment=environment)
        return self._post("/platform/api-keys", body=body, idempotency_key=idempotency_key,
                          request_options=request_options)

    def list(
        self,
        *,
        environment: Optional[Environment] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Page[APIKey]:
        """List the keys, without secrets (``GET /platform/api-keys``)."""
        return self._list("/platform/api-keys", query={"environment": environment, "limit": limit, "cursor": cursor},
                          request_options=request_options)

    def revoke(self, id: str, *, request_options: Optional[RequestOptions] = None) -> APIKey:
        """Revoke a key (``DELETE /platform/api-keys/{id}``); it stops working at once."""
        return self._delete(f"/platform/api-keys/{_seg(id)}", request_options=request_options)

    def roll(
        self,
        id: str,
        *,
        grace_seconds: Union[int, None, NotGiven] = NOT_GIVEN,
        idempotency_key: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> APIKey:
        """Replace a key (``POST /platform/api-keys/{id}/roll``): the answer is the new key,
        with its ``secret``; the old one expires after ``grace_seconds`` (default 86400)."""
        body = strip_not_given(grace_seconds=grace_seconds)
        return self._post(f"/platform/api-keys/{_seg(id)}/roll", body=body, idempotency_key=idempotency_key,
                          request_options=request_options)


class PlatformResource(APIResource):
    """The caller's platform: ``client.platform``."""

    settings: Settings
    api_keys: APIKeys

    def __init__(self, client: "BaseClient") -> None:
        super().__init__(client)
        self.settings = Settings(client)
        self.api_keys = APIKeys(client)

    def retrieve(self, *, request_options: Optional[RequestOptions] = None) -> Platform:
        """Get the caller's platform (``GET /platform``)."""
        return self._get("/platform", request_options=request_options)

    def revenue_share(
        self,
        *,
        from_: str,
        to: str,
        request_options: Optional[RequestOptions] = None,
    ) -> RevenueShareReport:
        """The platform's revenue share from ``from_`` to ``to`` (dates, ``YYYY-MM-DD``)
        (``GET /platform/revenue-share``)."""
        return self._get("/platform/revenue-share", query={"from": from_, "to": to}, request_options=request_options)
