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
      # @param destination [Hash] `{account_number:, routing_number:, name:}`; or give `counterparty_id`
      #   instead (exactly one of the two: both or neither is {BadRequestError} with `param`
      #   `counterparty_id`)
      # @param counterparty_id [String] `cp_...`: one of the platform's counterparties in the key's
      #   environment (`client.counterparties`), whose name, account and routing numbers the payment
      #   copies into its `destination`; the payment shows `counterparty_id`. With the platform setting
      #   `require_verified_counterparty` on, it must be `verified`
      # @param description [String] up to 140 characters
      # @param metadata [Hash{String=>String}]
      # @param idempotency_key [String, nil] 1..255 characters; a random one when nil
      # @param scheduled_for [Date, String] a date (Eastern) after today and at most 365 days ahead
      #   (a `Date` is sent as `YYYY-MM-DD`): the payment is created `scheduled`, with nothing held and
      #   no journal entry, and released at 06:00 ET on that date (the rules run again then: held and
      #   `pending`, or `requires_approval`, event `payment.released`; or `failed` with the rule's code
      #   and a null `failure.network_code`). Cancel it meanwhile with {#cancel}; in the sandbox,
      #   `client.simulations.payments.release` releases it at once
      # @return [Models::Payment] `pending` (new; `requires_approval`, with an `approval`, when `amount`
      #   is at or above the platform's `payment_approval_threshold`; `scheduled`, with `scheduled_for`
      #   and a null `journal_entry_id`, when scheduled) or the original payment (a replay).
      #   Its `journal_entry_id` names the journal entry holding amount + fee from now on
      #   (`client.ledger.journal_entries.retrieve`: pending, posted at completion, archived if released).
      # @raise [BadRequestError] `param` `scheduled_for`: not a date, today or before, or over 365 days
      #   ahead; `param` `counterparty_id`: both `destination` and `counterparty_id`, or neither, or an
      #   id that is not `cp_...`
      # @raise [NotFoundError] `param` `counterparty_id`: an unknown or deleted counterparty, or another
      #   platform's or environment's
      # @raise [UnprocessableEntityError] a business rule, e.g. `counterparty_not_verified` (the setting
      #   `require_verified_counterparty` is on and the counterparty is not `verified`, `resource_id`
      #   naming it; or the payment goes to a raw `destination`, `param` `destination`)
      def create(virtual_account_id:, amount:, rail:, destination: NOT_GIVEN, counterparty_id: NOT_GIVEN,
                 description: NOT_GIVEN, metadata: NOT_GIVEN, idempotency_key: nil, scheduled_for: NOT_GIVEN)
        key = idempotency_key || SecureRandom.uuid
        scheduled_for = scheduled_for.strftime("%Y-%m-%d") if scheduled_for.is_a?(Date)
        body = compact(virtual_account_id: virtual_account_id, amount: amount, rail: rail, destination: destination,
                       counterparty_id: counterparty_id, idempotency_key: key, description: description,
                       metadata: metadata, scheduled_for: scheduled_for)
        call(:post, "/payments", model: Models::Payment, body: body, idempotency_key: key)
      end

      # `GET /payments`
      #
      # @param virtual_account_id [String]
      # @param status [String] `scheduled`, `requires_approval`, `pending`, `submitted`, `completed`,
      #   `failed`, `canceled` or `denied`
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

      # Cancels a `pending` payment, or one in `requires_approval`: its hold is released; or a
      # `scheduled` one, which held nothing (409 `payment_not_cancelable` otherwise, e.g. a `submitted`
      # or `denied` one).
      # `POST /payments/{id}/cancel`
      # @param id [String] `pay_...`
      # @return [Models::Payment]
      def cancel(id)
        call(:post, "/payments/#{seg(id)}/cancel", model: Models::Payment, body: empty_body)
      end

      # Approves a payment in `requires_approval` (one created at or above the platform's
      # `payment_approval_threshold`): it becomes `pending` and goes to its rail from now on (its
      # `expected_settlement_at` counts from the approval); `approval.approved_at` and
      # `approval.approved_by` are set and `payment.approved` is emitted. The client's key must not be
      # the one that created the payment (`approval.created_by`): an approval takes a second key of the
      # platform (see {APIKeys#create}). Takes no body.
      # `POST /payments/{id}/approve`
      #
      # @param id [String] `pay_...`
      # @return [Models::Payment] `pending`
      # @raise [PermissionDeniedError] `forbidden`: the key created the payment (or is the operator's)
      # @raise [ConflictError] `invalid_state`: the payment is not `requires_approval` (a retry of an
      #   approval whose answer was lost gets this too: {#retrieve} tells whether it went through)
      # @raise [NotFoundError] another platform's or environment's payment, or an unknown one
      def approve(id)
        call(:post, "/payments/#{seg(id)}/approve", model: Models::Payment, body: empty_body)
      end

      # Denies a payment in `requires_approval`: it becomes `denied` (final), its amount + fee held are
      # released, `approval.denied_at`, `approval.denied_by` and `approval.denial_reason` are set and
      # `payment.denied` is emitted. Any key of the platform may deny, the creating key included (to
      # withdraw a payment). Not idempotent either: a retry of a denial that went through gets 409
      # `invalid_state`.
      # `POST /payments/{id}/deny`
      #
      # @param id [String] `pay_...`
      # @param reason [String] at most 500 characters, kept as `approval.denial_reason` (an empty one is
      #   kept as null, like none)
      # @return [Models::Payment] `denied`
      # @raise [BadRequestError] a `reason` over 500 characters (`param` `reason`)
      # @raise [ConflictError] `invalid_state`: the payment is not `requires_approval`
      # @raise [NotFoundError] another platform's or environment's payment, or an unknown one
      def deny(id, reason: NOT_GIVEN)
        call(:post, "/payments/#{seg(id)}/deny", model: Models::Payment, body: compact(reason: reason))
      end
    end
  end
end
