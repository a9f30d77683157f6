"""The resources of the Treasury API, as typed dictionaries.

Every method returns plain ``dict`` objects decoded from JSON; these
``TypedDict`` classes describe them for type checkers and editors. They are
kept equal to the schemas of ``/v1/openapi.json``: the test suite
(``tests/test_openapi.py``) fails when a schema gains or loses a property that
the model here does not.

Amounts are integers of cents; rates are decimal strings (``"0.30"``); times are
RFC 3339 strings in UTC.
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, TypedDict, Union

__all__ = [
    # enumerations
    "Environment", "Rail", "Direction", "ErrorCode", "EventType", "WebhookEventSelector",
    "ReplayableEventType",
    "PlatformStatus", "VirtualAccountType", "VirtualAccountStatus", "KYBStatus",
    "KYBVerificationStatus", "KYBOutcome", "KYBMethod", "EntityType", "USState",
    "TransactionType", "TransactionStatus", "SourceType", "LedgerAccountName",
    "LedgerEntryType", "JournalEntryType", "LedgerEntryStatus", "ManualEntryType", "InboundTransferStatus",
    "PaymentStatus", "CancellationReason", "FailureCode", "RetryAction", "WebhookStatus",
    "WebhookDeliveryState", "WebhookDeliveryStatusValue", "RevenueSource",
    "CounterpartyAccountType", "CounterpartyVerificationStatus", "CounterpartyVerificationMethod",
    # resources
    "Metadata", "FeeSchedule", "RateLimit", "Platform", "PlatformWithKeys", "APIKey",
    "WebhookRetryPolicy", "SandboxSettings", "PlatformSettings",
    "AccountBalance", "VirtualAccount", "Balance", "Source", "Transaction", "Statement",
    "LedgerAccountBalances", "LedgerAccount", "LedgerEntry", "JournalEntry",
    "InboundOriginator", "InboundTransfer", "BookTransfer",
    "Destination", "RetryRecommendation", "PaymentFailure", "NotificationOfChange", "PaymentApproval",
    "Payment",
    "CounterpartyVerification", "Counterparty", "DeletedCounterparty",
    "EventData", "Event",
    "KYBAddress", "KYBBusiness", "KYBOwner", "KYBReason", "KYBDecision", "KYBReview",
    "KYBVerification",
    "WebhookDeliveryStatus", "WebhookEndpoint", "DeletedWebhookEndpoint", "WebhookAttempt",
    "WebhookDelivery", "QueuedWebhookDelivery", "WebhookReplay",
    "RevenueLine", "RevenueShareReport", "ACHFile", "ACHFileCut",
    # request parameters
    "FeeScheduleParam", "RateLimitParam", "WebhookRetryPolicyParam", "SandboxSettingsParam",
    "DestinationParam", "OriginatorParam", "KYBAddressParam", "KYBBusinessParam",
    "KYBOwnerParam", "KYBReasonParam", "JournalLineParam",
]

# ---------------------------------------------------------------------------
# Enumerations
# ---------------------------------------------------------------------------

Environment = Literal["sandbox", "live"]
"""The environment of a key and of everything it creates."""

Rail = Literal["ach_standard", "ach_same_day", "rtp", "fednow"]
"""A payment rail."""

Direction = Literal["debit", "credit"]

ErrorCode = Literal[
    "invalid_request", "unbalanced_entry", "amount_exceeds_rail_limit", "unauthorized",
    "forbidden", "not_found", "idempotency_conflict", "idempotency_in_progress",
    "payment_not_cancelable", "kyb_in_progress", "kyb_already_approved", "invalid_state",
    "request_too_large", "request_timeout", "kyb_not_approved", "compliance_rejected",
    "insufficient_funds", "account_not_active", "limit_exceeded", "live_not_enabled",
    "counterparty_not_verified", "rate_limited", "internal_error", "not_implemented", "unavailable",
    "replay_too_large",
]
"""The ``code`` of an error answer (``APIError.code``). ``replay_too_large`` (400,
:class:`~treasury.BadRequestError`): a webhook replay's window holds more than 10,000
events; split it. ``counterparty_not_verified`` (422,
:class:`~treasury.UnprocessableEntityError`): with the setting
``require_verified_counterparty`` on, a payment to a counterparty that is not
``verified``, or to a raw ``destination``. ``not_implemented`` (501,
:class:`~treasury.NotImplementedAPIError`, never retried): the route is not served
by this build (reserved: no route answers it today)."""

EventType = Literal[
    "virtual_account.created", "payment.created", "payment.submitted", "payment.completed",
    "payment.failed", "payment.canceled", "payment.requires_approval", "payment.approved",
    "payment.denied", "payment.released", "payment.notification_of_change",
    "kyb.pending_review", "kyb.approved", "kyb.rejected", "ledger.entry.created",
    "inbound_transfer.completed", "book_transfer.completed",
    "counterparty.verified", "counterparty.verification_failed", "webhook.test",
]

WebhookEventSelector = Literal[
    "*", "virtual_account.created", "payment.created", "payment.submitted", "payment.completed",
    "payment.failed", "payment.canceled", "payment.requires_approval", "payment.approved",
    "payment.denied", "payment.released", "payment.notification_of_change",
    "kyb.pending_review", "kyb.approved", "kyb.rejected", "ledger.entry.created",
    "inbound_transfer.completed", "book_transfer.completed",
    "counterparty.verified", "counterparty.verification_failed", "webhook.test",
]
"""An event type a webhook endpoint subscribes to, or ``"*"`` for all."""

ReplayableEventType = Literal[
    "virtual_account.created", "payment.created", "payment.submitted", "payment.completed",
    "payment.failed", "payment.canceled", "payment.requires_approval", "payment.approved",
    "payment.denied", "payment.released", "payment.notification_of_change",
    "kyb.pending_review", "kyb.approved", "kyb.rejected", "ledger.entry.created",
    "inbound_transfer.completed", "book_transfer.completed",
    "counterparty.verified", "counterparty.verification_failed",
]
"""An event type a webhook replay may name (``client.webhooks.replay(types=[…])``):
every event type but ``webhook.test`` (and not ``"*"``)."""

PlatformStatus = Literal["pending_approval", "approved"]
VirtualAccountType = Literal["checking", "savings"]
VirtualAccountStatus = Literal["active", "frozen", "closed"]
KYBStatus = Literal["not_started", "pending", "pending_review", "approved", "rejected"]
KYBVerificationStatus = Literal["pending", "pending_review", "approved", "rejected"]
KYBOutcome = Literal["approved", "rejected"]
KYBMethod = Literal["automatic", "manual"]
EntityType = Literal["llc", "corporation", "partnership", "sole_proprietorship", "nonprofit"]
USState = Literal[
    "AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "FL", "GA", "HI", "ID", "IL", "IN", "IA",
    "KS", "KY", "LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ",
    "NM", "NY", "NC", "ND", "OH", "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VT",
    "VA", "WA", "WV", "WI", "WY", "DC", "PR", "GU", "VI", "AS", "MP",
]
TransactionType = Literal[
    "inbound_transfer", "payment", "payment_fee", "payment_reversal", "book_transfer", "adjustment", "fee",
    "correction",
]
TransactionStatus = Literal["pending", "posted", "void"]
SourceType = Literal["inbound_transfer", "payment", "book_transfer", "journal_entry"]
LedgerAccountName = Literal[
    "virtual_account", "platform_operating", "platform_fees", "service_fee_revenue",
    "rail_clearing_ach_standard", "rail_clearing_ach_same_day", "rail_clearing_rtp",
    "rail_clearing_fednow", "operator_funding",
]
LedgerEntryType = Literal[
    "inbound_transfer", "payment", "payment_fee", "payment_reversal", "book_transfer", "adjustment", "fee",
    "correction", "funding",
]
JournalEntryType = Literal[
    "adjustment", "fee", "correction", "inbound_transfer", "payment", "payment_reversal", "book_transfer", "funding",
]
"""The type of a journal entry (``client.ledger.journal_entries.list(type=…)``):
a ledger entry's types but ``payment_fee``, which is only a line's (a payment's entry
is of type ``payment``, with a ``payment_fee`` line)."""
LedgerEntryStatus = Literal["pending", "posted", "archived"]
ManualEntryType = Literal["adjustment", "fee", "correction"]
"""The types of a manual journal entry (``client.ledger.entries.create``)."""
InboundTransferStatus = Literal["pending", "completed"]
PaymentStatus = Literal[
    "scheduled", "requires_approval", "pending", "submitted", "completed", "failed", "canceled", "denied",
]
"""``pending`` → ``submitted`` → ``completed`` or ``failed``; ``pending`` → ``canceled``.
A payment at or above the platform's ``payment_approval_threshold`` starts
``requires_approval`` → ``pending`` (approved by another key), ``denied`` or
``canceled``. A payment created with ``scheduled_for`` starts ``scheduled`` (nothing
held, no journal entry) → on its date ``pending`` or ``requires_approval`` (as a
payment created then), or ``failed`` when a rule refuses it; it can be ``canceled``
while ``scheduled``. ``failed``, ``canceled`` and ``denied`` are final."""
CancellationReason = Literal["approval_expired"]
"""Why the platform did not cancel a ``canceled`` payment itself
(``Payment["cancellation_reason"]``)."""
FailureCode = Literal[
    "insufficient_funds", "account_closed", "no_account", "invalid_account_number",
    "unauthorized_debit", "returned_by_odfi", "authorization_revoked", "payment_stopped",
    "uncollected_funds", "unauthorized", "entry_not_per_authorization", "account_sold",
    "invalid_routing_number", "recipient_deceased", "account_frozen", "file_record_edit_criteria",
    "non_transaction_account", "credit_refused", "duplicate_entry", "corporate_not_authorized",
    "transaction_forbidden", "transaction_not_supported", "amount_exceeds_limit",
    "invalid_recipient", "invalid_format", "not_specified", "network_unavailable", "unknown",
    "account_not_active", "kyb_not_approved", "compliance_rejected", "limit_exceeded",
]
"""The meaning of a failure (``PaymentFailure["code"]``): the rail's, or, for a
scheduled payment refused on its date, the rule's (``insufficient_funds``,
``limit_exceeded``: retry later; ``account_not_active``, ``kyb_not_approved``,
``compliance_rejected``: do not retry), with ``network_code`` ``None``."""
RetryAction = Literal[
    "retry_later", "retry_other_rail", "update_destination", "contact_recipient", "do_not_retry",
]
WebhookStatus = Literal["enabled", "disabled"]
WebhookDeliveryState = Literal["healthy", "failing", "disabled"]
WebhookDeliveryStatusValue = Literal["pending", "succeeded", "failed"]
RevenueSource = Literal["payment_fees", "interest"]
CounterpartyAccountType = Literal["checking", "savings"]
CounterpartyVerificationStatus = Literal["unverified", "pending", "verified", "failed"]
"""``unverified`` → (``client.counterparties.verify``) ``pending`` → ``verified`` or
``failed`` (the prenote was returned; ``failure_code`` says why). A ``failed`` one may
be verified again; a ``pending`` or ``verified`` one may not (409 ``invalid_state``)."""
CounterpartyVerificationMethod = Literal["prenote"]

Metadata = Dict[str, str]
"""Free-form string pairs: at most 50 keys of 1 to 40 characters, values ≤ 500 characters."""

# ---------------------------------------------------------------------------
# Platforms, keys and settings
# ---------------------------------------------------------------------------


class FeeSchedule(TypedDict):
    """Fee per payment in cents, by rail."""

    ach_standard: int
    ach_same_day: int
    rtp: int
    fednow: int


class RateLimit(TypedDict):
    """A token bucket: ``per_second`` tokens a second, up to ``burst``."""

    per_second: int
    burst: int


class Platform(TypedDict):
    """A platform: the parent entity whose businesses hold virtual accounts."""

    id: str
    object: str
    name: str
    contact_email: str
    status: PlatformStatus
    live_enabled: bool
    revenue_share_rate: str
    interest_rate: str
    fee_schedule: FeeSchedule
    rate_limit: Optional[RateLimit]
    metadata: Metadata
    environment: Environment
    created_at: str
    updated_at: str


class _APIKeyRequired(TypedDict):
    id: str
    object: str
    platform_id: str
    name: str
    environment: Environment
    prefix: str
    created_at: str
    last_used_at: Optional[str]
    expires_at: Optional[str]
    revoked_at: Optional[str]


class APIKey(_APIKeyRequired, total=False):
    """A platform API key; ``secret`` only in the answer that created it
    (approval, enabling live, ``api_keys.create``, ``api_keys.roll``)."""

    secret: str


class PlatformWithKeys(Platform, total=False):
    """A platform with the key its approval (``sandbox_api_key``) or enabling
    live (``live_api_key``) just minted, ``secret`` included."""

    sandbox_api_key: APIKey
    live_api_key: APIKey


class WebhookRetryPolicy(TypedDict):
    """How deliveries are retried: exponential backoff from ``initial_delay_seconds``."""

    max_attempts: int
    initial_delay_seconds: int
    max_delay_seconds: int


class SandboxSettings(TypedDict):
    """The simulated rails' behaviour (sandbox only)."""

    auto_settle: bool
    ach_same_day_delay_seconds: int
    ach_standard_delay_seconds: int


