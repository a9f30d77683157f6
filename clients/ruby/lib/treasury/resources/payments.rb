# frozen_string_literal: true

module Treasury
  module Resources
    # Payments out of virtual accounts over ACH, RTP and FedNow (`/payments`).
    class Payments < Base
      # Sends a payment. The idempotency key (yours, else a random one) goes in the
      # `Idempotency-Key` header and the body's `idempotency_key`, the same on every retry: a
      # payment is never made twice by the client's retries.
      # `POST /payments`
      #
      # @param virtual_account_id [String] `va_...`
      # @param amount [Integer] cents, at least 1
      # @param rail [String] `ach_standard`, `ach_same_day`, `rtp` or `fednow`
      # @param destination [Hash] `{account_number:, routing_number:, name:}`
      # @param description [String] up to 140 characters
      # @param metadata [Hash{String=>String}]
      # @param idempotency_key [String, nil] 1..255 characters; a random one when nil
      # @return [Models::Payment] `pending` (new) or the original payment (a replay)
      def create(virtual_account_id:, amount:, rail:, destination:, description: NOT_GIVEN, metadata: NOT_GIVEN,
                 idempotency_key: nil)
        key = idempotency_key || SecureRandom.uuid
        body = compact(virtual_account_id: virtual_account_id, amount: amount, rail: rail, destination: destination,
                       idempotency_key: key, description: description, metadata: metadata)
        call(:post, "/payments", model: Models::Payment, body: body, idempotency_key: key)
      end

      # `GET /payments`
      #
      # @param virtual_account_id [String]
      # @param status [String] `pending`, `submitted`, `completed`, `failed` or `canceled`
      # @param rail [String]
      # @param idempotency_key [String] the payment made with this key
      # @param created_after [Time, String] inclusive
      # @param created_before [Time, String] exclusive
      # @param metadata [Hash{String=>String}] only payments whose metadata has every pair, sent as
      #   `metadata[key]=value` (e.g. `metadata: {"order id" => "A&B"}`); kept on every page's request
      # @param limit [Integer]
      # @param cursor [String]
      # @return [Page<Models::Payment>]
      def list(virtual_account_id: NOT_GIVEN, status: NOT_GIVEN, rail: NOT_GIVEN, idempotency_key: NOT_GIVEN,
               created_after: NOT_GIVEN, created_before: NOT_GIVEN, metadata: NOT_GIVEN, limit: NOT_GIVEN,
               cursor: NOT_GIVEN)
        paged("/payments", Models::Payment,
              virtual_account_id: virtual_account_id, status: status, rail: rail, idempotency_key: idempotency_key,
              created_after: created_after, created_before: created_before, metadata: metadata, limit: limit,
              cursor: cursor)
      end

      # The payment as it is now (the polling path).
      # `GET /payments/{id}`
      # @param id [String] `pay_...`
      # @return [Models::Payment]
      def retrieve(id)
        call(:get, "/payments/#{seg(id)}", model: Models::Payment)
      end

      # Cancels a `pending` payment (409 `payment_not_cancelable` otherwise).
      # `POST /payments/{id}/cancel`
      # @param id [String] `pay_...`
      # @return [Models::Payment]
      def cancel(id)
        call(:post, "/payments/#{seg(id)}/cancel", model: Models::Payment, body: empty_body)
      end
    end
  end
end
