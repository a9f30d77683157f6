"""Webhook endpoints and their deliveries: ``client.webhooks``.

To verify a delivery your endpoint received, see :func:`treasury.webhooks.verify`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Union

from .._base import path_segment as _seg, strip_not_given
from .._pagination import Page
from .._types import NOT_GIVEN, NotGiven, RequestOptions
from ..types import (
    DeletedWebhookEndpoint,
    QueuedWebhookDelivery,
    ReplayableEventType,
    WebhookDelivery,
    WebhookDeliveryStatusValue,
    WebhookEndpoint,
    WebhookEventSelector,
    WebhookReplay,
    WebhookRetryPolicyParam,
    WebhookStatus,
)
from ._base import APIResource

if TYPE_CHECKING:
    from .._base import BaseClient

__all__ = ["Webhooks", "WebhookDeliveries"]


class WebhookDeliveries(APIResource):
    """``client.webhooks.deliveries``: the deliveries of one endpoint."""

    def list(
        self,
        webhook_id: str,
        *,
        status: Optional[WebhookDeliveryStatusValue] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Page[WebhookDelivery]:
        """List an endpoint's deliveries with their attempts (``GET /webhooks/{id}/deliveries``);
        a delivery made by :meth:`Webhooks.replay` has its ``replay_id``, others ``None``."""
        return self._list(f"/webhooks/{_seg(webhook_id)}/deliveries",
                          query={"status": status, "limit": limit, "cursor": cursor},
                          request_options=request_options)

    def retry(
        self,
        webhook_id: str,
        delivery_id: str,
        *,
        idempotency_key: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> QueuedWebhookDelivery:
        """Send a delivery again now (``POST /webhooks/{id}/deliveries/{delivery_id}/retry``)."""
        return self._post(f"/webhooks/{_seg(webhook_id)}/deliveries/{_seg(delivery_id)}/retry",
                          idempotency_key=idempotency_key, request_options=request_options)


class Webhooks(APIResource):
    """Manage webhook endpoints: ``client.webhooks``."""

    deliveries: WebhookDeliveries

    def __init__(self, client: "BaseClient") -> None:
        super().__init__(client)
        self.deliveries = WebhookDeliveries(client)

    def create(
        self,
        *,
        url: str,
        events: Union[List[WebhookEventSelector], NotGiven] = NOT_GIVEN,
        description: Union[str, NotGiven] = NOT_GIVEN,
        status: Union[WebhookStatus, NotGiven] = NOT_GIVEN,
        retry_policy: Union[WebhookRetryPolicyParam, NotGiven] = NOT_GIVEN,
        idempotency_key: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> WebhookEndpoint:
        """Create an endpoint (``POST /webhooks``); its ``secret`` (``whsec_…``) is in this answer only.

        Args:
            url: Where deliveries are POSTed (``https`` in live).
            events: Event types to deliver, or ``["*"]`` (the default) for all.
            description: Free text, at most 500 characters.
            status: ``"enabled"`` (default) or ``"disabled"``.
            retry_policy: ``max_attempts``, ``initial_delay_seconds``, ``max_delay_seconds``.
        """
        body = strip_not_given(url=url, events=events, description=description, status=status,
                               retry_policy=retry_policy)
        return self._post("/webhooks", body=body, idempotency_key=idempotency_key, request_options=request_options)

    def list(
        self,
        *,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Page[WebhookEndpoint]:
        """List endpoints with their ``delivery_status`` (``GET /webhooks``)."""
        return self._list("/webhooks", query={"limit": limit, "cursor": cursor}, request_options=request_options)

    def retrieve(self, id: str, *, request_options: Optional[RequestOptions] = None) -> WebhookEndpoint:
        """Get an endpoint (``GET /webhooks/{id}``)."""
        return self._get(f"/webhooks/{_seg(id)}", request_options=request_options)

    def update(
        self,
        id: str,
        *,
        url: Union[str, NotGiven] = NOT_GIVEN,
        events: Union[List[WebhookEventSelector], NotGiven] = NOT_GIVEN,
        description: Union[str, NotGiven] = NOT_GIVEN,
        status: Union[WebhookStatus, NotGiven] = NOT_GIVEN,
        retry_policy: Union[WebhookRetryPolicyParam, NotGiven] = NOT_GIVEN,
        request_options: Optional[RequestOptions] = None,
    ) -> WebhookEndpoint:
        """Change an endpoint (``PATCH /webhooks/{id}``): only the fields given change."""
        body = strip_not_given(url=url, events=events, description=description, status=status,
                               retry_policy=retry_policy)
        return self._patch(f"/webhooks/{_seg(id)}", body=body, request_options=request_options)

    def delete(self, id: str, *, request_options: Optional[RequestOptions] = None) -> DeletedWebhookEndpoint:
        """Delete an endpoint (``DELETE /webhooks/{id}``)."""
        return self._delete(f"/webhooks/{_seg(id)}", request_options=request_options)

    def rotate_secret(self, id: str, *, idempotency_key: Optional[str] = None,
                      request_options: Optional[RequestOptions] = None) -> WebhookEndpoint:
        """Make a new signing secret (in this answer only); the old one keeps signing
        beside it for 24 hours (``POST /webhooks/{id}/rotate-secret``)."""
        return self._post(f"/webhooks/{_seg(id)}/rotate-secret", idempotency_key=idempotency_key,
                          request_options=request_options)

    def test(self, id: str, *, idempotency_key: Optional[str] = None,
             request_options: Optional[RequestOptions] = None) -> QueuedWebhookDelivery:
        """Send a ``webhook.test`` event to the endpoint (``POST /webhooks/{id}/test``)."""
        return self._post(f"/webhooks/{_seg(id)}/test", idempotency_key=idempotency_key,
                          request_options=request_options)

    def replay(
        self,
        id: str,
        *,
        created_after: str,
        created_before: str,
        types: Union[List[ReplayableEventType], NotGiven] = NOT_GIVEN,
        idempotency_key: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> WebhookReplay:
        """Send past events to the endpoint again (``POST /webhooks/{id}/replay``).

        Every event of the platform (in the key's environment) created in
        [``created_after``, ``created_before``) becomes a new delivery to this
        endpoint: its own ``webhook-id`` and ``replay_id``, the event's body as first
        sent (its original ``id``, so a receiver that drops duplicates by event id can
        tell), signed and retried like any delivery. The deliveries exist when this
        returns; ``replayed`` counts them.

        With ``types``, the events of those types, whether or not the endpoint
        subscribes to them; without, the types it subscribes to now.

        ``Idempotency-Key``: yours, else a random one, the same on each retry; the
        same key and body return the same replay and queue nothing again, the key with
        another body (or endpoint) raises :class:`~treasury.ConflictError`
        ``idempotency_conflict``.

        Raises :class:`~treasury.BadRequestError`: ``invalid_request`` (a malformed
        time, ``created_before`` not after ``created_after``, an unknown type: ``param``
        names it, e.g. ``"types[0]"``) or ``replay_too_large`` (the window holds more
        than 10,000 events: nothing is queued, split it);
        :class:`~treasury.NotFoundError` for another platform's or environment's
        endpoint; :class:`~treasury.ConflictError` ``invalid_state`` for a disabled one.

        Args:
            created_after: Start of the window, inclusive (RFC 3339, or ``YYYY-MM-DD``: midnight UTC).
            created_before: End of the window, exclusive; after ``created_after``.
            types: Only events of these types (not ``"*"`` nor ``"webhook.test"``).
        """
        body = strip_not_given(created_after=created_after, created_before=created_before, types=types)
        return self._post(f"/webhooks/{_seg(id)}/replay", body=body, idempotency_key=idempotency_key,
                          request_options=request_options)