class PlatformSettings(TypedDict):
    """A platform's settings in the caller's environment."""

    object: str
    platform_id: str
    environment: Environment
    webhook_retry_policy: WebhookRetryPolicy
    payment_approval_threshold: Optional[int]
    daily_payment_limit: Optional[int]
    require_verified_counterparty: bool
    """Default ``False``. When ``True``, a payment goes only to a ``verified``
    counterparty: one to a counterparty not verified, or to a raw ``destination``,
    raises :class:`~treasury.UnprocessableEntityError` ``counterparty_not_verified``."""
    sandbox: Optional[SandboxSettings]
    updated_at: Optional[str]


# ---------------------------------------------------------------------------
# Virtual accounts
# ---------------------------------------------------------------------------


class AccountBalance(TypedDict):
    """A virtual account's balance in cents; ``available = posted − pending_outbound``."""

    posted: int
    pending_inbound: int
    pending_outbound: int
    available: int


class VirtualAccount(TypedDict):
    """A virtual account of a business (``entity_ref``) of the platform."""

    id: str
    object: str
    platform_id: str
    entity_ref: str
    type: VirtualAccountType
    status: VirtualAccountStatus
    account_number: str
    routing_number: str
    currency: str
    balance: AccountBalance
    kyb_status: KYBStatus
    metadata: Metadata
    environment: Environment
    created_at: str


