"""The Python client of the Treasury API (embedded treasury: virtual accounts, KYB,
payments over ACH, RTP and FedNow, a ledger, webhooks).

Quick start::

    import treasury

    client = treasury.Treasury(api_key="sk_sandbox_...", base_url="http://localhost:8080/v1")
    payment = client.payments.create(
        virtual_account_id="va_...",
        amount=12_500,
        rail="rtp",
        destination={"account_number": "123456789", "routing_number": "021000021", "name": "Acme"},
    )

    for p in client.payments.list(status="completed"):   # walks every page
        ...

    event = treasury.webhooks.verify(raw_body, headers, "whsec_...")

Standard library only; Python 3.9 or later.
"""

from . import types, webhooks
from ._client import Treasury
from ._exceptions import (
    APIConnectionError,
    APIError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    InternalServerError,
    NotFoundError,
    NotImplementedAPIError,
    PermissionDeniedError,
    RateLimitError,
    TreasuryError,
    UnprocessableEntityError,
    WebhookVerificationError,
)
from ._pagination import Page
from ._types import NOT_GIVEN, NotGiven, RequestOptions
from ._version import __version__

__all__ = [
    "Treasury",
    "Page",
    "RequestOptions",
    "NOT_GIVEN",
    "NotGiven",
    "TreasuryError",
    "APIError",
    "APIStatusError",
    "BadRequestError",
    "AuthenticationError",
    "PermissionDeniedError",
    "NotFoundError",
    "ConflictError",
    "UnprocessableEntityError",
    "RateLimitError",
    "InternalServerError",
    "NotImplementedAPIError",
    "APIConnectionError",
    "APITimeoutError",
    "WebhookVerificationError",
    "types",
    "webhooks",
    "__version__",
]
