# frozen_string_literal: true

module Treasury
  module Resources
    # Know-Your-Business verifications (`/kyb`).
    class KYB < Base
      # Submits a business for verification.
      # `POST /kyb`
      #
      # @param virtual_account_id [String] `va_...`
      # @param business [Hash] `{legal_name:, ein:, entity_type:, formation_date:, formation_state:,
      #   address: {line1:, city:, state:, postal_code:, country: "US"}, dba:, website:, naics_code:, phone:}`
      # @param beneficial_owners [Array<Hash>] `{first_name:, last_name:, date_of_birth:, ssn_last4:,
      #   ownership_percentage:, is_control_person:, title:, address:}`
      # @param idempotency_key [String, nil]
      # @return [Models::KYBVerification] `pending`
      def create(virtual_account_id:, business:, beneficial_owners:, idempotency_key: nil)
        call(:post, "/kyb", model: Models::KYBVerification,
                            body: { virtual_account_id: virtual_account_id, business: business,
                                    beneficial_owners: beneficial_owners },
                            idempotency_key: idempotency_key)
      end
      alias submit create

      # `GET /kyb`
      #
      # @param virtual_account_id [String]
      # @param status [String] `pending`, `pending_review`, `approved` or `rejected`
      # @param limit [Integer]
      # @param cursor [String]
      # @return [Page<Models::KYBVerification>]
      def list(virtual_account_id: NOT_GIVEN, status: NOT_GIVEN, limit: NOT_GIVEN, cursor: NOT_GIVEN)
        paged("/kyb", Models::KYBVerification,
              virtual_account_id: virtual_account_id, status: status, limit: limit, cursor: cursor)
      end

      # `GET /kyb/{id}`
      # @param id [String] `kyb_...`
      # @return [Models::KYBVerification]
      def retrieve(id)
        call(:get, "/kyb/#{seg(id)}", model: Models::KYBVerification)
      end

      # Decides a verification in `pending_review`. Operator key only.
      # `POST /operator/kyb/{id}/decision`
      #
      # @param id [String] `kyb_...`
      # @param outcome [String] `approved` or `rejected`
      # @param reasons [Array<Hash>, nil] `{code:, message:, field:}`
      # @return [Models::KYBVerification]
      def decide(id, outcome:, reasons: NOT_GIVEN)
        call(:post, "/operator/kyb/#{seg(id)}/decision", model: Models::KYBVerification,
                                                         body: compact(outcome: outcome, reasons: reasons))
      end
    end
  end
end