class Balance(TypedDict):
    """A virtual account's balance at an instant (``as_of``)."""

    object: str
    virtual_account_id: str
    currency: str
    as_of: str
    posted: int
    pending_inbound: int
    pending_outbound: int
    available: int


class Source(TypedDict):
    """What made a transaction, a journal entry or a ledger entry: an inbound
    transfer (``{"type": "inbound_transfer", "id": "itx_…"}``), a payment
    (``"pay_…"``: its amount, its fee and, if it was returned, their reversal), a
    book transfer (``"bt_…"``, on both of its accounts) or a manual journal entry or
    a funding (``{"type": "journal_entry", "id": <the journal entry's own id>}``)."""

    type: SourceType
    id: str


class Transaction(TypedDict):
    """One line of a virtual account's history; ``amount`` is signed."""

    id: str
    object: str
    virtual_account_id: str
    type: TransactionType
    amount: int
    currency: str
    status: TransactionStatus
    description: str
    source: Source
    environment: Environment
    created_at: str
    posted_at: Optional[str]


class Statement(TypedDict):
    """A virtual account's statement of one calendar month (UTC)."""

    object: str
    virtual_account_id: str
    month: str
    currency: str
    period_start: str
    period_end: str
    opening_balance: int
    closing_balance: int
    total_in: int
    total_out: int
    transactions: List[Transaction]


