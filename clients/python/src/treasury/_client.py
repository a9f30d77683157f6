"""The :class:`Treasury` client."""

from __future__ import annotations

import os
from typing import Mapping, Optional

from ._base import DEFAULT_BASE_URL, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, BaseClient
from ._exceptions import TreasuryError
from .resources import (
    KYB,
    BookTransfers,
    Counterparties,
    Events,
    Ledger,
    Operator,
    Payments,
    PlatformResource,
    Platforms,
    Simulations,
    VirtualAccounts,
    Webhooks,
)

__all__ = ["Treasury"]


class Treasury(BaseClient):
    """A client of the Treasury API.

    Example::

        from treasury import Treasury

        client = Treasury(api_key="sk_sandbox_...", base_url="http://localhost:8080/v1")
        account = client.virtual_accounts.retrieve("va_...")
        for payment in client.payments.list(virtual_account_id=account["id"]):
            print(payment["id"], payment["status"])

    Args:
        api_key: A platform key (``sk_sandbox_…``/``sk_live_…``) or the operator key.
            Default: the ``TREASURY_API_KEY`` environment variable.
        base_url: The API's address with ``/v1``. Default: ``TREASURY_BASE_URL``, else
            ``http://localhost:8080/v1``.
        max_retries: Retries of a call after a connection error, 408, 429, 409
            ``idempotency_in_progress`` or 5xx (default 2). The server's
            ``x-should-retry`` header overrides that choice when present; a 501
            (``not_implemented``) is never retried.
        timeout: Seconds to wait for each attempt's answer (default 60).
        default_headers: Headers to send with every request.

    Every ``POST`` carries an ``Idempotency-Key`` (yours, or a random one), the same
    on each retry of the call. Retries wait ``Retry-After`` when the answer has one,
    else an exponential backoff from 0.5 s capped at 8 s.
    """

    platforms: Platforms
    """Operator: register, list, retrieve, update, approve, enable_live, fund."""
    operator: Operator
    """Operator: ``platforms``, ``kyb.decide``, ``ach_files``."""
    platform: PlatformResource
    """The caller's platform: ``retrieve``, ``settings``, ``api_keys``, ``revenue_share``."""
    virtual_accounts: VirtualAccounts
    payments: Payments
    book_transfers: BookTransfers
    """Money moved at once between two of the platform's accounts: ``create``, ``retrieve``, ``list``."""
    counterparties: Counterparties
    """Bank accounts saved to pay again: ``create``, ``retrieve``, ``list``, ``delete``, ``verify``."""
    kyb: KYB
    ledger: Ledger
    webhooks: Webhooks
    events: Events
    simulations: Simulations

    def __init__(
        self,
        api_key: Optional[str] = None,
        *,
        base_url: Optional[str] = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT,
        default_headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        if api_key is None:
            api_key = os.environ.get("TREASURY_API_KEY")
        if not api_key:
            raise TreasuryError("no API key: pass api_key=... or set TREASURY_API_KEY")
        if base_url is None:
            base_url = os.environ.get("TREASURY_BASE_URL") or DEFAULT_BASE_URL
        super().__init__(api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=timeout,
                         default_headers=default_headers)
        self.platforms = Platforms(self)
        self.operator = Operator(self, self.platforms)
        self.platform = PlatformResource(self)
        self.virtual_accounts = VirtualAccounts(self)
        self.payments = Payments(self)
        self.book_transfers = BookTransfers(self)
        self.counterparties = Counterparties(self)
        self.kyb = KYB(self)
        self.ledger = Ledger(self)
        self.webhooks = Webhooks(self)
        self.events = Events(self)
        self.simulations = Simulations(self)

    def with_options(
        self,
        *,
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        max_retries: Optional[int] = None,
        timeout: Optional[float] = None,
    ) -> "Treasury":
        """A copy of this client with some options changed, e.g.
        ``client.with_options(api_key=platform_key)`` or ``with_options(max_retries=0)``."""
        return type(self)(
            api_key=api_key if api_key is not None else self.api_key,
            base_url=base_url if base_url is not None else self.base_url,
            max_retries=max_retries if max_retries is not None else self.max_retries,
            timeout=timeout if timeout is not None else self.timeout,
            default_headers=self.default_headers,
        )

    def __repr__(self) -> str:
        return f"<Treasury base_url={self.base_url!r} key={self.api_key[:12]}…>"
