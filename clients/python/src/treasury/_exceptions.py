"""Errors raised by the Treasury client.

Every error the API answers with becomes an :class:`APIError`, of the subclass
its HTTP status names (API.md §2 and §11)::

    400 BadRequestError            404 NotFoundError
    401 AuthenticationError        409 ConflictError
    403 PermissionDeniedError      422 UnprocessableEntityError
    429 RateLimitError             5xx InternalServerError
                                   501 NotImplementedAPIError (an InternalServerError)

Other statuses (413 ``request_too_large``, 408 ``request_timeout``) are plain
:class:`APIError`. A request that never got an answer raises
:class:`APIConnectionError` (or :class:`APITimeoutError`).
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Type

__all__ = [
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
]


class TreasuryError(Exception):
    """The base class of every error this package raises."""


class APIError(TreasuryError):
    """An error answer of the Treasury API.

    Attributes:
        status: The HTTP status code (``None`` for a request that got no answer).
        code: The API's error code, e.g. ``"insufficient_funds"`` (API.md §2).
        message: The human-readable message of the error body.
        param: The request field the error is about, when there is one.
        request_id: The ``X-Request-Id`` of the request, to quote to support.
        resource_id: The id of the resource involved (e.g. the original payment
            of an ``idempotency_conflict``), when there is one.
        headers: The response headers (lower-cased names).
        body: The decoded error body (a dict), or the raw text if it was not JSON.
    """

    status: Optional[int]
    code: Optional[str]
    message: str
    param: Optional[str]
    request_id: Optional[str]
    resource_id: Optional[str]
    headers: Dict[str, str]
    body: Any

    def __init__(
        self,
        message: str,
        *,
        status: Optional[int] = None,
        code: Optional[str] = None,
        param: Optional[str] = None,
        request_id: Optional[str] = None,
        resource_id: Optional[str] = None,
        headers: Optional[Mapping[str, str]] = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.param = param
        self.request_id = request_id
        self.resource_id = resource_id
        self.headers = {k.lower(): v for k, v in (headers or {}).items()}
        self.body = body

    @property
    def retry_after(self) -> Optional[float]:
        """The ``Retry-After`` of the answer in seconds, if it carried one."""
        from ._base import _parse_retry_after  # late import: _base imports this module

        return _parse_retry_after(self.headers.get("retry-after"))

    def __str__(self) -> str:
        parts = []
        if self.status is not None:
            parts.append(str(self.status))
        if self.code:
            parts.append(self.code)
        head = " ".join(parts)
        text = f"{head}: {self.message}" if head else self.message
        if self.param:
            text += f" (param: {self.param})"
        if self.request_id:
            text += f" [request_id: {self.request_id}]"
        return text

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, "
            f"message={self.message!r}, param={self.param!r}, "
            f"request_id={self.request_id!r}, resource_id={self.resource_id!r})"
        )


class APIStatusError(APIError):
    """An :class:`APIError` that came with an HTTP status (every subclass below)."""

    status: int


class BadRequestError(APIStatusError):
    """400: the request is malformed (``invalid_request``, ``unbalanced_entry``,
    ``amount_exceeds_rail_limit``, ``replay_too_large``); ``param`` names the field."""


class AuthenticationError(APIStatusError):
    """401 ``unauthorized``: the key is missing, malformed, unknown, revoked or expired."""


class PermissionDeniedError(APIStatusError):
    """403 ``forbidden``: the key may not call this route (a platform key on an
    operator route, a live key on a sandbox-only route, ...)."""


class NotFoundError(APIStatusError):
    """404 ``not_found``: no such object for this key (or no such route)."""


class ConflictError(APIStatusError):
    """409: ``idempotency_conflict`` (with ``resource_id``), ``idempotency_in_progress``,
    ``payment_not_cancelable``, ``kyb_in_progress``, ``kyb_already_approved``, ``invalid_state``."""


class UnprocessableEntityError(APIStatusError):
    """422: a business rule refused the request (``insufficient_funds``,
    ``kyb_not_approved``, ``account_not_active``, ``compliance_rejected``,
    ``counterparty_not_verified``, ...)."""


class RateLimitError(APIStatusError):
    """429 ``rate_limited``: too many requests; see :attr:`APIError.retry_after`."""


class InternalServerError(APIStatusError):
    """5xx: ``internal_error`` (500) or ``unavailable`` (503), and 501
    (:class:`NotImplementedAPIError`)."""


class NotImplementedAPIError(InternalServerError):
    """501 ``not_implemented``: the route is not served by this build (no route answers it
    today; the code is reserved). Never retried, whatever the answer's
    ``x-should-retry`` says: the same request meets the same answer. A subclass of
    :class:`InternalServerError`, so ``except InternalServerError`` catches it too."""


class APIConnectionError(APIError):
    """The request got no answer: the connection failed or was cut."""

    def __init__(self, message: str = "connection error") -> None:
        super().__init__(message)


class APITimeoutError(APIConnectionError):
    """The request got no answer within the client's timeout."""

    def __init__(self, message: str = "request timed out") -> None:
        super().__init__(message)


class WebhookVerificationError(TreasuryError, ValueError):
    """A webhook delivery failed verification: missing headers, a timestamp
    outside the tolerance, or no signature matching the secret."""


_STATUS_ERRORS: Dict[int, Type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}


def error_class_for(status: int) -> Type[APIStatusError]:
    """The error class an answer of HTTP ``status`` raises."""
    if status == 501:
        return NotImplementedAPIError
    if status >= 500:
        return InternalServerError
    return _STATUS_ERRORS.get(status, APIStatusError)