# ---------------------------------------------------------------------------
# Ledger
# ---------------------------------------------------------------------------


class LedgerAccountBalances(TypedDict):
    posted: int
    pending: int
    available: int


class LedgerAccount(TypedDict):
    """An account of the platform's sub-ledger."""

    id: str
    object: str
    name: LedgerAccountName
    virtual_account_id: Optional[str]
    normal_balance: Direction
    currency: str
    balances: LedgerAccountBalances
    environment: Environment
    created_at: str


class LedgerEntry(TypedDict):
    """One debit or credit of one ledger account."""

    id: str
    object: str
    journal_entry_id: str
    ledger_account_id: str
    virtual_account_id: Optional[str]
    direction: Direction
    amount: int
    currency: str
    type: LedgerEntryType
    status: LedgerEntryStatus
    description: str
    environment: Environment
    effective_at: str
    created_at: str
    source: Source
    """What made the entry's journal entry (that entry's ``source``, the same on
    each of its lines): ``{"type": "payment", "id": "pay_…"}``,
    ``{"type": "inbound_transfer", "id": "itx_…"}``, ``{"type": "book_transfer",
    "id": "bt_…"}``, or ``{"type": "journal_entry", "id": <journal_entry_id>}`` for a
    manual entry or a funding."""


class JournalEntry(TypedDict):
    """A balanced journal entry (Σ debits = Σ credits) with its ledger entries."""

    id: str
    object: str
    type: LedgerEntryType
    description: str
    status: LedgerEntryStatus
    reverses: Optional[str]
    reversed_by: Optional[str]
    source: Source
    """What made the entry: ``{"type": "payment", "id": "pay_…"}``,
    ``{"type": "inbound_transfer", "id": "itx_…"}``, ``{"type": "book_transfer",
    "id": "bt_…"}``, or ``{"type": "journal_entry", "id": <its own id>}`` for a
    manual entry or a funding."""
    entries: List[LedgerEntry]
    metadata: Metadata
    environment: Environment
    effective_at: str
    created_at: str


