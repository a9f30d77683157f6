# frozen_string_literal: true

# This file mirrors the response schemas of the OpenAPI document (http/openapi.json), one class a
# schema, its fields in the document's order. The test suite (test/openapi_models_test.rb) fails
# when a schema gains or loses a field that its model does not, so the client follows the API.

module Treasury
  # The resources the API returns. See {Treasury::Model} for how to read them.
  module Models
    # The fee charged per payment, in cents, by rail: a payment's `fee` is its rail's entry when it is
    # created, charged on top of its amount. Defaults: `ach_standard` 25, `ach_same_day` 100, `rtp` 50,
    # `fednow` 45.
    #
    # Schema: `FeeSchedule`.
    class FeeSchedule < Model
      schema "FeeSchedule"
      # @!attribute [r] ach_standard
      #   Fee in cents per `ach_standard` payment.
      #   @return [Integer]
      field :ach_standard
      # @!attribute [r] ach_same_day
      #   Fee in cents per `ach_same_day` payment.
      #   @return [Integer]
      field :ach_same_day
      # @!attribute [r] rtp
      #   Fee in cents per `rtp` payment.
      #   @return [Integer]
      field :rtp
      # @!attribute [r] fednow
      #   Fee in cents per `fednow` payment.
      #   @return [Integer]
      field :fednow
    end

    # A token bucket: `per_second` requests a second on average, bursts of up to `burst`.
    #
    # Schema: `RateLimit`.
    class RateLimit < Model
      schema "RateLimit"
      # @!attribute [r] per_second
      #   @return [Integer]
      field :per_second
      # @!attribute [r] burst
      #   @return [Integer]
      field :burst
    end

    # A platform: the parent entity whose businesses hold virtual accounts. One platform spans both
    # environments.
    #
    # Schema: `Platform`.
    class Platform < Model
      schema "Platform"
      # @!attribute [r] id
      #   @return [String]
      field :id
      # @!attribute [r] object
      #   Always `platform`.
      #   @return [String]
      field :object
      # @!attribute [r] name
      #   @return [String]
      field :name
      # @!attribute [r] contact_email
      #   @return [String]
      field :contact_email
      # @!attribute [r] status
      #   `pending_approval` after registration; `approved` once the operator approves it (which
      #   provisions the sandbox key). One of: `pending_approval`, `approved`.
      #   @return [String]
      field :status
      # @!attribute [r] live_enabled
      #   Whether the operator has opened the live environment (which provisions the first live key).
      #   Never turned off again.
      #   @return [Boolean]
      field :live_enabled
      # @!attribute [r] revenue_share_rate
      #   The platform's share of the service's fee and interest revenue, a decimal string from 0 to 1
      #   with at least two decimals (e.g. "0.30"). Set by the operator; default "0.00".
      #   @return [String]
      field :revenue_share_rate
      # @!attribute [r] interest_rate
      #   Annual interest rate paid on balances, a decimal string from 0 to 1 with at least two decimals
      #   (e.g. "0.045"). Set by the operator; default "0.00".
      #   @return [String]
      field :interest_rate
      # @!attribute [r] fee_schedule
      #   @return [FeeSchedule]
      field :fee_schedule, FeeSchedule
      # @!attribute [r] rate_limit
      #   The operator's override of the rate limit of all the platform's keys; null when the service's
      #   limits apply (100/s burst 200 live, 25/s burst 50 sandbox, unless `TREASURY_RATE_LIMIT`
      #   overrides them).
      #   @return [RateLimit, nil]
      field :rate_limit, RateLimit
      # @!attribute [r] metadata
      #   @return [Hash{String=>String}]
      field :metadata
      # @!attribute [r] environment
      #   On the operator routes: `live` once live is enabled, else `sandbox` (the highest environment
      #   the platform has). On `GET /platform`: the environment of the caller's key. One of: `sandbox`,
      #   `live`.
      #   @return [String]
      field :environment
      # @!attribute [r] created_at
      #   RFC 3339, UTC, millisecond precision.
      #   @return [String]
      field :created_at
      # @!attribute [r] updated_at
      #   When the platform last changed (approval, live access, configuration).
      #   @return [String]
      field :updated_at
    end

    # A platform API key. Only the SHA-256 of the secret is stored: `secret` appears in the one response
    # that creates the key (approval, enabling live, `POST /platform/api-keys`, roll) and never again.
    #
    # Schema: `APIKey`.
    class APIKey < Model
      schema "APIKey"
      # @!attribute [r] id
      #   @return [String]
      field :id
      # @!attribute [r] object
      #   Always `api_key`.
      #   @return [String]
      field :object
      # @!attribute [r] platform_id
      #   @return [String]
      field :platform_id
      # @!attribute [r] name
      #   The key's label. Keys the operator provisions are named "Default sandbox key" and "Default
      #   live key"; a rolled key's replacement keeps its name.
      #   @return [String]
      field :name
      # @!attribute [r] environment
      #   The environment the key acts in. One of: `sandbox`, `live`.
      #   @return [String]
      field :environment
      # @!attribute [r] prefix
      #   The first 12 characters of the secret, to recognise a key without revealing it.
      #   @return [String]
      field :prefix
      # @!attribute [r] secret
      #   The full key, for `Authorization: Bearer`. Present only in the response that created the key;
      #   store it now, it cannot be shown again.
      #   @return [String]
      field :secret
      # @!attribute [r] created_at
      #   RFC 3339, UTC, millisecond precision.
      #   @return [String]
      field :created_at
      # @!attribute [r] last_used_at
      #   When the key last authenticated a request (recorded at most once a minute); null if never.
      #   @return [String, nil]
      field :last_used_at
      # @!attribute [r] expires_at
      #   Set when the key is rolled: the key stops working at this instant. Null if it does not expire.
      #   @return [String, nil]
      field :expires_at
      # @!attribute [r] revoked_at
      #   When the key was revoked; it stopped working at once. Null if not revoked.
      #   @return [String, nil]
      field :revoked_at
    end

    # A platform together with the API key its provisioning just minted: `sandbox_api_key` in the answer
    # to approval, `live_api_key` in the answer to enabling live, each with its `secret` shown this once.
    #
    # Schema: `PlatformWithKeys`.
    class PlatformWithKeys < Platform
      schema "PlatformWithKeys"
      # @!attribute [r] sandbox_api_key
      #   The sandbox key approval provisioned, with its `secret`.
      #   @return [APIKey]
      field :sandbox_api_key, APIKey
      # @!attribute [r] live_api_key
      #   The live key enabling live provisioned, with its `secret`.
      #   @return [APIKey]
      field :live_api_key, APIKey
    end

    # How webhook deliveries are retried: exponential backoff from `initial_delay_seconds`, capped at
    # `max_delay_seconds`, until `max_attempts`.
    #
    # Schema: `WebhookRetryPolicy`.
    class WebhookRetryPolicy < Model
      schema "WebhookRetryPolicy"
      # @!attribute [r] max_attempts
      #   @return [Integer]
      field :max_attempts
      # @!attribute [r] initial_delay_seconds
      #   @return [Integer]
      field :initial_delay_seconds
      # @!attribute [r] max_delay_seconds
      #   At least `initial_delay_seconds`, at most 604800 (7 days).
      #   @return [Integer]
      field :max_delay_seconds
    end

    # How the simulated rails behave in sandbox.
    #
    # Schema: `SandboxSettings`.
    class SandboxSettings < Model
      schema "SandboxSettings"
      # @!attribute [r] auto_settle
      #   Whether sandbox ACH payments settle by themselves at their `expected_settlement_at` (creation
      #   + the delay below); when false they are still submitted after 1 s, then wait for `POST
      #   /simulations/payments/{id}/complete` or `/fail`. Read right after a payment is created. RTP
      #   and FedNow payments and inbound transfers settle by themselves either way.
      #   @return [Boolean]
      field :auto_settle
      # @!attribute [r] ach_same_day_delay_seconds
      #   How long after creation a sandbox `ach_same_day` payment or inbound transfer settles.
      #   @return [Integer]
      field :ach_same_day_delay_seconds
      # @!attribute [r] ach_standard_delay_seconds
      #   How long after creation a sandbox `ach_standard` payment or inbound transfer settles.
      #   @return [Integer]
      field :ach_standard_delay_seconds
    end

    # A platform's settings in one environment: sandbox and live have separate settings, each read and
    # changed with a key of that environment. Until first changed they are the defaults (and `updated_at`
    # is null).
    #
    # Schema: `PlatformSettings`.
    class PlatformSettings < Model
      schema "PlatformSettings"
      # @!attribute [r] object
      #   Always `platform_settings`.
      #   @return [String]
      field :object
      # @!attribute [r] platform_id
      #   @return [String]
      field :platform_id
      # @!attribute [r] environment
      #   The environment these settings belong to: the caller's. One of: `sandbox`, `live`.
      #   @return [String]
      field :environment
      # @!attribute [r] webhook_retry_policy
      #   The retry policy new webhook endpoints get unless they set their own.
      #   @return [WebhookRetryPolicy]
      field :webhook_retry_policy, WebhookRetryPolicy
      # @!attribute [r] payment_approval_threshold
      #   Amount in cents from which a payment needs approval (created `requires_approval`, approved by a
      #   second key: see `POST /payments`); null for none.
      #   @return [Integer, nil]
      field :payment_approval_threshold
      # @!attribute [r] daily_payment_limit
      #   Most a virtual account may send a day, in cents; null for no limit. The day is the UTC day;
      #   the payments created in it count by their `amount` (fees not counted), failed and canceled
      #   ones left out. A payment that would go over it is refused with 422 `limit_exceeded`.
      #   @return [Integer, nil]
      field :daily_payment_limit
      # @!attribute [r] require_verified_counterparty
      #   Default false. When true, a payment goes only to a `verified` counterparty: a payment to a
      #   counterparty not verified (`unverified`, `pending`, `failed`), and a payment to a raw
      #   `destination`, are refused with 422 `counterparty_not_verified`. Checked when the payment is
      #   created (a scheduled payment is not checked again at its release).
      #   @return [Boolean]
      field :require_verified_counterparty
      # @!attribute [r] sandbox
      #   The simulated rails' settings: an object in sandbox, always null in live.
      #   @return [SandboxSettings, nil]
      field :sandbox, SandboxSettings
      # @!attribute [r] updated_at
      #   When these settings last changed; null while they are the defaults.
      #   @return [String, nil]
      field :updated_at
    end

    # A virtual account's balance, in cents. `available = posted − pending_outbound`: inbound funds count
    # once settled, outbound holds count at once.
    #
    # Schema: `AccountBalance`.
    class AccountBalance < Model
      schema "AccountBalance"
      # @!attribute [r] posted
      #   Settled funds: the sum of posted credits minus posted debits.
      #   @return [Integer]
      field :posted
      # @!attribute [r] pending_inbound
      #   Credits on their way (e.g. an ACH inbound transfer before its settlement); not spendable.
      #   @return [Integer]
      field :pending_inbound
      # @!attribute [r] pending_outbound
      #   Debits held but not yet posted.
      #   @return [Integer]
      field :pending_outbound
      # @!attribute [r] available
      #   What the account can send now: `posted − pending_outbound`.
      #   @return [Integer]
      field :available
    end

    # A virtual account of a business (entity) of the platform, with its current balance.
    #
    # Schema: `VirtualAccount`.
    class VirtualAccount < Model
      schema "VirtualAccount"
      # @!attribute [r] id
      #   @return [String]
      field :id
      # @!attribute [r] object
      #   Always `virtual_account`.
      #   @return [String]
      field :object
      # @!attribute [r] platform_id
      #   @return [String]
      field :platform_id
      # @!attribute [r] entity_ref
      #   The platform's own reference for the business; one entity may hold several accounts.
      #   @return [String]
      field :entity_ref
      # @!attribute [r] type
      #   One of: `checking`, `savings`.
      #   @return [String]
      field :type
      # @!attribute [r] status
      #   `active` → `frozen` ⇄ `active`; `active` → `closed` (only at zero balance; final). Frozen and
      #   closed accounts cannot send payments; a closed account also rejects inbound funds and manual
      #   journal entries. One of: `active`, `frozen`, `closed`.
      #   @return [String]
      field :status
      # @!attribute [r] account_number
      #   12 digits, not starting with 0; unique per environment and never reused, closed accounts
      #   included.
      #   @return [String]
      field :account_number
      # @!attribute [r] routing_number
      #   The service's bank (configuration `TREASURY_ROUTING_NUMBER`, default `110000000`); passes the
      #   ABA checksum.
      #   @return [String]
      field :routing_number
      # @!attribute [r] currency
      #   Always `USD`.
      #   @return [String]
      field :currency
      # @!attribute [r] balance
      #   @return [AccountBalance]
      field :balance, AccountBalance
      # @!attribute [r] kyb_status
      #   The KYB status of the business, shared by every account of the same (platform, environment,
      #   `entity_ref`), including accounts opened later: the status of the business's latest
      #   verification (`POST /kyb`), or `not_started` before the first. One of: `not_started`,
      #   `pending`, `pending_review`, `approved`, `rejected`.
      #   @return [String]
      field :kyb_status
      # @!attribute [r] metadata
      #   @return [Hash{String=>String}]
      field :metadata
      # @!attribute [r] environment
      #   The environment of the key that opened it; only keys of that environment see it. One of:
      #   `sandbox`, `live`.
      #   @return [String]
      field :environment
      # @!attribute [r] created_at
      #   RFC 3339, UTC, millisecond precision.
      #   @return [String]
      field :created_at
    end

    # A virtual account's balance at an instant (`as_of`), in cents.
    #
    # Schema: `Balance`.
    class Balance < Model
      schema "Balance"
      # @!attribute [r] object
      #   Always `balance`.
      #   @return [String]
      field :object
      # @!attribute [r] virtual_account_id
      #   @return [String]
      field :virtual_account_id
      # @!attribute [r] currency
      #   Always `USD`.
      #   @return [String]
      field :currency
      # @!attribute [r] as_of
      #   The instant of the balance: the `as_of` asked for, else the time of the request.
      #   @return [String]
      field :as_of
      # @!attribute [r] posted
      #   Entries posted at or before `as_of`, credits minus debits.
      #   @return [Integer]
      field :posted
      # @!attribute [r] pending_inbound
      #   Credits recorded at or before `as_of` and neither posted nor archived by then.
      #   @return [Integer]
      field :pending_inbound
      # @!attribute [r] pending_outbound
      #   Debits recorded at or before `as_of` and neither posted nor archived by then.
      #   @return [Integer]
      field :pending_outbound
      # @!attribute [r] available
      #   `posted − pending_outbound`.
      #   @return [Integer]
      field :available
    end

    # What a transaction records: an inbound transfer (`itx_`), a payment (`pay_`: its amount, its fee
    # and, if it was returned, their reversal), a book transfer (`bt_`) or a manual journal entry
    # (`je_`).
    #
    # Schema: `Source`.
    class Source < Model
      schema "Source"
      # @!attribute [r] type
      #   One of: `inbound_transfer`, `payment`, `book_transfer`, `journal_entry`.
      #   @return [String]
      field :type
      # @!attribute [r] id
      #   @return [String]
      field :id
    end

    # One line of a virtual account's history: the account's side of one ledger entry (its id is the
    # entry's with the `txn_` prefix).
    #
    # Schema: `Transaction`.
    class Transaction < Model
      schema "Transaction"
      # @!attribute [r] id
      #   @return [String]
      field :id
      # @!attribute [r] object
      #   Always `transaction`.
      #   @return [String]
      field :object
      # @!attribute [r] virtual_account_id
      #   @return [String]
      field :virtual_account_id
      # @!attribute [r] type
      #   One of: `inbound_transfer`, `payment`, `payment_fee`, `payment_reversal`, `book_transfer`,
      #   `adjustment`, `fee`, `correction`.
      #   @return [String]
      field :type
      # @!attribute [r] amount
      #   Cents, signed: negative leaves the account (a debit), positive enters it (a credit). Never 0.
      #   @return [Integer]
      field :amount
      # @!attribute [r] currency
      #   Always `USD`.
      #   @return [String]
      field :currency
      # @!attribute [r] status
      #   `pending` until it settles, then `posted`; `void` if it was released without posting. One of:
      #   `pending`, `posted`, `void`.
      #   @return [String]
      field :status
      # @!attribute [r] description
      #   @return [String]
      field :description
      # @!attribute [r] source
      #   @return [Source]
      field :source, Source
      # @!attribute [r] environment
      #   The environment of the key that created it. One of: `sandbox`, `live`.
      #   @return [String]
      field :environment
      # @!attribute [r] created_at
      #   When it was recorded.
      #   @return [String]
      field :created_at
      # @!attribute [r] posted_at
      #   When it posted; null while pending or when void.
      #   @return [String, nil]
      field :posted_at
    end

    # A virtual account's statement of one calendar month (UTC): its posted transactions by the time they
    # posted, and the posted balance before and after. Pending and void transactions are left out.
    #
    # Schema: `Statement`.
    class Statement < Model
      schema "Statement"
      # @!attribute [r] object
      #   Always `statement`.
      #   @return [String]
      field :object
      # @!attribute [r] virtual_account_id
      #   @return [String]
      field :virtual_account_id
      # @!attribute [r] month
      #   @return [String]
      field :month
      # @!attribute [r] currency
      #   Always `USD`.
      #   @return [String]
      field :currency
      # @!attribute [r] period_start
      #   The first instant of the month, UTC (inclusive).
      #   @return [String]
      field :period_start
      # @!attribute [r] period_end
      #   The first instant of the next month, UTC (exclusive).
      #   @return [String]
      field :period_end
      # @!attribute [r] opening_balance
      #   Posted balance at `period_start`.
      #   @return [Integer]
      field :opening_balance
      # @!attribute [r] closing_balance
      #   `opening_balance + total_in − total_out`: the posted balance at `period_end` (for the current
      #   month: so far).
      #   @return [Integer]
      field :closing_balance
      # @!attribute [r] total_in
      #   Sum of the month's positive transactions.
      #   @return [Integer]
      field :total_in
      # @!attribute [r] total_out
      #   Sum of the month's negative transactions, as a positive number.
      #   @return [Integer]
      field :total_out
      # @!attribute [r] transactions
      #   Every transaction posted in the month, in posting order; `[]` when none.
      #   @return [Array<Transaction>]
      field :transactions, [Transaction]
    end

    # A ledger account's balances in cents, signed in its normal direction (a debit to a credit-normal
    # account counts negative).
    #
    # Schema: `LedgerAccountBalances`.
    class LedgerAccountBalances < Model
      schema "LedgerAccountBalances"
      # @!attribute [r] posted
      #   Sum of its posted entries.
      #   @return [Integer]
      field :posted
      # @!attribute [r] pending
      #   Sum of its pending entries.
      #   @return [Integer]
      field :pending
      # @!attribute [r] available
      #   `posted` minus its pending entries against the normal direction (outbound holds).
      #   @return [Integer]
      field :available
    end

    # An account of the platform's sub-ledger in one environment: one per virtual account, and the
    # platform's system accounts.
    #
    # Schema: `LedgerAccount`.
    class LedgerAccount < Model
      schema "LedgerAccount"
      # @!attribute [r] id
      #   @return [String]
      field :id
      # @!attribute [r] object
      #   Always `ledger_account`.
      #   @return [String]
      field :object
      # @!attribute [r] name
      #   `virtual_account` for a virtual account's ledger account (see `virtual_account_id`); else the
      #   system account: `platform_operating` (the offset of adjustments and corrections),
      #   `platform_fees` (the offset of fees), `service_fee_revenue` (payment fees), and
      #   `rail_clearing_<rail>` (money in transit on a rail). `operator_funding` (debit, an asset) is
      #   the operator's side of the platform's fundings (`POST /operator/platforms/{id}/fund`); it
      #   appears with the first funding. One of: `virtual_account`, `platform_operating`,
      #   `platform_fees`, `service_fee_revenue`, `rail_clearing_ach_standard`,
      #   `rail_clearing_ach_same_day`, `rail_clearing_rtp`, `rail_clearing_fednow`, `operator_funding`.
      #   @return [String]
      field :name
      # @!attribute [r] virtual_account_id
      #   The virtual account this ledger account belongs to; null for system accounts.
      #   @return [String, nil]
      field :virtual_account_id
      # @!attribute [r] normal_balance
      #   `debit` for the rail clearing accounts (assets); `credit` for the others. One of: `debit`,
      #   `credit`.
      #   @return [String]
      field :normal_balance
      # @!attribute [r] currency
      #   Always `USD`.
      #   @return [String]
      field :currency
      # @!attribute [r] balances
      #   @return [LedgerAccountBalances]
      field :balances, LedgerAccountBalances
      # @!attribute [r] environment
      #   The environment of the ledger it belongs to. One of: `sandbox`, `live`.
      #   @return [String]
      field :environment
      # @!attribute [r] created_at
      #   RFC 3339, UTC, millisecond precision.
      #   @return [String]
      field :created_at
    end

    # One debit or credit of one ledger account; a journal entry is a balanced set of them.
    #
    # Schema: `LedgerEntry`.
    class LedgerEntry < Model
      schema "LedgerEntry"
      # @!attribute [r] id
      #   @return [String]
      field :id
      # @!attribute [r] object
      #   Always `ledger_entry`.
      #   @return [String]
      field :object
      # @!attribute [r] journal_entry_id
      #   @return [String]
      field :journal_entry_id
      # @!attribute [r] ledger_account_id
      #   @return [String]
      field :ledger_account_id
      # @!attribute [r] virtual_account_id
      #   The virtual account whose ledger account this is; null for system accounts.
      #   @return [String, nil]
      field :virtual_account_id
      # @!attribute [r] direction
      #   One of: `debit`, `credit`.
      #   @return [String]
      field :direction
      # @!attribute [r] amount
      #   Cents, always positive; `direction` gives the sign.
      #   @return [Integer]
      field :amount
      # @!attribute [r] currency
      #   Always `USD`.
      #   @return [String]
      field :currency
      # @!attribute [r] type
      #   One of: `inbound_transfer`, `payment`, `payment_fee`, `payment_reversal`, `book_transfer`,
      #   `adjustment`, `fee`, `correction`, `funding`.
      #   @return [String]
      field :type
      # @!attribute [r] status
      #   `pending` until its journal entry posts; `archived` if it is released without posting. Posted
      #   entries never change: corrections reverse them. One of: `pending`, `posted`, `archived`.
      #   @return [String]
      field :status
      # @!attribute [r] description
      #   @return [String]
      field :description
      # @!attribute [r] environment
      #   The environment of the key that created it. One of: `sandbox`, `live`.
      #   @return [String]
      field :environment
      # @!attribute [r] effective_at
      #   The accounting date the poster gave (`effective_at`), else the recording time. Balances,
      #   `as_of` and statements follow the recording and posting times, not this.
      #   @return [String]
      field :effective_at
      # @!attribute [r] created_at
      #   When it was recorded.
      #   @return [String]
      field :created_at
      # @!attribute [r] source
      #   What made the entry's journal entry: its `source`, `{type: "payment", id: "pay_..."}`,
      #   `{type: "inbound_transfer", id: "itx_..."}`, `{type: "book_transfer", id: "bt_..."}`, or
      #   `{type: "journal_entry", id: journal_entry_id}` for a manual entry or a funding. The same in
      #   `GET /ledger/entries`, a journal entry's `entries` and `ledger.entry.created` events.
      #   @return [Source]
      field :source, Source
    end

    # A balanced journal entry (Σ debits = Σ credits) with its ledger entries.
    #
    # Schema: `JournalEntry`.
    class JournalEntry < Model
      schema "JournalEntry"
      # @!attribute [r] id
      #   @return [String]
      field :id
      # @!attribute [r] object
      #   Always `journal_entry`.
      #   @return [String]
      field :object
      # @!attribute [r] type
      #   Manual entries are `adjustment`, `fee` or `correction`. One of: `inbound_transfer`, `payment`,
      #   `payment_fee`, `payment_reversal`, `book_transfer`, `adjustment`, `fee`, `correction`,
      #   `funding`.
      #   @return [String]
      field :type
      # @!attribute [r] description
      #   @return [String]
      field :description
      # @!attribute [r] status
      #   Manual entries post at once. One of: `pending`, `posted`, `archived`.
      #   @return [String]
      field :status
      # @!attribute [r] reverses
      #   The journal entry this one reverses.
      #   @return [String, nil]
      field :reverses
      # @!attribute [r] reversed_by
      #   The journal entry that reversed this one.
      #   @return [String, nil]
      field :reversed_by
      # @!attribute [r] source
      #   What made the entry: `{type: payment, id}`, `{type: inbound_transfer, id}`,
      #   `{type: book_transfer, id}`, or `{type: journal_entry, id}` (its own id) for a manual entry
      #   or a funding.
      #   @return [Source]
      field :source, Source
      # @!attribute [r] entries
      #   Its ledger entries, in the order of the request's lines (shorthand: the virtual account's
      #   entry, then the offset).
      #   @return [Array<LedgerEntry>]
      field :entries, [LedgerEntry]
      # @!attribute [r] metadata
      #   @return [Hash{String=>String}]
      field :metadata
      # @!attribute [r] environment
      #   The environment of the key that created it. One of: `sandbox`, `live`.
      #   @return [String]
      field :environment
      # @!attribute [r] effective_at
      #   The request's `effective_at`, else the recording time.
      #   @return [String]
      field :effective_at
      # @!attribute [r] created_at
      #   RFC 3339, UTC, millisecond precision.
      #   @return [String]
      field :created_at
    end

    # Who sent an inbound transfer: the simulation's `originator`, or, for a live ACH credit, the
    # originating company of its batch and its bank.
    #
    # Schema: `InboundOriginator`.
    class InboundOriginator < Model
      schema "InboundOriginator"
      # @!attribute [r] name
      #   For a live ACH credit, its batch's company name (else its company identification).
      #   @return [String]
      field :name
      # @!attribute [r] account_number
      #   Empty for a live ACH credit: an ACH entry does not carry the originator's account number.
      #   @return [String]
      field :account_number
      # @!attribute [r] routing_number
      #   9 digits with a valid ABA checksum (weights 3, 7, 1).
      #   @return [String]
      field :routing_number
    end

    # Funds arriving in a virtual account. In the sandbox, simulated: RTP and FedNow credit at once; ACH
    # stays `pending` (a pending inbound credit, not available) until it settles. In live mode, an ACH
    # credit the bank forwards to the account's number (API.md §10) is `completed` when it arrives: the
    # bank forwards it as it settles.
    #
    # Schema: `InboundTransfer`.
    class InboundTransfer < Model
      schema "InboundTransfer"
      # @!attribute [r] id
      #   @return [String]
      field :id
      # @!attribute [r] object
      #   Always `inbound_transfer`.
      #   @return [String]
      field :object
      # @!attribute [r] virtual_account_id
      #   @return [String]
      field :virtual_account_id
      # @!attribute [r] amount
      #   @return [Integer]
      field :amount
      # @!attribute [r] currency
      #   Always `USD`.
      #   @return [String]
      field :currency
      # @!attribute [r] rail
      #   One of: `ach_standard`, `ach_same_day`, `rtp`, `fednow`.
      #   @return [String]
      field :rail
      # @!attribute [r] originator
      #   @return [InboundOriginator]
      field :originator, InboundOriginator
      # @!attribute [r] description
      #   The request's, else `Inbound <rail> from <originator name>`.
      #   @return [String]
      field :description
      # @!attribute [r] status
      #   One of: `pending`, `completed`.
      #   @return [String]
      field :status
      # @!attribute [r] journal_entry_id
      #   The journal entry that debits the rail's clearing account and credits the virtual account;
      #   pending until the transfer completes.
      #   @return [String]
      field :journal_entry_id
      # @!attribute [r] expected_settlement_at
      #   When it settles: at once for RTP and FedNow, after the platform's sandbox delay for ACH.
      #   @return [String]
      field :expected_settlement_at
      # @!attribute [r] completed_at
      #   When it settled; null while pending.
      #   @return [String, nil]
      field :completed_at
      # @!attribute [r] environment
      #   The environment of the key that created it. One of: `sandbox`, `live`.
      #   @return [String]
      field :environment
      # @!attribute [r] created_at
      #   RFC 3339, UTC, millisecond precision.
      #   @return [String]
      field :created_at
    end

    # Where the money goes: a US bank account.
    #
    # Schema: `Destination`.
    class Destination < Model
      schema "Destination"
      # @!attribute [r] account_number
      #   4 to 17 digits. In the sandbox some numbers fail on purpose: see `POST /payments`.
      #   @return [String]
      field :account_number
      # @!attribute [r] routing_number
      #   9 digits with a valid ABA checksum (weights 3, 7, 1).
      #   @return [String]
      field :routing_number
      # @!attribute [r] name
      #   The recipient's name: 1 to 80 characters, not only white space. Screened: a name on the
      #   screening list is 422 `compliance_rejected` (in the sandbox, any name containing `OFAC TEST`,
      #   in any case).
      #   @return [String]
      field :name
    end

    # What to do about a failed payment.
    #
    # Schema: `RetryRecommendation`.
    class RetryRecommendation < Model
      schema "RetryRecommendation"
      # @!attribute [r] action
      #   `retry_later`: the same payment may succeed later (after `retry_after` seconds);
      #   `retry_other_rail`: send it again over `suggested_rail`; `update_destination`: the account
      #   details are wrong, get new ones; `contact_recipient`: ask the recipient (or their bank) first;
      #   `do_not_retry`: the recipient refused it, or it would fail again. One of: `retry_later`,
      #   `retry_other_rail`, `update_destination`, `contact_recipient`, `do_not_retry`.
      #   @return [String]
      field :action
      # @!attribute [r] suggested_rail
      #   Only with `retry_other_rail`: the rail to try instead. One of: `ach_standard`, `ach_same_day`,
      #   `rtp`, `fednow`.
      #   @return [String]
      field :suggested_rail
      # @!attribute [r] retry_after
      #   Only with `retry_later`: seconds to wait before retrying (86400 for the ACH codes, 300 for the
      #   RTP and FedNow codes).
      #   @return [Integer]
      field :retry_after
    end

    # Why a payment failed: the rail's own code (`network_code`: a NACHA return code on ACH, an ISO 20022
    # reason code, or `9912`/`E997`, on RTP and FedNow), what it means (`code`, `reason`) and what to do
    # (`retry_recommendation`). `unknown` (`reason` `The network returned code <code>`, `action`
    # `contact_recipient`) is kept for a code outside these tables that a rail may send; the simulation
    # refuses such codes.  | `network_code` | Rails | `code` | `retry_recommendation` | |---|---|---|---|
    # | `R01` | ACH | `insufficient_funds` | `retry_later`, `retry_after` 86400 | | `R02` | ACH |
    # `account_closed` | `update_destination` | | `R03` | ACH | `no_account` | `update_destination` | |
    # `R04` | ACH | `invalid_account_number` | `update_destination` | | `R05` | ACH | `unauthorized_debit`
    # | `do_not_retry` | | `R06` | ACH | `returned_by_odfi` | `contact_recipient` | | `R07` | ACH |
    # `authorization_revoked` | `do_not_retry` | | `R08` | ACH | `payment_stopped` | `contact_recipient` |
    # | `R09` | ACH | `uncollected_funds` | `retry_later`, `retry_after` 86400 | | `R10` | ACH |
    # `unauthorized` | `do_not_retry` | | `R11` | ACH | `entry_not_per_authorization` |
    # `contact_recipient` | | `R12` | ACH | `account_sold` | `update_destination` | | `R13` | ACH |
    # `invalid_routing_number` | `update_destination` | | `R14` | ACH | `recipient_deceased` |
    # `do_not_retry` | | `R15` | ACH | `recipient_deceased` | `do_not_retry` | | `R16` | ACH |
    # `account_frozen` | `contact_recipient` | | `R17` | ACH | `file_record_edit_criteria` |
    # `contact_recipient` | | `R20` | ACH | `non_transaction_account` | `update_destination` | | `R23` |
    # ACH | `credit_refused` | `do_not_retry` | | `R24` | ACH | `duplicate_entry` | `do_not_retry` | |
    # `R29` | ACH | `corporate_not_authorized` | `do_not_retry` | | `AC02` | RTP, FedNow |
    # `invalid_account_number` | `update_destination` | | `AC03` | RTP, FedNow | `no_account` |
    # `update_destination` | | `AC04` | RTP, FedNow | `account_closed` | `update_destination` | | `AC06` |
    # RTP, FedNow | `account_frozen` | `contact_recipient` | | `AC07` | RTP, FedNow | `account_closed` |
    # `update_destination` | | `AG01` | RTP, FedNow | `transaction_forbidden` | `retry_other_rail`,
    # `suggested_rail` `ach_standard` | | `AG03` | RTP, FedNow | `transaction_not_supported` |
    # `retry_other_rail`, `suggested_rail` `ach_standard` | | `AM02` | RTP, FedNow |
    # `amount_exceeds_limit` | `retry_other_rail`, `suggested_rail` `ach_standard` | | `AM04` | RTP,
    # FedNow | `insufficient_funds` | `retry_later`, `retry_after` 300 | | `BE04` | RTP, FedNow |
    # `invalid_recipient` | `update_destination` | | `CUST` | RTP, FedNow | `credit_refused` |
    # `do_not_retry` | | `DUPL` | RTP, FedNow | `duplicate_entry` | `do_not_retry` | | `FF01` | RTP,
    # FedNow | `invalid_format` | `contact_recipient` | | `MS03` | RTP, FedNow | `not_specified` |
    # `retry_later`, `retry_after` 300 | | `NARR` | RTP, FedNow | `not_specified` | `contact_recipient` |
    # | `RC01` | RTP, FedNow | `invalid_routing_number` | `update_destination` | | `9912` | RTP, FedNow |
    # `network_unavailable` | `retry_other_rail`, `suggested_rail` `ach_same_day` | | `E997` | RTP, FedNow
    # | `network_unavailable` | `retry_other_rail`, `suggested_rail` `ach_same_day` |  A scheduled
    # payment that a rule refuses on its date fails with that rule's code and `network_code` null:
    # `insufficient_funds` and `limit_exceeded` (`retry_later`, no `retry_after`), `account_not_active`,
    # `kyb_not_approved` and `compliance_rejected` (`do_not_retry`).
    #
    # Schema: `PaymentFailure`.
    class PaymentFailure < Model
      schema "PaymentFailure"
      # @!attribute [r] code
      #   Stable, rail-independent meaning of the failure. One of: `insufficient_funds`,
      #   `account_closed`, `no_account`, `invalid_account_number`, `unauthorized_debit`,
      #   `returned_by_odfi`, `authorization_revoked`, `payment_stopped`, `uncollected_funds`,
      #   `unauthorized`, `entry_not_per_authorization`, `account_sold`, `invalid_routing_number`,
      #   `recipient_deceased`, `account_frozen`, `file_record_edit_criteria`,
      #   `non_transaction_account`, `credit_refused`, `duplicate_entry`, `corporate_not_authorized`,
      #   `transaction_forbidden`, `transaction_not_supported`, `amount_exceeds_limit`,
      #   `invalid_recipient`, `invalid_format`, `not_specified`, `network_unavailable`, `unknown`,
      #   `account_not_active`, `kyb_not_approved`, `compliance_rejected`, `limit_exceeded`.
      #   @return [String]
      field :code
      # @!attribute [r] network_code
      #   The rail's code, as the rail sent it. Null when no rail saw the payment: a scheduled payment
      #   the rules refused on its date (then `code` is the rule's: `insufficient_funds`,
      #   `limit_exceeded`, `account_not_active`, `kyb_not_approved` or `compliance_rejected`).
      #   @return [String, nil]
      field :network_code
      # @!attribute [r] reason
      #   Human-readable explanation; not stable, do not parse.
      #   @return [String]
      field :reason
      # @!attribute [r] retry_recommendation
      #   @return [RetryRecommendation]
      field :retry_recommendation, RetryRecommendation
    end

    # Live ACH only: the latest notification of change the receiving bank sent (NACHA addenda 98). The
    # payment went through; the bank says what to use for the next one. Absent unless one came
    # (`payment.notification_of_change` is emitted when it does).
    #
    # Schema: `Payment.notification_of_change`.
    class NotificationOfChange < Model
      schema "Payment.notification_of_change"
      # @!attribute [r] code
      #   The NACHA change code: C01 account number, C02 routing number, C03 both, C05 transaction code,
      #   C06 account number and transaction code, C07 all three.
      #   @return [String]
      field :code
      # @!attribute [r] corrected_data
      #   The corrected data, as the bank wrote it.
      #   @return [String]
      field :corrected_data
    end

    # Where a payment that needed an approval stands (present only on payments created at or above the
    # platform's `payment_approval_threshold`).
    #
    # Schema: `PaymentApproval`.
    class PaymentApproval < Model
      schema "PaymentApproval"
      # @!attribute [r] created_by
      #   The API key (`key_...`) that created the payment: the one key that cannot approve it.
      #   @return [String]
      field :created_by
      # @!attribute [r] expires_at
      #   Seven days after creation: unapproved by then, the payment is `canceled` with
      #   `cancellation_reason` `approval_expired`.
      #   @return [String]
      field :expires_at
      # @!attribute [r] approved_at
      #   When it was approved; null until then.
      #   @return [String, nil]
      field :approved_at
      # @!attribute [r] approved_by
      #   The key that approved it; null until then.
      #   @return [String, nil]
      field :approved_by
      # @!attribute [r] denied_at
      #   When it was denied; null unless denied.
      #   @return [String, nil]
      field :denied_at
      # @!attribute [r] denied_by
      #   The key that denied it; null unless denied.
      #   @return [String, nil]
      field :denied_by
      # @!attribute [r] denial_reason
      #   The reason given with the denial, if any (at most 500 characters); null without one, or with
      #   an empty one.
      #   @return [String, nil]
      field :denial_reason
    end

    # A payment out of a virtual account over a rail. Current the moment a command returns (not an
    # asynchronous projection). `approval` is present only on payments that needed one (created at or
    # above the platform's `payment_approval_threshold`); `cancellation_reason` only on payments
    # canceled by expiry; `scheduled_for` only on payments created with one.
    #
    # Schema: `Payment`.
    class Payment < Model
      schema "Payment"
      # @!attribute [r] id
      #   @return [String]
      field :id
      # @!attribute [r] object
      #   Always `payment`.
      #   @return [String]
      field :object
      # @!attribute [r] virtual_account_id
      #   The account the money leaves.
      #   @return [String]
      field :virtual_account_id
      # @!attribute [r] amount
      #   Cents sent to the destination, within the rail's limit.
      #   @return [Integer]
      field :amount
      # @!attribute [r] currency
      #   Always `USD`.
      #   @return [String]
      field :currency
      # @!attribute [r] rail
      #   One of: `ach_standard`, `ach_same_day`, `rtp`, `fednow`.
      #   @return [String]
      field :rail
      # @!attribute [r] destination
      #   @return [Destination]
      field :destination, Destination
      # @!attribute [r] status
      #   A payment created with `scheduled_for` starts `scheduled` (nothing held, no journal entry) →
      #   released on its date: then as any new payment (`pending`, or `requires_approval` at the
      #   threshold), or `failed` if a rule refuses it then; it can be `canceled` while `scheduled`.
      #   `pending` (accepted; amount + fee held) → `submitted` (handed to the rail) → `completed`
      #   (settled: amount and fee posted) or `failed` (hold released; or, if it had completed,
      #   reversed); `pending` → `canceled` (`POST /payments/{id}/cancel`; hold released). A payment at
      #   or above the platform's `payment_approval_threshold` starts `requires_approval` (held, not sent
      #   to any rail) → `pending` when another key approves it (`POST /payments/{id}/approve`), `denied`
      #   (`POST /payments/{id}/deny`; final, hold released), or `canceled` (by the platform, or
      #   unapproved after 7 days). An ACH payment `completed` may still become `failed` (a return), RTP
      #   and FedNow ones are final once `completed`; `failed`, `canceled` and `denied` are final. One
      #   of: `scheduled`, `requires_approval`, `pending`, `submitted`, `completed`, `failed`,
      #   `canceled`, `denied`.
      #   @return [String]
      field :status
      # @!attribute [r] fee
      #   Cents charged on top of `amount`: the platform's `fee_schedule` for the rail when the payment
      #   was created. Held with the amount, posted with it, released or reversed with it.
      #   @return [Integer]
      field :fee
      # @!attribute [r] idempotency_key
      #   The key the payment was created with (body field or header).
      #   @return [String]
      field :idempotency_key
      # @!attribute [r] description
      #   The request's description; "" when none was given (the ledger entries then say `Payment to
      #   <destination name>`).
      #   @return [String]
      field :description
      # @!attribute [r] metadata
      #   @return [Hash{String=>String}]
      field :metadata
      # @!attribute [r] journal_entry_id
      #   The journal entry that holds amount + fee and posts them at completion
      #   (`client.ledger.journal_entries.retrieve(id)`; its `source` is this payment), from the
      #   payment's creation on. A reversal after a return is a journal entry of its own, whose
      #   `reverses` names this one. Null while the payment is `scheduled`, and on a scheduled payment
      #   the rules refused on its date (it never held anything).
      #   @return [String, nil]
      field :journal_entry_id
      # @!attribute [r] failure
      #   Why it failed; null unless `status` is `failed`.
      #   @return [PaymentFailure, nil]
      field :failure, PaymentFailure
      # @!attribute [r] trace_number
      #   Live ACH only, present once the payment is in a NACHA file (`submitted`): its trace number,
      #   the first 8 digits of the sponsor bank's routing number and a 7-digit sequence unique for the
      #   file's day. Returns and notifications of change name the payment by it. Absent on every other
      #   payment.
      #   @return [String]
      field :trace_number
      # @!attribute [r] ach_file_id
      #   Live ACH only, with `trace_number`: the outbound file the payment went out in. Absent on every
      #   other payment.
      #   @return [String]
      field :ach_file_id
      # @!attribute [r] notification_of_change
      #   Live ACH only: the latest notification of change the receiving bank sent (NACHA addenda 98).
      #   The payment went through; the bank says what to use for the next one. Absent unless one came
      #   (`payment.notification_of_change` is emitted when it does).
      #   @return [NotificationOfChange, nil]
      field :notification_of_change, NotificationOfChange
      # @!attribute [r] approval
      #   Present only on a payment created at or above the platform's `payment_approval_threshold`: who
      #   created it, until when it may be approved (`expires_at`), and the decision. Absent (not null)
      #   on the others.
      #   @return [PaymentApproval, nil]
      field :approval, PaymentApproval
      # @!attribute [r] cancellation_reason
      #   Present on a `canceled` payment that the platform did not cancel: `approval_expired`
      #   (unapproved for 7 days). Absent otherwise. One of: `approval_expired`.
      #   @return [String, nil]
      field :cancellation_reason
      # @!attribute [r] scheduled_for
      #   Present on a payment created with `scheduled_for` (absent on others): the date (Eastern,
      #   `YYYY-MM-DD`) it is released on, at 06:00 ET. It stays set once released.
      #   @return [String, nil]
      field :scheduled_for
      # @!attribute [r] expected_settlement_at
      #   When it is expected to settle, set at creation; a live ACH payment's becomes its NACHA file
      #   entry's settlement when its file is cut (it completes once that has passed). Live: the real
      #   calendars (RTP and FedNow at once; same-day ACH at the next window 10:30, 14:45 or 16:45 ET of
      #   a business day; standard ACH at 08:30 ET on the next business day; weekends and Federal
      #   Reserve holidays skipped). Sandbox: the creation time for RTP and FedNow, creation + the
      #   platform's `sandbox.ach_same_day_delay_seconds` or `ach_standard_delay_seconds` for ACH.
      #   @return [String]
      field :expected_settlement_at
      # @!attribute [r] submitted_at
      #   When the rail took it; null before. A payment completed straight from `pending` gets its
      #   completion time.
      #   @return [String, nil]
      field :submitted_at
      # @!attribute [r] completed_at
      #   When it settled; null unless it completed (it stays set if the payment is later returned).
      #   @return [String, nil]
      field :completed_at
      # @!attribute [r] failed_at
      #   When it failed; null unless `failed`.
      #   @return [String, nil]
      field :failed_at
      # @!attribute [r] canceled_at
      #   When it was canceled; null unless `canceled`.
      #   @return [String, nil]
      field :canceled_at
      # @!attribute [r] environment
      #   The environment of the key that created it; only keys of that environment see it. One of:
      #   `sandbox`, `live`.
      #   @return [String]
      field :environment
      # @!attribute [r] created_at
      #   RFC 3339, UTC, millisecond precision.
      #   @return [String]
      field :created_at
      # @!attribute [r] counterparty_id
      #   Present on a payment made with `counterparty_id` (absent on others): the counterparty
      #   (`cp_...`) whose account the payment copied into `destination` at its creation. The payment
      #   keeps that destination if the counterparty is deleted later.
      #   @return [String, nil]
      field :counterparty_id
    end

    # How far a counterparty's account is verified: `unverified` until `client.counterparties.verify`;
    # `pending` while its zero-dollar ACH prenote is out; then `verified` (the prenote settled without a
    # return; live, a return from the receiving bank still turns it `failed`) or `failed` (returned:
    # `failure_code` is the ACH return code). A failed counterparty may be verified again; a pending or
    # verified one may not (409 `invalid_state`).
    #
    # Schema: `CounterpartyVerification`.
    class CounterpartyVerification < Model
      schema "CounterpartyVerification"
      # @!attribute [r] status
      #   One of: `unverified`, `pending`, `verified`, `failed`.
      #   @return [String]
      field :status
      # @!attribute [r] method
      #   `prenote` once a verification was asked for; null before.
      #   @return [String, nil]
      field :method
      # @!attribute [r] failure_code
      #   Present only when `status` is `failed`: the ACH return code of the prenote (live: the
      #   receiving bank's; in the sandbox, the code of the magic account number: R02, R03, R04, R16,
      #   R23).
      #   @return [String, nil]
      field :failure_code
    end

    # A bank account the platform pays again and again, saved once (`client.counterparties`). The
    # whole account number is kept (a payment to the counterparty copies it into its `destination`)
    # but never shown: only its last four digits.
    #
    # Schema: `Counterparty`.
    class Counterparty < Model
      schema "Counterparty"
      # @!attribute [r] id
      #   `cp_...`
      #   @return [String]
      field :id
      # @!attribute [r] object
      #   Always `counterparty`.
      #   @return [String]
      field :object
      # @!attribute [r] name
      #   The account holder's name; a payment's `destination.name` (screened at each payment).
      #   @return [String]
      field :name
      # @!attribute [r] account_number_last4
      #   The last four digits of the account number (the whole number is never shown).
      #   @return [String]
      field :account_number_last4
      # @!attribute [r] routing_number
      #   @return [String]
      field :routing_number
      # @!attribute [r] account_type
      #   One of: `checking`, `savings`.
      #   @return [String]
      field :account_type
      # @!attribute [r] verification
      #   @return [CounterpartyVerification]
      field :verification, CounterpartyVerification
      # @!attribute [r] metadata
      #   @return [Hash{String=>String}]
      field :metadata
      # @!attribute [r] environment
      #   One of: `sandbox`, `live`.
      #   @return [String]
      field :environment
      # @!attribute [r] created_at
      #   @return [String]
      field :created_at
    end

    # Schema: `DeletedCounterparty`.
    class DeletedCounterparty < Model
      schema "DeletedCounterparty"
      # @!attribute [r] id
      #   @return [String]
      field :id
      # @!attribute [r] object
      #   Always `counterparty`.
      #   @return [String]
      field :object
      # @!attribute [r] deleted
      #   Always `true`.
      #   @return [Boolean]
      field :deleted
    end

    # Money moved at once between two virtual accounts of the caller's platform and environment: one
    # posted journal entry of type `book_transfer` (the sender's ledger account debited, the receiver's
    # credited), shown on both accounts as a `book_transfer` transaction with `source` `{type:
    # book_transfer, id}`. Completed when made; there is no other status.
    #
    # Schema: `BookTransfer`.
    class BookTransfer < Model
      schema "BookTransfer"
      # @!attribute [r] id
      #   @return [String]
      field :id
      # @!attribute [r] object
      #   Always `book_transfer`.
      #   @return [String]
      field :object
      # @!attribute [r] from_virtual_account_id
      #   The account debited.
      #   @return [String]
      field :from_virtual_account_id
      # @!attribute [r] to_virtual_account_id
      #   The account credited.
      #   @return [String]
      field :to_virtual_account_id
      # @!attribute [r] amount
      #   In cents.
      #   @return [Integer]
      field :amount
      # @!attribute [r] currency
      #   Always `USD`.
      #   @return [String]
      field :currency
      # @!attribute [r] description
      #   As given (may be empty); the journal entry's description is this, else `Book transfer to
      #   <to_virtual_account_id>`.
      #   @return [String]
      field :description
      # @!attribute [r] status
      #   Always `completed`.
      #   @return [String]
      field :status
      # @!attribute [r] idempotency_key
      #   The key it was created with.
      #   @return [String]
      field :idempotency_key
      # @!attribute [r] journal_entry_id
      #   Its journal entry (`GET /ledger/journal-entries/{id}`), posted at once; its `source` names this
      #   transfer.
      #   @return [String]
      field :journal_entry_id
      # @!attribute [r] metadata
      #   @return [Hash{String=>String}]
      field :metadata
      # @!attribute [r] environment
      #   The environment of the key that created it. One of: `sandbox`, `live`.
      #   @return [String]
      field :environment
      # @!attribute [r] created_at
      #   RFC 3339, UTC, millisecond precision.
      #   @return [String]
      field :created_at
    end

    # Schema: `Event.data`.
    class EventData < Model
      schema "Event.data"
      # @!attribute [r] object
      #   The resource (virtual_account, payment, book_transfer, ledger_entry, inbound_transfer,
      #   kyb_verification, …).
      #   @return [Hash]
      field :object

      # The resource as a model (a {Payment}, a {VirtualAccount}, ...), by its `object` name; the
      # Hash itself when the type is not one the client knows.
      # @return [Model, Hash, nil]
      def resource
        raw = object
        return raw unless raw.is_a?(Hash)

        klass = Models.by_object_name(raw["object"] || raw[:object])
        klass ? klass.construct(raw) : raw
      end
    end

    # A public event. `data.object` is the resource as GET returned it at the moment of the event. Emitted
    # today: virtual_account.created, ledger.entry.created (one per ledger entry posted, whatever posted
    # it; a pending entry emits it when it posts), inbound_transfer.completed, book_transfer.completed
    # (`data.object` a `BookTransfer`), counterparty.verified and counterparty.verification_failed
    # (`data.object` a `Counterparty`: its prenote passed, or was returned with `failure_code`); for
    # payments (`data.object` a `Payment`, as it was at that event): payment.created (accepted and
    # held), payment.requires_approval (at or above the approval threshold: held, waiting for a second
    # key), payment.approved (released to its rail),
    # payment.denied (hold released), payment.released (a scheduled payment's date came: held and
    # `pending`, or `requires_approval` at the threshold; one the rules refused on its date emits
    # payment.failed instead), payment.submitted (handed to the rail), payment.completed (settled),
    # payment.failed (`failure` is set), payment.canceled and payment.notification_of_change (live ACH:
    # the receiving bank's notice of changed details, in `notification_of_change`); and for KYB
    # verifications (`data.object` a `KYBVerification`, masked): kyb.pending_review (the verification
    # went to manual review; `review.eta` is set), kyb.approved and kyb.rejected (the automatic
    # decision, a screening hit at submission, or a manual decision; `decision` is set). A submission
    # itself emits no event. webhook.test is sent by `POST /webhooks/{id}/test`.
    #
    # Schema: `Event`.
    class Event < Model
      schema "Event"
      # @!attribute [r] id
      #   @return [String]
      field :id
      # @!attribute [r] object
      #   Always `event`.
      #   @return [String]
      field :object
      # @!attribute [r] type
      #   One of: `virtual_account.created`, `payment.created`, `payment.submitted`,
      #   `payment.completed`, `payment.failed`, `payment.canceled`, `payment.requires_approval`,
      #   `payment.approved`, `payment.denied`, `payment.released`, `payment.notification_of_change`,
      #   `kyb.pending_review`, `kyb.approved`, `kyb.rejected`, `ledger.entry.created`,
      #   `inbound_transfer.completed`, `book_transfer.completed`, `counterparty.verified`,
      #   `counterparty.verification_failed`, `webhook.test`.
      #   @return [String]
      field :type
      # @!attribute [r] platform_id
      #   @return [String]
      field :platform_id
      # @!attribute [r] environment
      #   One of: `sandbox`, `live`.
      #   @return [String]
      field :environment
      # @!attribute [r] created_at
      #   @return [String]
      field :created_at
      # @!attribute [r] data
      #   @return [EventData]
      field :data, EventData
    end

    # A US street address. A PO box in any usual spelling (`PO Box`, `P.O. Box`, `POB 12`, `Post Office
    # Box`, `Postal Box`, or a line starting `Box 12`) is 400: a business must be found where it says it
    # is. In responses `line2` is absent when it was not given.
    #
    # Schema: `KYBAddress`.
    class KYBAddress < Model
      schema "KYBAddress"
      # @!attribute [r] line1
      #   1 to 200 characters, not only white space; not a PO box.
      #   @return [String]
      field :line1
      # @!attribute [r] line2
      #   Optional, at most 200 characters; not a PO box. Null or absent: none.
      #   @return [String, nil]
      field :line2
      # @!attribute [r] city
      #   1 to 100 characters, not only white space.
      #   @return [String]
      field :city
      # @!attribute [r] state
      #   Two-letter code of a state, DC or a territory, in capitals. One of: `AL`, `AK`, `AZ`, `AR`,
      #   `CA`, `CO`, `CT`, `DE`, `FL`, `GA`, `HI`, `ID`, `IL`, `IN`, `IA`, `KS`, `KY`, `LA`, `ME`,
      #   `MD`, `MA`, `MI`, `MN`, `MS`, `MO`, `MT`, `NE`, `NV`, `NH`, `NJ`, `NM`, `NY`, `NC`, `ND`,
      #   `OH`, `OK`, `OR`, `PA`, `RI`, `SC`, `SD`, `TN`, `TX`, `UT`, `VT`, `VA`, `WA`, `WV`, `WI`,
      #   `WY`, `DC`, `PR`, `GU`, `VI`, `AS`, `MP`.
      #   @return [String]
      field :state
      # @!attribute [r] postal_code
      #   A ZIP code, `12345` or ZIP+4 `12345-6789`.
      #   @return [String]
      field :postal_code
      # @!attribute [r] country
      #   Only `US`. Always `US`.
      #   @return [String]
      field :country
    end

    # The business as submitted, masked: the EIN shows its last four digits only. Optional fields not
    # given are null.
    #
    # Schema: `KYBBusiness`.
    class KYBBusiness < Model
      schema "KYBBusiness"
      # @!attribute [r] legal_name
      #   @return [String]
      field :legal_name
      # @!attribute [r] dba
      #   @return [String, nil]
      field :dba
      # @!attribute [r] ein
      #   Masked: only the last four digits.
      #   @return [String]
      field :ein
      # @!attribute [r] entity_type
      #   One of: `llc`, `corporation`, `partnership`, `sole_proprietorship`, `nonprofit`.
      #   @return [String]
      field :entity_type
      # @!attribute [r] formation_date
      #   @return [String]
      field :formation_date
      # @!attribute [r] formation_state
      #   One of: `AL`, `AK`, `AZ`, `AR`, `CA`, `CO`, `CT`, `DE`, `FL`, `GA`, `HI`, `ID`, `IL`, `IN`,
      #   `IA`, `KS`, `KY`, `LA`, `ME`, `MD`, `MA`, `MI`, `MN`, `MS`, `MO`, `MT`, `NE`, `NV`, `NH`,
      #   `NJ`, `NM`, `NY`, `NC`, `ND`, `OH`, `OK`, `OR`, `PA`, `RI`, `SC`, `SD`, `TN`, `TX`, `UT`,
      #   `VT`, `VA`, `WA`, `WV`, `WI`, `WY`, `DC`, `PR`, `GU`, `VI`, `AS`, `MP`.
      #   @return [String]
      field :formation_state
      # @!attribute [r] address
      #   @return [KYBAddress]
      field :address, KYBAddress
      # @!attribute [r] website
      #   @return [String, nil]
      field :website
      # @!attribute [r] naics_code
      #   @return [String, nil]
      field :naics_code
      # @!attribute [r] phone
      #   @return [String, nil]
      field :phone
    end

    # A beneficial owner as submitted, masked: `ssn_last4` is `****`.
    #
    # Schema: `KYBOwner`.
    class KYBOwner < Model
      schema "KYBOwner"
      # @!attribute [r] first_name
      #   @return [String]
      field :first_name
      # @!attribute [r] last_name
      #   @return [String]
      field :last_name
      # @!attribute [r] date_of_birth
      #   @return [String]
      field :date_of_birth
      # @!attribute [r] ssn_last4
      #   Always `****`: no SSN digit is kept. Always `****`.
      #   @return [String]
      field :ssn_last4
      # @!attribute [r] ownership_percentage
      #   A decimal string, without trailing zeros.
      #   @return [String]
      field :ownership_percentage
      # @!attribute [r] is_control_person
      #   @return [Boolean]
      field :is_control_person
      # @!attribute [r] title
      #   @return [String, nil]
      field :title
      # @!attribute [r] address
      #   @return [KYBAddress]
      field :address, KYBAddress
    end

    # Why a verification was decided so. Automatic codes: `ein_mismatch` (field `business.ein`, sandbox
    # EIN ending `0000`) and `screening_match` (field `business.legal_name`, `business.dba` or
    # `beneficial_owners[i]`); manual decisions carry the reasons the operator or simulation gave.
    #
    # Schema: `KYBReason`.
    class KYBReason < Model
      schema "KYBReason"
      # @!attribute [r] code
      #   @return [String]
      field :code
      # @!attribute [r] message
      #   @return [String]
      field :message
      # @!attribute [r] field
      #   The submission field at fault; absent when none.
      #   @return [String]
      field :field
    end

    # How a verification ended.
    #
    # Schema: `KYBDecision`.
    class KYBDecision < Model
      schema "KYBDecision"
      # @!attribute [r] outcome
      #   One of: `approved`, `rejected`.
      #   @return [String]
      field :outcome
      # @!attribute [r] method
      #   `automatic`: screening or the verifier (the sandbox's EIN rules); `manual`: the operator or a
      #   sandbox simulation, after review. One of: `automatic`, `manual`.
      #   @return [String]
      field :method
      # @!attribute [r] reasons
      #   Possibly empty.
      #   @return [Array<KYBReason>]
      field :reasons, [KYBReason]
      # @!attribute [r] decided_at
      #   RFC 3339, UTC, millisecond precision.
      #   @return [String]
      field :decided_at
    end

    # The verification's place in the manual review queue.
    #
    # Schema: `KYBReview`.
    class KYBReview < Model
      schema "KYBReview"
      # @!attribute [r] eta
      #   When a decision is expected: 24 hours after the verification entered review.
      #   @return [String]
      field :eta
    end

    # A KYB verification of a business: (platform, environment, `entity_ref`). Every virtual account of
    # the business shows the status of its latest verification as `kyb_status`. Lifecycle: `pending` →
    # `approved` | `rejected` | `pending_review`; `pending_review` → `approved` | `rejected` (by the
    # operator, or a sandbox simulation). A screening hit is recorded directly as `rejected`. Sensitive
    # values are masked everywhere, events included.
    #
    # Schema: `KYBVerification`.
    class KYBVerification < Model
      schema "KYBVerification"
      # @!attribute [r] id
      #   @return [String]
      field :id
      # @!attribute [r] object
      #   Always `kyb_verification`.
      #   @return [String]
      field :object
      # @!attribute [r] virtual_account_id
      #   The account it was submitted through.
      #   @return [String]
      field :virtual_account_id
      # @!attribute [r] entity_ref
      #   The business: that account's `entity_ref`.
      #   @return [String]
      field :entity_ref
      # @!attribute [r] status
      #   `pending` until the KYB decider (a subscriber of the event log) decides it, within a second:
      #   in the sandbox by the EIN's ending (`0000` rejected, `1111` `pending_review`, else approved);
      #   in live every verification goes to `pending_review` for the operator. One of: `pending`,
      #   `pending_review`, `approved`, `rejected`.
      #   @return [String]
      field :status
      # @!attribute [r] business
      #   @return [KYBBusiness]
      field :business, KYBBusiness
      # @!attribute [r] beneficial_owners
      #   @return [Array<KYBOwner>]
      field :beneficial_owners, [KYBOwner]
      # @!attribute [r] decision
      #   Null until approved or rejected.
      #   @return [KYBDecision, nil]
      field :decision, KYBDecision
      # @!attribute [r] review
      #   Set when the verification went to manual review (and kept after the decision); null otherwise.
      #   @return [KYBReview, nil]
      field :review, KYBReview
      # @!attribute [r] environment
      #   One of: `sandbox`, `live`.
      #   @return [String]
      field :environment
      # @!attribute [r] created_at
      #   When it was submitted.
      #   @return [String]
      field :created_at
      # @!attribute [r] updated_at
      #   Its last status change.
      #   @return [String]
      field :updated_at
    end

    # The endpoint's delivery health, derived from its attempts. `state`: `disabled` when the endpoint is
    # disabled, `failing` when attempts have failed since the last success, else `healthy`.
    #
    # Schema: `WebhookDeliveryStatus`.
    class WebhookDeliveryStatus < Model
      schema "WebhookDeliveryStatus"
      # @!attribute [r] state
      #   One of: `healthy`, `failing`, `disabled`.
      #   @return [String]
      field :state
      # @!attribute [r] last_attempt_at
      #   @return [String, nil]
      field :last_attempt_at
      # @!attribute [r] last_success_at
      #   @return [String, nil]
      field :last_success_at
      # @!attribute [r] last_status_code
      #   The HTTP status of the last attempt; null if it got no response.
      #   @return [Integer, nil]
      field :last_status_code
      # @!attribute [r] consecutive_failures
      #   Attempts failed since the last successful one.
      #   @return [Integer]
      field :consecutive_failures
      # @!attribute [r] pending
      #   Deliveries still to be delivered or retried.
      #   @return [Integer]
      field :pending
      # @!attribute [r] failed
      #   Deliveries that exhausted their attempts.
      #   @return [Integer]
      field :failed
    end

    # A webhook endpoint. `secret` appears only in the responses to creation and to rotate-secret.
    #
    # Schema: `WebhookEndpoint`.
    class WebhookEndpoint < Model
      schema "WebhookEndpoint"
      # @!attribute [r] id
      #   @return [String]
      field :id
      # @!attribute [r] object
      #   Always `webhook_endpoint`.
      #   @return [String]
      field :object
      # @!attribute [r] url
      #   @return [String]
      field :url
      # @!attribute [r] events
      #   @return [Array<String>]
      field :events
      # @!attribute [r] description
      #   @return [String]
      field :description
      # @!attribute [r] status
      #   One of: `enabled`, `disabled`.
      #   @return [String]
      field :status
      # @!attribute [r] secret
      #   The signing secret, shown in this response only: `whsec_` followed by the base64 of the key
      #   bytes.
      #   @return [String]
      field :secret
      # @!attribute [r] retry_policy
      #   @return [WebhookRetryPolicy]
      field :retry_policy, WebhookRetryPolicy
      # @!attribute [r] delivery_status
      #   @return [WebhookDeliveryStatus]
      field :delivery_status, WebhookDeliveryStatus
      # @!attribute [r] environment
      #   One of: `sandbox`, `live`.
      #   @return [String]
      field :environment
      # @!attribute [r] created_at
      #   @return [String]
      field :created_at
      # @!attribute [r] updated_at
      #   @return [String]
      field :updated_at
    end

    # Schema: `DeletedWebhookEndpoint`.
    class DeletedWebhookEndpoint < Model
      schema "DeletedWebhookEndpoint"
      # @!attribute [r] id
      #   @return [String]
      field :id
      # @!attribute [r] object
      #   Always `webhook_endpoint`.
      #   @return [String]
      field :object
      # @!attribute [r] deleted
      #   Always `True`.
      #   @return [Boolean]
      field :deleted
    end

    # One try of a delivery.
    #
    # Schema: `WebhookAttempt`.
    class WebhookAttempt < Model
      schema "WebhookAttempt"
      # @!attribute [r] attempted_at
      #   @return [String]
      field :attempted_at
      # @!attribute [r] status_code
      #   The endpoint's HTTP status; null if no response came (connection error, timeout).
      #   @return [Integer, nil]
      field :status_code
      # @!attribute [r] duration_ms
      #   @return [Integer]
      field :duration_ms
      # @!attribute [r] error
      #   Why the attempt failed without a response, e.g. a timeout or a refused address.
      #   @return [String, nil]
      field :error
      # @!attribute [r] response_body
      #   The start of the response body, at most 4 KiB.
      #   @return [String, nil]
      field :response_body
    end

    # The delivery of one event to one endpoint.
    #
    # Schema: `WebhookDelivery`.
    class WebhookDelivery < Model
      schema "WebhookDelivery"
      # @!attribute [r] id
      #   Sent as the `webhook-id` header, the same on every attempt.
      #   @return [String]
      field :id
      # @!attribute [r] object
      #   Always `webhook_delivery`.
      #   @return [String]
      field :object
      # @!attribute [r] webhook_endpoint_id
      #   @return [String]
      field :webhook_endpoint_id
      # @!attribute [r] event_id
      #   @return [String]
      field :event_id
      # @!attribute [r] event_type
      #   One of: `virtual_account.created`, `payment.created`, `payment.submitted`,
      #   `payment.completed`, `payment.failed`, `payment.canceled`, `payment.requires_approval`,
      #   `payment.approved`, `payment.denied`, `payment.released`, `payment.notification_of_change`,
      #   `kyb.pending_review`, `kyb.approved`, `kyb.rejected`, `ledger.entry.created`,
      #   `inbound_transfer.completed`, `book_transfer.completed`, `counterparty.verified`,
      #   `counterparty.verification_failed`, `webhook.test`.
      #   @return [String]
      field :event_type
      # @!attribute [r] replay_id
      #   The replay (`client.webhooks.replay`, `POST /webhooks/{id}/replay`) that made this delivery
      #   (`rpl_...`); null for a delivery of a new event, a retry of one, or a test event.
      #   @return [String, nil]
      field :replay_id
      # @!attribute [r] status
      #   One of: `pending`, `succeeded`, `failed`.
      #   @return [String]
      field :status
      # @!attribute [r] attempts
      #   @return [Array<WebhookAttempt>]
      field :attempts, [WebhookAttempt]
      # @!attribute [r] next_attempt_at
      #   When the next attempt is due; null unless pending.
      #   @return [String, nil]
      field :next_attempt_at
      # @!attribute [r] created_at
      #   @return [String]
      field :created_at
    end

    # A replay of past events to one endpoint (`client.webhooks.replay`): each event of the window
    # became a new delivery (its own `msg_` id, `replay_id` naming this replay) carrying the event as
    # first sent, with its original `id`.
    #
    # Schema: `WebhookReplay`.
    class WebhookReplay < Model
      schema "WebhookReplay"
      # @!attribute [r] id
      #   `rpl_...`
      #   @return [String]
      field :id
      # @!attribute [r] object
      #   Always `webhook_replay`.
      #   @return [String]
      field :object
      # @!attribute [r] webhook_id
      #   The endpoint the events are sent to.
      #   @return [String]
      field :webhook_id
      # @!attribute [r] created_after
      #   Start of the window, inclusive.
      #   @return [String]
      field :created_after
      # @!attribute [r] created_before
      #   End of the window, exclusive.
      #   @return [String]
      field :created_before
      # @!attribute [r] types
      #   The types asked for; null when the request named none (the endpoint's subscriptions were
      #   used).
      #   @return [Array<String>, nil]
      field :types
      # @!attribute [r] replayed
      #   How many events were queued for delivery again (0 to 10,000).
      #   @return [Integer]
      field :replayed
      # @!attribute [r] created_at
      #   @return [String]
      field :created_at
    end

    # A delivery queued for an attempt.
    #
    # Schema: `QueuedWebhookDelivery`.
    class QueuedWebhookDelivery < Model
      schema "QueuedWebhookDelivery"
      # @!attribute [r] id
      #   @return [String]
      field :id
      # @!attribute [r] object
      #   Always `webhook_delivery`.
      #   @return [String]
      field :object
      # @!attribute [r] event_type
      #   One of: `virtual_account.created`, `payment.created`, `payment.submitted`,
      #   `payment.completed`, `payment.failed`, `payment.canceled`, `payment.requires_approval`,
      #   `payment.approved`, `payment.denied`, `payment.released`, `payment.notification_of_change`,
      #   `kyb.pending_review`, `kyb.approved`, `kyb.rejected`, `ledger.entry.created`,
      #   `inbound_transfer.completed`, `book_transfer.completed`, `counterparty.verified`,
      #   `counterparty.verification_failed`, `webhook.test`.
      #   @return [String]
      field :event_type
      # @!attribute [r] status
      #   Always `pending`.
      #   @return [String]
      field :status
    end

    # Schema: `RevenueLine`.
    class RevenueLine < Model
      schema "RevenueLine"
      # @!attribute [r] source
      #   One of: `payment_fees`, `interest`.
      #   @return [String]
      field :source
      # @!attribute [r] rail
      #   payment_fees lines: the rail. One of: `ach_standard`, `ach_same_day`, `rtp`, `fednow`.
      #   @return [String]
      field :rail
      # @!attribute [r] count
      #   payment_fees lines: how many payments completed in the period.
      #   @return [Integer]
      field :count
      # @!attribute [r] basis_amount
      #   Cents. payment_fees: the fees; interest: the average daily posted balance of the platform's
      #   virtual accounts.
      #   @return [Integer]
      field :basis_amount
      # @!attribute [r] gross_amount
      #   Cents. payment_fees: the fees; interest: interest_rate × average daily balance × days / 365.
      #   @return [Integer]
      field :gross_amount
      # @!attribute [r] platform_share
      #   Cents: the line's exact gross × revenue_share_rate, rounded half-to-even.
      #   @return [Integer]
      field :platform_share
    end

    # Schema: `RevenueShareReport`.
    class RevenueShareReport < Model
      schema "RevenueShareReport"
      # @!attribute [r] object
      #   Always `revenue_share_report`.
      #   @return [String]
      field :object
      # @!attribute [r] from
      #   @return [String]
      field :from
      # @!attribute [r] to
      #   @return [String]
      field :to
      # @!attribute [r] currency
      #   Always `USD`.
      #   @return [String]
      field :currency
      # @!attribute [r] share_rate
      #   @return [String]
      field :share_rate
      # @!attribute [r] interest_rate
      #   @return [String]
      field :interest_rate
      # @!attribute [r] lines
      #   @return [Array<RevenueLine>]
      field :lines, [RevenueLine]
      # @!attribute [r] total_gross
      #   @return [Integer]
      field :total_gross
      # @!attribute [r] total_platform_share
      #   @return [Integer]
      field :total_platform_share
    end

    # An outbound NACHA file of live mode (API.md §10): the live ACH payments cut at a same-day window (15
    # minutes before 10:30, 14:45 and 16:45 ET; standard payments too at the day's last) or by the
    # operator, with their trace numbers, and the credits the bank forwarded that are returned (`R03` to
    # an account number no live account has, `R02` to a closed account), which go in whichever file is cut
    # next. Written to `TREASURY_ACH_OUTBOX` under `name`.
    #
    # Schema: `ACHFile`.
    class ACHFile < Model
      schema "ACHFile"
      # @!attribute [r] id
      #   @return [String]
      field :id
      # @!attribute [r] object
      #   Always `ach_file`.
      #   @return [String]
      field :object
      # @!attribute [r] name
      #   `ach-YYYYMMDD-HHMMSS-<file id modifier>.ach`, the time in New York; the modifier (A–Z, then
      #   0–9) counts the day's files.
      #   @return [String]
      field :name
      # @!attribute [r] entry_count
      #   Its entries: one per payment and one per returned credit (a cut with more than a file's worth
      #   makes more files).
      #   @return [Integer]
      field :entry_count
      # @!attribute [r] total_credit
      #   The sum of its entries (payments and returned credits), in cents: the file control's total
      #   credit.
      #   @return [Integer]
      field :total_credit
      # @!attribute [r] created_at
      #   When it was cut: its payments became `submitted` then.
      #   @return [String]
      field :created_at
      # @!attribute [r] transmitted_at
      #   When it was recorded as written to the outbox; null until then (the connector writes a file
      #   cut but not recorded again, identically, after a restart).
      #   @return [String, nil]
      field :transmitted_at
    end

    # The model class for an `object` name ("payment" => {Payment}), or nil.
    # @param name [String, nil]
    # @return [Class, nil]
    def self.by_object_name(name)
      {
        "platform" => Platform, "api_key" => APIKey, "platform_settings" => PlatformSettings,
        "virtual_account" => VirtualAccount, "balance" => Balance, "transaction" => Transaction,
        "statement" => Statement, "ledger_account" => LedgerAccount, "ledger_entry" => LedgerEntry,
        "journal_entry" => JournalEntry, "inbound_transfer" => InboundTransfer, "payment" => Payment,
        "book_transfer" => BookTransfer, "counterparty" => Counterparty,
        "event" => Event, "kyb_verification" => KYBVerification, "webhook_endpoint" => WebhookEndpoint,
        "webhook_delivery" => WebhookDelivery, "webhook_replay" => WebhookReplay,
        "revenue_share_report" => RevenueShareReport,
        "ach_file" => ACHFile
      }[name.to_s]
    end
  end
end
