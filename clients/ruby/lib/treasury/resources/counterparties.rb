# frozen_string_literal: true

module Treasury
  module Resources
    # Counterparties (`/counterparties`): bank accounts the platform pays again and again, saved once
    # (in the key's environment) and paid with `client.payments.create(counterparty_id: "cp_...")`.
    # The whole account number is stored but never shown: only `account_number_last4`.
    class Counterparties < Base
      # Saves a bank account. Checked as a payment's destination is (400, `param` the field). It
      # starts `verification.status` `unverified` (`method` nil). The idempotency key (yours, else a
      # random one) goes in the `Idempotency-Key` header, the same on every retry: the same key and body
      # return the first counterparty (200, `Idempotent-Replayed: true`); another body under the key
      # raises {ConflictError} (`idempotency_conflict`, the counterparty in `resource_id`).
      # `POST /counterparties`
      #
      # @param name [String] the account holder's name, 1 to 80 characters
      # @param account_number [String] 4 to 17 digits (in the sandbox, the magic numbers of payments
      #   fail a prenote with their ACH return code: 4000000002 R02, ...03 R03, ...04 R04, ...16 R16,
      #   ...23 R23)
      # @param routing_number [String] 9 digits with a valid ABA checksum
      # @param account_type [String] `checking` or `savings`
      # @param metadata [Hash{String=>String}]
      # @param idempotency_key [String, nil] a random one when nil
      # @return [Models::Counterparty] `unverified` (new) or the first counterparty (a replay)
      # @raise [BadRequestError] a bad field (`param` names it)
      # @raise [NotFoundError] a replay of a key whose counterparty was deleted since
      # @raise [ConflictError] `idempotency_conflict`
      def create(name:, account_number:, routing_number:, account_type:, metadata: NOT_GIVEN, idempotency_key: nil)
        body = compact(name: name, account_number: account_number, routing_number: routing_number,
                       account_type: account_type, metadata: metadata)
        call(:post, "/counterparties", model: Models::Counterparty, body: body, idempotency_key: idempotency_key)
      end

      # The platform's counterparties in the key's environment, newest first (deleted ones left out),
      # the filters combined and kept on every page's request.
      # `GET /counterparties`
      #
      # @param verification_status [String] `unverified`, `pending`, `verified` or `failed`
      # @param metadata [Hash{String=>String}] only counterparties whose metadata has every pair, sent
      #   as `metadata[key]=value`
      # @param created_after [Time, Date, String] inclusive
      # @param created_before [Time, Date, String] exclusive
      # @param limit [Integer]
      # @param cursor [String]
      # @return [Page<Models::Counterparty>]
      # @raise [BadRequestError] a bad filter (`param` names it)
      def list(verification_status: NOT_GIVEN, metadata: NOT_GIVEN, created_after: NOT_GIVEN,
               created_before: NOT_GIVEN, limit: NOT_GIVEN, cursor: NOT_GIVEN)
        paged("/counterparties", Models::Counterparty,
              verification_status: verification_status, metadata: metadata, created_after: created_after,
              created_before: created_before, limit: limit, cursor: cursor)
      end

      # `GET /counterparties/{id}`
      # @param id [String] `cp_...`
      # @return [Models::Counterparty]
      # @raise [NotFoundError] an unknown or deleted counterparty, or another platform's or environment's
      def retrieve(id)
        call(:get, "/counterparties/#{seg(id)}", model: Models::Counterparty)
      end

      # Deletes a counterparty: from then on it is {NotFoundError} everywhere (new payments naming it
      # too) and it leaves the list. Payments already made to it keep the destination they copied and
      # complete. A prenote still pending is dropped.
      # `DELETE /counterparties/{id}`
      # @param id [String] `cp_...`
      # @return [Models::DeletedCounterparty] `deleted` true
      # @raise [NotFoundError]
      def delete(id)
        call(:delete, "/counterparties/#{seg(id)}", model: Models::DeletedCounterparty)
      end

      # Verifies the account by a zero-dollar ACH prenote: `verification.status` becomes `pending`
      # (`method` `prenote`). In the sandbox the answer comes after the platform's
      # `sandbox.ach_same_day_delay_seconds` (default 5 s): `verified` (event `counterparty.verified`),
      # or `failed` with `failure_code` the return code for the magic account numbers (event
      # `counterparty.verification_failed`). Poll {#retrieve} or listen to those events. A `failed`
      # counterparty may be verified again.
      #
      # With a live key the answer is the same (`pending`, `method` `prenote`): the prenote leaves in
      # the next outbound ACH file (a zero-dollar entry, transaction code 23, or 33 to a savings
      # account). It becomes `verified` when its entry settles without a return (event
      # `counterparty.verified`), or `failed` with the return code when the receiving bank returns it,
      # even after it was verified (event `counterparty.verification_failed`). Nothing answers quickly
      # in live: it stays `pending` until a file is cut and settled.
      # `POST /counterparties/{id}/verify`
      #
      # @param id [String] `cp_...`
      # @param method [String] `prenote`, the one method
      # @return [Models::Counterparty] `pending`
      # @raise [ConflictError] `invalid_state`: it is `pending` or `verified` already (either environment)
      # @raise [NotFoundError]
      def verify(id, method: "prenote")
        call(:post, "/counterparties/#{seg(id)}/verify", model: Models::Counterparty, body: { method: method })
      end
    end
  end
end