# ---------------------------------------------------------------------------
# Inbound transfers, payments and book transfers
# ---------------------------------------------------------------------------


class InboundOriginator(TypedDict):
    name: str
    account_number: str
    routing_number: str


class InboundTransfer(TypedDict):
    """Funds arriving in a virtual account."""

    id: str
    object: str
    virtual_account_id: str
    amount: int
    currency: str
    rail: Rail
    originator: InboundOriginator
    description: str
    status: InboundTransferStatus
    journal_entry_id: str
    expected_settlement_at: str
    completed_at: Optional[str]
    environment: Environment
    created_at: str


class Destination(TypedDict):
    """The receiving bank account of a payment."""

    account_number: str
    routing_number: str
    name: str


class _RetryRecommendationRequired(TypedDict):
    action: RetryAction


class RetryRecommendation(_RetryRecommendationRequired, total=False):
    """What to do about a failed payment."""

    suggested_rail: Rail
    retry_after: int


class PaymentFailure(TypedDict):
    """Why a payment failed."""

    code: FailureCode
    network_code: Optional[str]
    """The rail's code as it sent it (``R03``, ``AC04``); ``None`` when no rail saw the
    payment: a scheduled payment the rules refused on its date (``code`` is then the
    rule's, e.g. ``insufficient_funds``)."""
    reason: str
    retry_recommendation: RetryRecommendation


class NotificationOfChange(TypedDict):
    """A live ACH notification of change (NACHA addenda 98)."""

    code: str
    corrected_data: str


class PaymentApproval(TypedDict):
    """Where a payment that needed an approval stands (``Payment["approval"]``,
    present only on payments created at or above the platform's
    ``payment_approval_threshold``)."""

    created_by: str
    """The API key (``key_…``) that created the payment: the one key that cannot approve it."""
    expires_at: str
    """Seven days after creation: unapproved by then, the payment is ``canceled``
    with ``cancellation_reason`` ``"approval_expired"``."""
    approved_at: Optional[str]
    """When it was approved; ``None`` until then."""
    approved_by: Optional[str]
    """The key that approved it (``client.payments.approve``); ``None`` until then."""
    denied_at: Optional[str]
    """When it was denied; ``None`` unless denied."""
    denied_by: Optional[str]
    """The key that denied it (``client.payments.deny``); ``None`` unless denied."""
    denial_reason: Optional[str]
    """The ``reason`` given with the denial, if any."""


class _PaymentRequired(TypedDict):
    id: str
    object: str
    virtual_account_id: str
    amount: int
    currency: str
    rail: Rail
    destination: Destination
    status: PaymentStatus
    fee: int
    idempotency_key: str
    description: str
    metadata: Metadata
    journal_entry_id: Optional[str]
    """The journal entry that holds amount + fee (``pending``) and posts them at
    completion (archived instead if the payment fails before completing, is
    canceled or denied): ``client.ledger.journal_entries.retrieve(journal_entry_id)``,
    whose ``source`` is ``{"type": "payment", "id": <this payment's id>}``. A return
    after completion is a ``payment_reversal`` journal entry of its own (its
    ``reverses`` is this one, this one's ``reversed_by`` it). ``None`` while the
    payment is ``scheduled`` (nothing is held before its date), and on a scheduled
    payment the rules refused on its date (it never held anything); set from its
    release on."""
    failure: Optional[PaymentFailure]
    expected_settlement_at: str
    submitted_at: Optional[str]
    completed_at: Optional[str]
    failed_at: Optional[str]
    canceled_at: Optional[str]
    environment: Environment
    created_at: str


