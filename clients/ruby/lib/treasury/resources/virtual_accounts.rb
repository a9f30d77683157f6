# frozen_string_literal: true

module Treasury
  module Resources
    # Virtual accounts, their balances, transactions and statements (`/virtual-accounts`).
    class VirtualAccounts < Base
      # Opens a virtual account for a business (entity) of the platform.
      # `POST /virtual-accounts`
      #
      # @param platform_id [String] the caller's platform, `plt_...`
      # @param entity_ref [String] the platform's reference of the business, 1..128 characters
      # @param type [String] `checking` or `savings`
      # @param metadata [Hash{String=>String}, nil]
      # @param idempotency_key [String, nil]
      # @return [Models::VirtualAccount]
      def create(platform_id:, entity_ref:, type:, metadata: NOT_GIVEN, idempotency_key: nil)
        call(:post, "/virtual-accounts", model: Models::VirtualAccount,
                                         body: compact(platform_id: platform_id, entity_ref: entity_ref, type: type,
                                                       metadata: metadata),
                                         idempotency_key: idempotency_key)
      end

      # `GET /virtual-accounts`
      #
      # @param entity_ref [String]
      # @param status [String] `active`, `frozen` or `closed`
      # @param metadata [Hash{String=>String}] only accounts whose metadata has every pair, sent as
      #   `metadata[key]=value`; kept on every page's request
      # @param limit [Integer]
      # @param cursor [String]
      # @return [Page<Models::VirtualAccount>]
      def list(entity_ref: NOT_GIVEN, status: NOT_GIVEN, metadata: NOT_GIVEN, limit: NOT_GIVEN, cursor: NOT_GIVEN)
        paged("/virtual-accounts", Models::VirtualAccount,
              entity_ref: entity_ref, status: status, metadata: metadata, limit: limit, cursor: cursor)
      end

      # `GET /virtual-accounts/{id}`
      # @param id [String] `va_...`
      # @return [Models::VirtualAccount]
      def retrieve(id)
        call(:get, "/virtual-accounts/#{seg(id)}", model: Models::VirtualAccount)
      end

      # The balance now, or as it was at an instant.
      # `GET /virtual-accounts/{id}/balance`
      #
      # @param id [String] `va_...`
      # @param as_of [Time, String] RFC 3339 or `YYYY-MM-DD`
      # @return [Models::Balance]
      def balance(id, as_of: NOT_GIVEN)
        call(:get, "/virtual-accounts/#{seg(id)}/balance", model: Models::Balance, query: { as_of: as_of })
      end

      # The account's transactions, newest first.
      # `GET /virtual-accounts/{id}/transactions`
      #
      # @param id [String] `va_...`
      # @param status [String] `pending`, `posted` or `void`
      # @param type [String] `inbound_transfer`, `payment`, `payment_fee`, `payment_reversal`, `book_transfer`, ...
      # @param created_after [Time, String] inclusive
      # @param created_before [Time, String] exclusive
      # @param limit [Integer]
      # @param cursor [String]
      # @return [Page<Models::Transaction>]
      def transactions(id, status: NOT_GIVEN, type: NOT_GIVEN, created_after: NOT_GIVEN, created_before: NOT_GIVEN,
                       limit: NOT_GIVEN, cursor: NOT_GIVEN)
        paged("/virtual-accounts/#{seg(id)}/transactions", Models::Transaction,
              status: status, type: type, created_after: created_after, created_before: created_before,
              limit: limit, cursor: cursor)
      end

      # A monthly statement: opening and closing balance, totals, and every posted transaction.
      # `GET /virtual-accounts/{id}/statements/{month}`
      #
      # @param id [String] `va_...`
      # @param month [String] `YYYY-MM` (UTC)
      # @param format [String] `json` (default) or `csv`
      # @return [Models::Statement, String] the statement, or its CSV text with `format: "csv"`
      def statement(id, month, format: NOT_GIVEN)
        csv = format.to_s == "csv"
        call(:get, "/virtual-accounts/#{seg(id)}/statements/#{seg(month)}", model: Models::Statement,
                                                                            query: { format: format },
                                                                            accept: csv ? "text/csv" : "application/json")
      end
      alias statements statement

      # Freezes an account: it cannot send payments until {#unfreeze}.
      # `POST /virtual-accounts/{id}/freeze`
      # @param id [String] `va_...` (without it: Object#freeze)
      # @return [Models::VirtualAccount]
      def freeze(id = nil)
        return super() if id.nil? # Object#freeze, for the resource object itself

        call(:post, "/virtual-accounts/#{seg(id)}/freeze", model: Models::VirtualAccount, body: empty_body)
      end

      # `POST /virtual-accounts/{id}/unfreeze`
      # @param id [String] `va_...`
      # @return [Models::VirtualAccount]
      def unfreeze(id)
        call(:post, "/virtual-accounts/#{seg(id)}/unfreeze", model: Models::VirtualAccount, body: empty_body)
      end

      # Closes an account at zero balance, for good.
      # `POST /virtual-accounts/{id}/close`
      # @param id [String] `va_...`
      # @return [Models::VirtualAccount]
      def close(id)
        call(:post, "/virtual-accounts/#{seg(id)}/close", model: Models::VirtualAccount, body: empty_body)
      end
    end
  end
end
