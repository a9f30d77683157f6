"""The resource namespaces of :class:`treasury.Treasury`."""

from .book_transfers import BookTransfers
from .counterparties import Counterparties
from .events import Events
from .kyb import KYB
from .ledger import Ledger, LedgerAccounts, LedgerEntries, LedgerJournalEntries
from .operator import ACHFiles, Operator, OperatorKYB
from .payments import Payments
from .platform import APIKeys, PlatformResource, Settings
from .platforms import Platforms
from .simulations import SimulatedInboundTransfers, SimulatedKYB, SimulatedPayments, Simulations
from .virtual_accounts import VirtualAccounts
from .webhooks import WebhookDeliveries, Webhooks

__all__ = [
    "ACHFiles", "APIKeys", "BookTransfers", "Counterparties", "Events", "KYB", "Ledger", "LedgerAccounts", "LedgerEntries", "LedgerJournalEntries", "Operator",
    "OperatorKYB", "Payments", "PlatformResource", "Platforms", "Settings", "SimulatedInboundTransfers",
    "SimulatedKYB", "SimulatedPayments", "Simulations", "VirtualAccounts", "WebhookDeliveries", "Webhooks",
]
