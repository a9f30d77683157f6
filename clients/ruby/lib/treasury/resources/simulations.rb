# frozen_string_literal: true

module Treasury
  module Resources
    # Sandbox simulations of the outside world (`/simulations`). Sandbox keys only.
    class Simulations < Base
      # @return [SimulatedInboundTransfers]
      def inbound_transfers
        @inbound_transfers ||= SimulatedInboundTransfers.new(@client)
      end

      # @return [SimulatedKYB]
      def kyb
        @kyb ||= SimulatedKYB.new(@client)
      end

      # @return [SimulatedPayments]
      def payments
        @payments ||= SimulatedPayments.new(@client)
      end
    end

    # Simulated inbound funds (`/simulations/inbound-transfers`).
    class SimulatedInboundTransfers < Base
      # Funds arriving in a virtual account: rtp and fednow credit at once, ACH after the
      # platform's sandbox delay.
      # `POST /simulations/inbound-transfers`
      #
      # @param virtual_account_id [String] `va_...`
      # @param amount [Integer] cents
      # @param rail [String]
      # @param originator [Hash] `{name:, account_number:, routing_number:}`
      # @param description [String]
      # @param idempotency_key [String, nil]
      # @return [Models::InboundTransfer]
      def create(virtual_account_id:, amount:, rail:, originator:, description: NOT_GIVEN, idempotency_key: nil)
        call(:post, "/simulations/inbound-transfers", model: Models::InboundTransfer,
                                                      body: compact(virtual_account_id: virtual_account_id,
                                                                    amount: amount, rail: rail,
                                                                    originator: originator, description: description),
                                                      idempotency_key: idempotency_key)
      end
    end

    # Simulated KYB decisions (`/simulations/kyb`).
    class SimulatedKYB < Base
      # Decides a verification in `pending_review`, as the operator would.
      # `POST /simulations/kyb/{id}/decision`
      #
      # @param id [String] `kyb_...`
      # @param outcome [String] `approved` or `rejected`
      # @param reasons [Array<Hash>, nil] `{code:, message:, field:}`
      # @return [Models::KYBVerification]
      def decide(id, outcome:, reasons: NOT_GIVEN)
        call(:post, "/simulations/kyb/#{seg(id)}/decision", model: Models::KYBVerification,
                                                            body: compact(outcome: outcome, reasons: reasons))
      end
    end

    # Simulated payment outcomes (`/simulations/payments`).
    class SimulatedPayments < Base
      # Settles a payment now.
      # `POST /simulations/payments/{id}/complete`
      # @param id [String] `pay_...`
      # @return [Models::Payment]
      def complete(id)
        call(:post, "/simulations/payments/#{seg(id)}/complete", model: Models::Payment, body: empty_body)
      end

      # Fails (or returns) a payment with a rail's code.
      # `POST /simulations/payments/{id}/fail`
      # @param id [String] `pay_...`
      # @param network_code [String] e.g. `R02`, `AC04`
      # @return [Models::Payment]
      def fail(id, network_code:)
        call(:post, "/simulations/payments/#{seg(id)}/fail", model: Models::Payment,
                                                             body: { network_code: network_code })
      end

      # Releases a `scheduled` payment now, as the service does at 06:00 ET on its `scheduled_for`
      # date: the payment rules run on today's balance, daily limit, fee and approval threshold.
      # Passed: held (`journal_entry_id` set) and `pending` (the sandbox's rails then take it), or
      # `requires_approval` at the platform's threshold; event `payment.released`. Refused by a rule:
      # `failed`, `failure.code` the rule's (`insufficient_funds`, `limit_exceeded`,
      # `account_not_active`, `kyb_not_approved`, `compliance_rejected`), `failure.network_code` nil,
      # nothing held; event `payment.failed`. Takes no body.
      # `POST /simulations/payments/{id}/release`
      # @param id [String] `pay_...`
      # @return [Models::Payment] `pending` (or later, on an instant rail), `requires_approval` or `failed`
      # @raise [ConflictError] `invalid_state`: the payment is not `scheduled` (released already, or
      #   canceled): a payment is released once
      # @raise [NotFoundError] another platform's payment, or a live one
      def release(id)
        call(:post, "/simulations/payments/#{seg(id)}/release", model: Models::Payment, body: empty_body)
      end
    end
  end
end
