"""Every route of the API (``METHOD /path`` as openapi.json spells it) and the
client method that calls it. ``test_openapi`` checks this table against the
OpenAPI document; ``test_integration`` checks every route was called."""

from __future__ import annotations

from typing import Any, Callable, Dict

import support  # noqa: F401  (the import path)
from treasury import Treasury

# Routes the client deliberately has no method for.
NOT_CLIENT_METHODS = {"GET /openapi.json"}

ROUTES: Dict[str, Callable[[Treasury], Callable[..., Any]]] = {
    # operator
    "POST /platforms": lambda c: c.platforms.register,
    "GET /operator/platforms": lambda c: c.platforms.list,
    "GET /operator/platforms/{id}": lambda c: c.platforms.retrieve,
    "PATCH /operator/platforms/{id}": lambda c: c.platforms.update,
    "POST /operator/platforms/{id}/approve": lambda c: c.platforms.approve,
    "POST /operator/platforms/{id}/enable-live": lambda c: c.platforms.enable_live,
    "POST /operator/platforms/{id}/fund": lambda c: c.platforms.fund,
    "POST /operator/kyb/{id}/decision": lambda c: c.operator.kyb.decide,
    "GET /operator/rails/ach/files": lambda c: c.operator.ach_files.list,
    "POST /operator/rails/ach/files": lambda c: c.operator.ach_files.cut,
    # the caller's platform
    "GET /platform": lambda c: c.platform.retrieve,
    "GET /platform/settings": lambda c: c.platform.settings.retrieve,
    "PATCH /platform/settings": lambda c: c.platform.settings.update,
    "POST /platform/api-keys": lambda c: c.platform.api_keys.create,
    "GET /platform/api-keys": lambda c: c.platform.api_keys.list,
    "DELETE /platform/api-keys/{id}": lambda c: c.platform.api_keys.revoke,
    "POST /platform/api-keys/{id}/roll": lambda c: c.platform.api_keys.roll,
    "GET /platform/revenue-share": lambda c: c.platform.revenue_share,
    # virtual accounts
    "POST /virtual-accounts": lambda c: c.virtual_accounts.create,
    "GET /virtual-accounts": lambda c: c.virtual_accounts.list,
    "GET /virtual-accounts/{id}": lambda c: c.virtual_accounts.retrieve,
    "GET /virtual-accounts/{id}/balance": lambda c: c.virtual_accounts.balance,
    "GET /virtual-accounts/{id}/transactions": lambda c: c.virtual_accounts.transactions,
    "GET /virtual-accounts/{id}/statements/{month}": lambda c: c.virtual_accounts.statements,
    "POST /virtual-accounts/{id}/freeze": lambda c: c.virtual_accounts.freeze,
    "POST /virtual-accounts/{id}/unfreeze": lambda c: c.virtual_accounts.unfreeze,
    "POST /virtual-accounts/{id}/close": lambda c: c.virtual_accounts.close,
    # ledger
    "GET /ledger/accounts": lambda c: c.ledger.accounts.list,
    "GET /ledger/entries": lambda c: c.ledger.entries.list,
    "POST /ledger/entries": lambda c: c.ledger.entries.create,
    "GET /ledger/journal-entries": lambda c: c.ledger.journal_entries.list,
    "GET /ledger/journal-entries/{id}": lambda c: c.ledger.journal_entries.retrieve,
    "GET /ledger/exports": lambda c: c.ledger.exports,
    # payments
    "POST /payments": lambda c: c.payments.create,
    "GET /payments": lambda c: c.payments.list,
    "GET /payments/{id}": lambda c: c.payments.retrieve,
    "POST /payments/{id}/cancel": lambda c: c.payments.cancel,
    "POST /payments/{id}/approve": lambda c: c.payments.approve,
    "POST /payments/{id}/deny": lambda c: c.payments.deny,
    # book transfers
    "POST /book-transfers": lambda c: c.book_transfers.create,
    "GET /book-transfers": lambda c: c.book_transfers.list,
    "GET /book-transfers/{id}": lambda c: c.book_transfers.retrieve,
    # counterparties
    "POST /counterparties": lambda c: c.counterparties.create,
    "GET /counterparties": lambda c: c.counterparties.list,
    "GET /counterparties/{id}": lambda c: c.counterparties.retrieve,
    "DELETE /counterparties/{id}": lambda c: c.counterparties.delete,
    "POST /counterparties/{id}/verify": lambda c: c.counterparties.verify,
    # KYB
    "POST /kyb": lambda c: c.kyb.create,
    "GET /kyb": lambda c: c.kyb.list,
    "GET /kyb/{id}": lambda c: c.kyb.retrieve,
    # simulations
    "POST /simulations/inbound-transfers": lambda c: c.simulations.inbound_transfers.create,
    "POST /simulations/kyb/{id}/decision": lambda c: c.simulations.kyb.decide,
    "POST /simulations/payments/{id}/complete": lambda c: c.simulations.payments.complete,
    "POST /simulations/payments/{id}/fail": lambda c: c.simulations.payments.fail,
    "POST /simulations/payments/{id}/release": lambda c: c.simulations.payments.release,
    # events
    "GET /events": lambda c: c.events.list,
    "GET /events/{id}": lambda c: c.events.retrieve,
    # webhooks
    "POST /webhooks": lambda c: c.webhooks.create,
    "GET /webhooks": lambda c: c.webhooks.list,
    "GET /webhooks/{id}": lambda c: c.webhooks.retrieve,
    "PATCH /webhooks/{id}": lambda c: c.webhooks.update,
    "DELETE /webhooks/{id}": lambda c: c.webhooks.delete,
    "POST /webhooks/{id}/rotate-secret": lambda c: c.webhooks.rotate_secret,
    "POST /webhooks/{id}/test": lambda c: c.webhooks.test,
    "POST /webhooks/{id}/replay": lambda c: c.webhooks.replay,
    "GET /webhooks/{id}/deliveries": lambda c: c.webhooks.deliveries.list,
    "POST /webhooks/{id}/deliveries/{delivery_id}/retry": lambda c: c.webhooks.deliveries.retry,
}