class Payment(_PaymentRequired, total=False):
    """A payment out of a virtual account over a rail.

    ``trace_number``, ``ach_file_id`` and ``notification_of_change`` appear on
    live ACH payments only. ``approval`` appears only on payments that needed one
    (created at or above the platform's ``payment_approval_threshold``), and
    ``cancellation_reason`` only on payments canceled by expiry, ``scheduled_for``
    only on payments created with one: read them with ``payment.get("approval")``.
    """

    trace_number: str
    ach_file_id: str
    notification_of_change: NotificationOfChange
    approval: PaymentApproval
    """Who created, approved or denied the payment, and when its approval expires."""
    cancellation_reason: CancellationReason
    """``"approval_expired"`` on a payment canceled because no other key approved it
    within 7 days; absent on every other payment."""
    scheduled_for: str
    """The date (``YYYY-MM-DD``, Eastern) a payment created with ``scheduled_for`` is
    released on, at 06:00 ET; it stays set once released. Absent on other payments."""
    counterparty_id: str
    """The counterparty (``cp_…``) of a payment created with ``counterparty_id``: its
    name, account and routing numbers were copied into ``destination`` at creation
    (the payment keeps them if the counterparty is deleted later). Absent on payments
    to a raw ``destination``."""


# ---------------------------------------------------------------------------
# Counterparties
# ---------------------------------------------------------------------------


class _CounterpartyVerificationRequired(TypedDict):
    status: CounterpartyVerificationStatus
    method: Optional[CounterpartyVerificationMethod]
    """``"prenote"`` once a verification was asked for; ``None`` before."""


class CounterpartyVerification(_CounterpartyVerificationRequired, total=False):
    """How far a counterparty's account is verified (``Counterparty["verification"]``):
    ``unverified`` until ``client.counterparties.verify``; ``pending`` while its
    zero-dollar ACH prenote is out; then ``verified`` (its entry settled without a
    return), or ``failed`` with the ACH return code in ``failure_code`` (read it with
    ``verification.get("failure_code")``). In live, a return from the receiving bank
    turns it ``failed`` even after it was verified."""

    failure_code: str
    """The prenote's ACH return code (``"R03"``), only when ``status`` is ``failed``
    (live: the receiving bank's; in the sandbox: R02, R03, R04, R16, R23 for the account
    numbers 4000000002/03/04/16/23)."""


class Counterparty(TypedDict):
    """A bank account the platform pays again and again, saved once
    (``client.counterparties``). The whole account number is kept (a payment to the
    counterparty copies it into its ``destination``) but never shown: only its last
    four digits."""

    id: str
    """``cp_…``."""
    object: str
    """``"counterparty"``."""
    name: str
    """The account holder's name; a payment's ``destination["name"]`` (screened at each payment)."""
    account_number_last4: str
    routing_number: str
    account_type: CounterpartyAccountType
    verification: CounterpartyVerification
    metadata: Metadata
    environment: Environment
    created_at: str


class DeletedCounterparty(TypedDict):
    """The answer of ``client.counterparties.delete``: ``deleted`` is ``True``."""

    id: str
    object: str
    deleted: bool


class BookTransfer(TypedDict):
    """Money moved at once between two virtual accounts of the platform, in one
    environment (``client.book_transfers``).

    It is ``completed`` when made (there is no other ``status``): one posted
    journal entry of type ``book_transfer`` (``journal_entry_id``) debits the
    sender's ledger account and credits the receiver's, and each account shows a
    posted ``book_transfer`` transaction (−``amount`` on the sender, +``amount`` on
    the receiver) whose ``source`` is ``{"type": "book_transfer", "id": <this id>}``.
    No fee is charged.
    """

    id: str
    """``bt_…``."""
    object: str
    """``"book_transfer"``."""
    from_virtual_account_id: str
    """The account debited."""
    to_virtual_account_id: str
    """The account credited."""
    amount: int
    """Cents moved."""
    currency: str
    description: str
    """As given (may be empty); the journal entry's description is this, else
    ``"Book transfer to <to_virtual_account_id>"``."""
    status: str
    """Always ``"completed"``."""
    idempotency_key: str
    """The key it was created with (the caller's, else the one the client made)."""
    journal_entry_id: str
    """Its journal entry: ``client.ledger.journal_entries.retrieve(journal_entry_id)``."""
    metadata: Metadata
    environment: Environment
    created_at: str


# ---------------------------------------------------------------------------
# Events
# ---------------------------------------------------------------------------


