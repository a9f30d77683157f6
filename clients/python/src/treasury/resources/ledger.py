"""The platform's ledger: ``client.ledger``."""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Union

from .._base import path_segment as _seg, strip_not_given
from .._pagination import Page
from .._types import NOT_GIVEN, NotGiven, RequestOptions
from ..types import (
    Direction,
    JournalEntry,
    JournalEntryType,
    JournalLineParam,
    LedgerAccount,
    LedgerEntry,
    LedgerEntryStatus,
    LedgerEntryType,
    ManualEntryType,
    Metadata,
    SourceType,
)
from ._base import APIResource

if TYPE_CHECKING:
    from .._base import BaseClient

__all__ = ["Ledger", "LedgerAccounts", "LedgerEntries", "LedgerJournalEntries"]


class LedgerAccounts(APIResource):
    """``client.ledger.accounts``."""

    def list(
        self,
        *,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Page[LedgerAccount]:
        """List the ledger accounts with their balances (``GET /ledger/accounts``)."""
        return self._list("/ledger/accounts", query={"limit": limit, "cursor": cursor},
                          request_options=request_options)


class LedgerEntries(APIResource):
    """``client.ledger.entries``: ledger entries, and manual journal entries."""

    def list(
        self,
        *,
        virtual_account_id: Optional[str] = None,
        ledger_account_id: Optional[str] = None,
        type: Optional[LedgerEntryType] = None,
        direction: Optional[Direction] = None,
        status: Optional[LedgerEntryStatus] = None,
        created_after: Optional[str] = None,
        created_before: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Page[LedgerEntry]:
        """List ledger entries, of one account or of the whole platform (``GET /ledger/entries``).

        Each entry carries its journal entry's ``source`` (``{"type": "payment", "id":
        "pay_…"}``, ``"inbound_transfer"``, ``"book_transfer"``, or ``"journal_entry"``
        with the entry's own id for a manual entry or a funding), the same on every
        line of one journal entry.
        """
        return self._list(
            "/ledger/entries",
            query={"virtual_account_id": virtual_account_id, "ledger_account_id": ledger_account_id,
                   "type": type, "direction": direction, "status": status, "created_after": created_after,
                   "created_before": created_before, "limit": limit, "cursor": cursor},
            request_options=request_options,
        )

    def create(
        self,
        *,
        type: Union[ManualEntryType, NotGiven] = NOT_GIVEN,
        description: Union[str, NotGiven] = NOT_GIVEN,
        virtual_account_id: Union[str, NotGiven] = NOT_GIVEN,
        direction: Union[Direction, NotGiven] = NOT_GIVEN,
        amount: Union[int, NotGiven] = NOT_GIVEN,
        lines: Union[List[JournalLineParam], NotGiven] = NOT_GIVEN,
        reverses: Union[str, NotGiven] = NOT_GIVEN,
        effective_at: Union[str, NotGiven] = NOT_GIVEN,
        metadata: Union[Metadata, None, NotGiven] = NOT_GIVEN,
        idempotency_key: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> JournalEntry:
        """Post a manual journal entry (``POST /ledger/entries``), in one of three forms:

        * shorthand: ``type``, ``description``, ``virtual_account_id``, ``direction``,
          ``amount`` (the offset goes to ``platform_fees`` for a fee, else
          ``platform_operating``);
        * lines: ``type``, ``description``, ``lines`` (≥ 2, balanced);
        * reversal: ``reverses="je_…"`` posts the mirror image of that entry.

        ``idempotency_key`` is sent as the ``Idempotency-Key`` header.
        """
        body = strip_not_given(type=type, description=description, virtual_account_id=virtual_account_id,
                               direction=direction, amount=amount, lines=lines, reverses=reverses,
                               effective_at=effective_at, metadata=metadata)
        return self._post("/ledger/entries", body=body, idempotency_key=idempotency_key,
                          request_options=request_options)


class LedgerJournalEntries(APIResource):
    """``client.ledger.journal_entries``: journal entries, listed or by id."""

    def list(
        self,
        *,
        type: Optional[JournalEntryType] = None,
        status: Optional[LedgerEntryStatus] = None,
        virtual_account_id: Optional[str] = None,
        source_type: Optional[SourceType] = None,
        source_id: Optional[str] = None,
        metadata: Optional[Metadata] = None,
        created_after: Optional[str] = None,
        created_before: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Page[JournalEntry]:
        """List the platform's journal entries, newest first (in ledger order), each
        with its lines and its ``source`` exactly as :meth:`retrieve` shows it
        (``GET /ledger/journal-entries``). Iterate to walk all pages; every filter
        goes with every page's request, and they all combine.

        The list is a projection of the ledger: an entry appears shortly (normally
        milliseconds) after the call that posted it returns. A bad filter value
        raises :class:`~treasury.BadRequestError` naming it in ``param``.

        Args:
            type: ``"adjustment"``, ``"fee"``, ``"correction"``, ``"inbound_transfer"``,
                ``"payment"``, ``"payment_reversal"``, ``"book_transfer"`` or
                ``"funding"`` (``payment_fee`` is only a line's type).
            status: ``"pending"``, ``"posted"`` or ``"archived"``.
            virtual_account_id: Only the entries with a line on this account (an
                unknown or another platform's account gives an empty list, not 404).
            source_type: ``"payment"``, ``"inbound_transfer"``, ``"book_transfer"``,
                or ``"journal_entry"`` (manual entries and fundings).
            source_id: Only the entries whose ``source["id"]`` is this: say a
                payment's (its hold and, if it was returned, its reversal).
            metadata: Only the entries whose metadata holds every one of these pairs,
                sent as ``metadata[key]=value`` and kept on every page's request.
            created_after: RFC 3339 time or ``YYYY-MM-DD``, inclusive.
            created_before: RFC 3339 time or ``YYYY-MM-DD``, exclusive.
        """
        return self._list(
            "/ledger/journal-entries",
            query={"type": type, "status": status, "virtual_account_id": virtual_account_id,
                   "source_type": source_type, "source_id": source_id, "metadata": metadata,
                   "created_after": created_after, "created_before": created_before, "limit": limit,
                   "cursor": cursor},
            request_options=request_options,
        )

    def retrieve(self, id: str, *, request_options: Optional[RequestOptions] = None) -> JournalEntry:
        """Get a journal entry with its lines and its ``source``
        (``GET /ledger/journal-entries/{id}``): follow a payment's, inbound transfer's,
        book transfer's or ledger entry's ``journal_entry_id`` to the money it moved;
        its ``source`` (also on each of its ``entries``) leads back. Another
        platform's or environment's id, or an unknown one, raises
        :class:`~treasury.NotFoundError`."""
        return self._get(f"/ledger/journal-entries/{_seg(id)}", request_options=request_options)


class Ledger(APIResource):
    """``client.ledger``: ``accounts``, ``entries``, ``journal_entries`` (listed or by id) and the CSV ``exports``."""

    accounts: LedgerAccounts
    entries: LedgerEntries
    journal_entries: LedgerJournalEntries

    def __init__(self, client: "BaseClient") -> None:
        super().__init__(client)
        self.accounts = LedgerAccounts(client)
        self.entries = LedgerEntries(client)
        self.journal_entries = LedgerJournalEntries(client)

    def exports(
        self,
        *,
        created_after: Optional[str] = None,
        created_before: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> str:
        """The reconciliation export (``GET /ledger/exports``): CSV text of every ledger
        entry created in the range, with each account's running balance."""
        return self._get("/ledger/exports", query={"created_after": created_after, "created_before": created_before},
                         request_options=request_options, accept="text/csv")
