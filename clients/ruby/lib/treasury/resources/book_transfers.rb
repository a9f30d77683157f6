# frozen_string_literal: true

module Treasury
  module Resources
    # Book transfers (`/book-transfers`): money moved at once between two virtual accounts of the
    # caller's platform and environment, as one posted journal entry of type `book_transfer`. No fee
    # is charged and no daily payment limit applies: the money stays on the platform's books.
    class BookTransfers < Base
      # Moves `amount` cents from one account to another, at once. The server requires an
      # idempotency key: yours, else a random one, sent in the `Idempotency-Key` header and the
      # body's `idempotency_key`, the same on every retry, so a transfer is never made twice by the
      # client's retries. The same key and body again return the original transfer; the same key
      # with another body raises {ConflictError} (`idempotency_conflict`, the transfer in
      # `resource_id`).
      # `POST /book-transfers`
      #
      # @param from_virtual_account_id [String] `va_...`: the account to debit (`active`, its business
      #   KYB-approved)
      # @param to_virtual_account_id [String] `va_...`: the account to credit (another one, not
      #   `closed`; a frozen account still receives)
      # @param amount [Integer] cents, 1 to 10,000,000,000,000
      # @param description [String] up to 140 characters (the journal entry's description is this,
      #   else `Book transfer to <to_virtual_account_id>`)
      # @param metadata [Hash{String=>String}]
      # @param idempotency_key [String, nil] 1..255 characters; a random one when nil
      # @return [Models::BookTransfer] `completed` (new) or the original transfer (a replay)
      # @raise [BadRequestError] a bad field (`param` names it), e.g. the same account twice
      #   (`to_virtual_account_id`)
      # @raise [NotFoundError] an account unknown, or of another platform or environment
      # @raise [UnprocessableEntityError] `account_not_active` (sender not active, or receiver
      #   closed), `kyb_not_approved` (the sender's business), `insufficient_funds`,
      #   `limit_exceeded`; `resource_id` names the account
      def create(from_virtual_account_id:, to_virtual_account_id:, amount:, description: NOT_GIVEN,
                 metadata: NOT_GIVEN, idempotency_key: nil)
        key = idempotency_key || SecureRandom.uuid
        body = compact(from_virtual_account_id: from_virtual_account_id, to_virtual_account_id: to_virtual_account_id,
                       amount: amount, description: description, metadata: metadata, idempotency_key: key)
        call(:post, "/book-transfers", model: Models::BookTransfer, body: body, idempotency_key: key)
      end

      # The platform's book transfers in the key's environment, newest first, the filters combined.
      # `GET /book-transfers`
      #
      # @param virtual_account_id [String] only the transfers out of or into this account
      # @param created_after [Time, String] inclusive
      # @param created_before [Time, String] exclusive
      # @param metadata [Hash{String=>String}] only transfers whose metadata has every pair, sent as
      #   `metadata[key]=value`; kept on every page's request
      # @param limit [Integer]
      # @param cursor [String]
      # @return [Page<Models::BookTransfer>]
      def list(virtual_account_id: NOT_GIVEN, created_after: NOT_GIVEN, created_before: NOT_GIVEN,
               metadata: NOT_GIVEN, limit: NOT_GIVEN, cursor: NOT_GIVEN)
        paged("/book-transfers", Models::BookTransfer,
              virtual_account_id: virtual_account_id, created_after: created_after, created_before: created_before,
              metadata: metadata, limit: limit, cursor: cursor)
      end

      # `GET /book-transfers/{id}`
      # @param id [String] `bt_...`
      # @return [Models::BookTransfer]
      # @raise [NotFoundError] for an unknown id, or another platform's or environment's
      def retrieve(id)
        call(:get, "/book-transfers/#{seg(id)}", model: Models::BookTransfer)
      end
    end
  end
end
