"""Small helper types shared by the resources."""

from __future__ import annotations

from typing import Mapping, Optional, TypedDict

__all__ = ["NotGiven", "NOT_GIVEN", "RequestOptions"]


class NotGiven:
    """The type of :data:`NOT_GIVEN`, the default of optional body fields.

    An argument left at ``NOT_GIVEN`` is not sent; ``None`` is sent as JSON
    ``null`` (which, in an update, clears a nullable setting).
    """

    _instance: Optional["NotGiven"] = None

    def __new__(cls) -> "NotGiven":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "NOT_GIVEN"

    def __reduce__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN = NotGiven()


class RequestOptions(TypedDict, total=False):
    """Per-call options every method takes as ``request_options=``.

    Keys:
        request_id: Sent as ``X-Request-Id`` (1 to 64 of ``A-Z a-z 0-9 . _ : -``).
        max_retries: Overrides the client's ``max_retries`` for this call.
        timeout: Seconds to wait for each attempt's answer.
        extra_headers: More headers to send.
    """

    request_id: str
    max_retries: int
    timeout: float
    extra_headers: Mapping[str, str]