class EventData(TypedDict):
    object: Dict[str, Any]
    """The resource as ``GET`` returned it at the moment of the event."""


class Event(TypedDict):
    """A public event, also the body of every webhook delivery.

    ``data["object"]`` is the resource as ``GET`` returned it at the moment of the
    event: a ``Payment`` for the ``payment.*`` types (``payment.requires_approval``
    when one is held for a second key, ``payment.approved`` when released to its
    rail, ``payment.denied`` when its hold is released, ``payment.released`` when a
    scheduled payment's date came and it was held), a ``BookTransfer`` for
    ``book_transfer.completed``, a ``KYBVerification`` (masked) for ``kyb.*``, a
    ``Counterparty`` for ``counterparty.verified`` and ``counterparty.verification_failed``
    (its ``verification["failure_code"]`` the prenote's return code).
    """

    id: str
    object: str
    type: EventType
    platform_id: str
    environment: Environment
    created_at: str
    data: EventData


# ---------------------------------------------------------------------------
# KYB
# ---------------------------------------------------------------------------


class _KYBAddressRequired(TypedDict):
    line1: str
    city: str
    state: USState
    postal_code: str
    country: str


class KYBAddress(_KYBAddressRequired, total=False):
    """A US street address (no PO box)."""

    line2: Optional[str]


class KYBBusiness(TypedDict):
    """The business of a verification (``ein`` masked to its last 4 digits)."""

    legal_name: str
    dba: Optional[str]
    ein: str
    entity_type: EntityType
    formation_date: str
    formation_state: USState
    address: KYBAddress
    website: Optional[str]
    naics_code: Optional[str]
    phone: Optional[str]


class KYBOwner(TypedDict):
    """A beneficial owner of a verification (masked)."""

    first_name: str
    last_name: str
    date_of_birth: str
    ssn_last4: str
    ownership_percentage: str
    is_control_person: bool
    title: Optional[str]
    address: KYBAddress


class _KYBReasonRequired(TypedDict):
    code: str
    message: str


class KYBReason(_KYBReasonRequired, total=False):
    field: str


class KYBDecision(TypedDict):
    outcome: KYBOutcome
    method: KYBMethod
    reasons: List[KYBReason]
    decided_at: str


class KYBReview(TypedDict):
    eta: str


class KYBVerification(TypedDict):
    """A KYB verification of a business."""

    id: str
    object: str
    virtual_account_id: str
    entity_ref: str
    status: KYBVerificationStatus
    business: KYBBusiness
    beneficial_owners: List[KYBOwner]
    decision: Optional[KYBDecision]
    review: Optional[KYBReview]
    environment: Environment
    created_at: str
    updated_at: str


# ---------------------------------------------------------------------------
# Webhooks
# ---------------------------------------------------------------------------


class WebhookDeliveryStatus(TypedDict):
    """The health of an endpoint's deliveries."""

    state: WebhookDeliveryState
    last_attempt_at: Optional[str]
    last_success_at: Optional[str]
    last_status_code: Optional[int]
    consecutive_failures: int
    pending: int
    failed: int


class _WebhookEndpointRequired(TypedDict):
    id: str
    object: str
    url: str
    events: List[str]
    description: str
    status: WebhookStatus
    retry_policy: WebhookRetryPolicy
    delivery_status: WebhookDeliveryStatus
    environment: Environment
    created_at: str
    updated_at: str


class WebhookEndpoint(_WebhookEndpointRequired, total=False):
    """A webhook endpoint; ``secret`` (``whsec_…``) only when created or rotated."""

    secret: str


class DeletedWebhookEndpoint(TypedDict):
    id: str
    object: str
    deleted: bool


class WebhookAttempt(TypedDict):
    attempted_at: str
    status_code: Optional[int]
    duration_ms: int
    error: Optional[str]
    response_body: Optional[str]


class WebhookDelivery(TypedDict):
    """The delivery of one event to one endpoint; its id is the ``webhook-id`` header."""

    id: str
    object: str
    webhook_endpoint_id: str
    event_id: str
    event_type: EventType
    replay_id: Optional[str]
    """The replay (``client.webhooks.replay``, ``rpl_…``) that made this delivery;
    ``None`` for a delivery of a new event, a retry of one, or a test event."""
    status: WebhookDeliveryStatusValue
    attempts: List[WebhookAttempt]
    next_attempt_at: Optional[str]
    created_at: str


