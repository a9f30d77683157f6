# frozen_string_literal: true

module Treasury
  module Resources
    # The double-entry sub-ledger (`/ledger`).
    class Ledger < Base
      # @return [LedgerAccounts]
      def accounts
        @accounts ||= LedgerAccounts.new(@client)
      end

      # @return [LedgerEntries]
      def entries
        @entries ||= LedgerEntries.new(@client)
      end

      # @return [LedgerJournalEntries]
      def journal_entries
        @journal_entries ||= LedgerJournalEntries.new(@client)
      end

      # The reconciliation export: every ledger entry created in the range, with each account's
      # running balance, as CSV.
      # `GET /ledger/exports`
      #
      # @param created_after [Time, String] inclusive
      # @param created_before [Time, String] exclusive
      # @return [String] CSV text
      def export(created_after: NOT_GIVEN, created_before: NOT_GIVEN)
        call(:get, "/ledger/exports", query: { created_after: created_after, created_before: created_before },
                                      accept: "text/csv")
      end
      alias exports export
    end

    # Ledger accounts (`/ledger/accounts`).
    class LedgerAccounts < Base
      # `GET /ledger/accounts`
      # @param limit [Integer]
      # @param cursor [String]
      # @return [Page<Models::LedgerAccount>]
      def list(limit: NOT_GIVEN, cursor: NOT_GIVEN)
        paged("/ledger/accounts", Models::LedgerAccount, limit: limit, cursor: cursor)
      end
    end

    # Journal entries (`/ledger/journal-entries`), listed or one by id: the link from a payment's, an
    # inbound transfer's, a book transfer's or a ledger entry's `journal_entry_id` to the money it moved.
    class LedgerJournalEntries < Base
      # The platform's journal entries, newest first (ledger order), each with its lines (`entries`)
      # and `source` exactly as {#retrieve} shows it; the filters combine, and go with every page's
      # request as the list is walked. The list reads the ledger projection (an entry appears
      # shortly after the command that posted it returns; the server waits for it up to its
      # read-your-writes bound).
      # `GET /ledger/journal-entries`
      #
      # @param type [String] `adjustment`, `fee`, `correction`, `inbound_transfer`, `payment`,
      #   `payment_reversal`, `book_transfer` or `funding` (`payment_fee` is a line's type, not an
      #   entry's: 400 like any other value)
      # @param status [String] `pending`, `posted` or `archived`
      # @param virtual_account_id [String] entries with a line on this account (an unknown or another
      #   platform's account gives an empty list, not 404)
      # @param source_type [String] `payment`, `inbound_transfer`, `book_transfer` or `journal_entry`
      #   (manual entries and fundings)
      # @param source_id [String] entries whose `source.id` is this: a payment's hold and, if it was
      #   returned, its reversal; a transfer's entry
      # @param metadata [Hash{String=>String}] only entries whose metadata has every pair, sent as
      #   `metadata[key]=value`; kept on every page's request
      # @param created_after [Time, Date, String] inclusive
      # @param created_before [Time, Date, String] exclusive
      # @param limit [Integer]
      # @param cursor [String]
      # @return [Page<Models::JournalEntry>]
      # @raise [BadRequestError] `invalid_request` with `param` naming the bad filter
      def list(type: NOT_GIVEN, status: NOT_GIVEN, virtual_account_id: NOT_GIVEN, source_type: NOT_GIVEN,
               source_id: NOT_GIVEN, metadata: NOT_GIVEN, created_after: NOT_GIVEN, created_before: NOT_GIVEN,
               limit: NOT_GIVEN, cursor: NOT_GIVEN)
        paged("/ledger/journal-entries", Models::JournalEntry,
              type: type, status: status, virtual_account_id: virtual_account_id, source_type: source_type,
              source_id: source_id, metadata: metadata, created_after: created_after,
              created_before: created_before, limit: limit, cursor: cursor)
      end

      # A journal entry with its lines (`entries`) and its `source`: `{type: "payment", id: "pay_..."}`,
      # `{type: "inbound_transfer", id: "itx_..."}`, `{type: "book_transfer", id: "bt_..."}`, or
      # `{type: "journal_entry", id:}` (its own id) for a manual entry or a funding.
      # `GET /ledger/journal-entries/{id}`
      #
      # @param id [String] `je_...`
      # @return [Models::JournalEntry]
      # @raise [NotFoundError] for an unknown id, or another platform's or environment's
      def retrieve(id)
        call(:get, "/ledger/journal-entries/#{seg(id)}", model: Models::JournalEntry)
      end
    end

    # Ledger entries and manual journal entries (`/ledger/entries`).
    class LedgerEntries < Base
      # Ledger entries, newest first, each with its journal entry's `source` (`{type:, id:}`: the
      # payment, inbound transfer or book transfer that made it, or the journal entry itself for a
      # manual entry or a funding).
      # `GET /ledger/entries`
      #
      # @param virtual_account_id [String] one account's entries
      # @param ledger_account_id [String] one ledger account's entries
      # @param type [String] `inbound_transfer`, `payment`, `payment_fee`, `payment_reversal`,
      #   `book_transfer`, `adjustment`, `fee`, `correction` or `funding`
      # @param direction [String] `debit` or `credit`
      # @param status [String] `pending`, `posted` or `archived`
      # @param created_after [Time, String]
      # @param created_before [Time, String]
      # @param limit [Integer]
      # @param cursor [String]
      # @return [Page<Models::LedgerEntry>]
      def list(virtual_account_id: NOT_GIVEN, ledger_account_id: NOT_GIVEN, type: NOT_GIVEN, direction: NOT_GIVEN,
               status: NOT_GIVEN, created_after: NOT_GIVEN, created_before: NOT_GIVEN, limit: NOT_GIVEN,
               cursor: NOT_GIVEN)
        paged("/ledger/entries", Models::LedgerEntry,
              virtual_account_id: virtual_account_id, ledger_account_id: ledger_account_id, type: type,
              direction: direction, status: status, created_after: created_after, created_before: created_before,
              limit: limit, cursor: cursor)
      end

      # Posts a manual journal entry, in one of three forms:
      # (a) `virtual_account_id:, direction:, amount:` (the offset goes to the platform's account),
      # (b) `lines: [{ledger_account_id: or virtual_account_id:, direction:, amount:}, ...]` (balanced),
      # (c) `reverses: "je_..."` (the mirror image of that entry).
      # `POST /ledger/entries`
      #
      # @param type [String] `adjustment`, `fee` or `correction` (forms a and b)
      # @param description [String] (forms a and b)
      # @param virtual_account_id [String] form a
      # @param direction [String] form a: `debit` or `credit`
      # @param amount [Integer] form a: cents
      # @param lines [Array<Hash>] form b
      # @param reverses [String] form c: `je_...`
      # @param effective_at [Time, String]
      # @param metadata [Hash{String=>String}, nil]
      # @param idempotency_key [String, nil] sent as the Idempotency-Key header (a random one when nil)
      # @return [Models::JournalEntry]
      def create(type: NOT_GIVEN, description: NOT_GIVEN, virtual_account_id: NOT_GIVEN, direction: NOT_GIVEN,
                 amount: NOT_GIVEN, lines: NOT_GIVEN, reverses: NOT_GIVEN, effective_at: NOT_GIVEN,
                 metadata: NOT_GIVEN, idempotency_key: nil)
        effective_at = effective_at.utc.strftime("%Y-%m-%dT%H:%M:%S.%LZ") if effective_at.is_a?(Time)
        body = compact(type: type, description: description, virtual_account_id: virtual_account_id,
                       direction: direction, amount: amount, lines: lines, reverses: reverses,
                       effective_at: effective_at, metadata: metadata)
        call(:post, "/ledger/entries", model: Models::JournalEntry, body: body, idempotency_key: idempotency_key)
      end
    end
  end
end
