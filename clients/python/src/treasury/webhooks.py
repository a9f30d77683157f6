"""Verify the webhook deliveries your endpoint receives (Standard Webhooks, API.md §8).

Each delivery is a ``POST`` whose body is an :class:`~treasury.types.Event`, with
the headers ``webhook-id`` (the delivery id, the same on every attempt),
``webhook-timestamp`` (Unix seconds of this attempt) and ``webhook-signature``:
space-separated ``v1,<base64 HMAC-SHA256>`` entries over ``id.timestamp.body``,
keyed by the bytes of the base64 after ``whsec_`` in the endpoint's secret.
During a secret rotation a delivery carries one signature per secret.

Example, in any web framework::

    import treasury

    def handle(request):
        try:
            event = treasury.webhooks.verify(request.body, request.headers, WEBHOOK_SECRET)
        except treasury.WebhookVerificationError:
            return 400
        if event["type"] == "payment.completed":
            ...
        return 204

Pass the body exactly as received (bytes), before any JSON parsing.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ._exceptions import WebhookVerificationError

__all__ = ["verify", "sign", "DEFAULT_TOLERANCE", "WebhookVerificationError"]

DEFAULT_TOLERANCE = 300
"""Seconds a delivery's ``webhook-timestamp`` may differ from now (5 minutes)."""

_SECRET_PREFIX = "whsec_"


def _key(secret: str) -> bytes:
    if not isinstance(secret, str) or not secret:
        raise WebhookVerificationError("the webhook secret is empty")
    raw = secret[len(_SECRET_PREFIX):] if secret.startswith(_SECRET_PREFIX) else secret
    try:
        return base64.b64decode(raw + "=" * (-len(raw) % 4), validate=True)
    except (binascii.Error, ValueError) as e:
        raise WebhookVerificationError("the webhook secret is not whsec_ followed by base64") from e


def _body_bytes(raw_body: Union[bytes, bytearray, memoryview, str]) -> bytes:
    if isinstance(raw_body, str):
        return raw_body.encode("utf-8")
    if isinstance(raw_body, (bytes, bytearray, memoryview)):
        return bytes(raw_body)
    raise TypeError("raw_body must be the request body as received: bytes or str, not a parsed object")


def _signature(key: bytes, msg_id: str, timestamp: str, body: bytes) -> str:
    mac = hmac.new(key, f"{msg_id}.{timestamp}.".encode("utf-8") + body, hashlib.sha256)
    return base64.b64encode(mac.digest()).decode("ascii")


def _header_items(headers: Any) -> Iterable[Tuple[str, str]]:
    items = headers.items() if hasattr(headers, "items") else headers
    return ((str(k), str(v)) for k, v in items)


def _header(headers: Any, name: str) -> Optional[str]:
    for k, v in _header_items(headers):
        if k.lower() == name:
            return v
    return None


def sign(
    msg_id: str,
    timestamp: Union[int, str],
    raw_body: Union[bytes, str],
    secret: str,
) -> str:
    """The ``webhook-signature`` header value (``v1,<base64>``) of a delivery.

    Useful to test your endpoint with deliveries of your own.
    """
    return "v1," + _signature(_key(secret), msg_id, str(timestamp), _body_bytes(raw_body))


def verify(
    raw_body: Union[bytes, str],
    headers: Union[Mapping[str, str], Iterable[Tuple[str, str]]],
    secret: Union[str, Sequence[str]],
    *,
    tolerance: int = DEFAULT_TOLERANCE,
    now: Optional[float] = None,
) -> Dict[str, Any]:
    """Verify a webhook delivery and return its event (the parsed body).

    Args:
        raw_body: The request body exactly as received.
        headers: The request headers (any mapping or ``(name, value)`` pairs; names
            are matched without regard to case).
        secret: The endpoint's ``whsec_…`` secret, or several (old and new during a
            rotation): the delivery passes if a signature matches any of them.
        tolerance: Seconds the ``webhook-timestamp`` may be from now (default 300).
        now: The current Unix time (for tests); default ``time.time()``.

    Returns:
        The event, a dict (see :class:`treasury.types.Event`).

    Raises:
        WebhookVerificationError: A header is missing, the timestamp is outside the
            tolerance, or no ``v1`` signature matches (compared in constant time).
    """
    body = _body_bytes(raw_body)
    msg_id = _header(headers, "webhook-id")
    timestamp = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature")
    if not msg_id or not timestamp or not signatures:
        raise WebhookVerificationError(
            "missing webhook-id, webhook-timestamp or webhook-signature header")
    try:
        ts = int(timestamp.strip())
    except ValueError as e:
        raise WebhookVerificationError("webhook-timestamp is not a Unix time") from e
    current = time.time() if now is None else now
    if abs(current - ts) > tolerance:
        raise WebhookVerificationError(
            f"webhook-timestamp is {int(current - ts)} s from now, over the {tolerance} s tolerance")

    secrets: List[str] = [secret] if isinstance(secret, str) else list(secret)
    if not secrets:
        raise WebhookVerificationError("no webhook secret given")
    expected = [_signature(_key(s), msg_id, timestamp.strip(), body).encode("ascii") for s in secrets]
    matched = False
    for entry in signatures.split():
        version, _, value = entry.partition(",")
        if version != "v1" or not value:
            continue
        for want in expected:
            # Every comparison runs: no early exit that a timing could reveal.
            matched |= hmac.compare_digest(value.encode("ascii", "replace"), want)
    if not matched:
        raise WebhookVerificationError("no webhook signature matches the secret")
    try:
        event = json.loads(body.decode("utf-8"))
    except ValueError as e:
        raise WebhookVerificationError("the webhook body is not JSON") from e
    if not isinstance(event, dict):
        raise WebhookVerificationError("the webhook body is not a JSON object")
    return event