class _QueuedWebhookDeliveryRequired(TypedDict):
    id: str
    object: str
    status: str


class QueuedWebhookDelivery(_QueuedWebhookDeliveryRequired, total=False):
    """A delivery just queued (by ``test`` or ``retry``)."""

    event_type: EventType


class WebhookReplay(TypedDict):
    """A replay of past events to one endpoint (``client.webhooks.replay``): each
    event of the window became a new delivery (its own ``msg_`` id, ``replay_id``
    naming this replay) carrying the event as first sent, with its original ``id``."""

    id: str
    """``rpl_…``."""
    object: str
    """``"webhook_replay"``."""
    webhook_id: str
    """The endpoint the events are sent to."""
    created_after: str
    """Start of the window, inclusive."""
    created_before: str
    """End of the window, exclusive."""
    types: Optional[List[str]]
    """The types asked for; ``None`` when the request named none (the endpoint's
    subscriptions were used)."""
    replayed: int
    """How many events were queued for delivery again (at most 10,000)."""
    created_at: str


# ---------------------------------------------------------------------------
# Reports and operator resources
# ---------------------------------------------------------------------------


class _RevenueLineRequired(TypedDict):
    source: RevenueSource
    basis_amount: int
    gross_amount: int
    platform_share: int


class RevenueLine(_RevenueLineRequired, total=False):
    rail: Rail
    count: int


RevenueShareReport = TypedDict(
    "RevenueShareReport",
    {
        "object": str,
        "from": str,
        "to": str,
        "currency": str,
        "share_rate": str,
        "interest_rate": str,
        "lines": List[RevenueLine],
        "total_gross": int,
        "total_platform_share": int,
    },
)
RevenueShareReport.__doc__ = "The platform's share of fee and interest revenue over a period."


class ACHFile(TypedDict):
    """An outbound NACHA file of live mode."""

    id: str
    object: str
    name: str
    entry_count: int
    total_credit: int
    created_at: str
    transmitted_at: Optional[str]


class ACHFileCut(TypedDict):
    """The files one cut made (``data``; none when no live ACH payment was pending)."""

    object: str
    data: List[ACHFile]
    has_more: bool
    next_cursor: Optional[str]


# ---------------------------------------------------------------------------
# Request parameters (nested objects of request bodies)
# ---------------------------------------------------------------------------


class FeeScheduleParam(TypedDict, total=False):
    """Fees to change, in cents by rail (the others keep their value)."""

    ach_standard: int
    ach_same_day: int
    rtp: int
    fednow: int


RateLimitParam = RateLimit


class WebhookRetryPolicyParam(TypedDict, total=False):
    max_attempts: int
    initial_delay_seconds: int
    max_delay_seconds: int


class SandboxSettingsParam(TypedDict, total=False):
    auto_settle: bool
    ach_same_day_delay_seconds: int
    ach_standard_delay_seconds: int


DestinationParam = Destination


class OriginatorParam(TypedDict):
    """The sender of a simulated inbound transfer."""

    name: str
    account_number: str
    routing_number: str


KYBAddressParam = KYBAddress


class _KYBBusinessParamRequired(TypedDict):
    legal_name: str
    ein: str
    entity_type: EntityType
    formation_date: str
    formation_state: USState
    address: KYBAddressParam


class KYBBusinessParam(_KYBBusinessParamRequired, total=False):
    """The business submitted for KYB; ``ein`` as ``"12-3456789"`` or 9 digits."""

    dba: Optional[str]
    website: Optional[str]
    naics_code: Optional[str]
    phone: Optional[str]


class _KYBOwnerParamRequired(TypedDict):
    first_name: str
    last_name: str
    date_of_birth: str
    ssn_last4: str
    address: KYBAddressParam


class KYBOwnerParam(_KYBOwnerParamRequired, total=False):
    """A beneficial owner submitted for KYB."""

    ownership_percentage: Union[str, float, None]
    is_control_person: bool
    title: Optional[str]


class _KYBReasonParamRequired(TypedDict):
    code: str


class KYBReasonParam(_KYBReasonParamRequired, total=False):
    message: str
    field: str


class _JournalLineParamRequired(TypedDict):
    direction: Direction
    amount: int


class JournalLineParam(_JournalLineParamRequired, total=False):
    """A line of a lines-form journal entry: exactly one of ``ledger_account_id``
    and ``virtual_account_id``."""

    ledger_account_id: str
    virtual_account_id: str
