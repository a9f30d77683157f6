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
    end
  end
end
