# frozen_string_literal: true

# The Ruby client of the Treasury API: virtual accounts, payments over ACH, RTP and FedNow, book
# transfers, counterparties, KYB, the ledger, webhooks and events. Standard library only.
#
# @example
#   require "treasury"
#
#   client = Treasury::Client.new(api_key: "sk_sandbox_...", base_url: "http://localhost:8080/v1")
#   payment = client.payments.create(
#     virtual_account_id: "va_...", amount: 1_500, rail: "rtp",
#     destination: { account_number: "123456789", routing_number: "021000021", name: "Globex" }
#   )
#
# See {Treasury::Client}, {Treasury::Webhooks.verify} and the error classes ({Treasury::APIError}).
module Treasury
  # The default of an optional parameter: the parameter is left out of the request. (Passing nil
  # sends JSON null, which some updates use to clear a value.)
  NOT_GIVEN = Object.new.tap do |o|
    def o.inspect = "Treasury::NOT_GIVEN"
    def o.to_s = "NOT_GIVEN"
  end.freeze
end

require_relative "treasury/version"
require_relative "treasury/errors"
require_relative "treasury/model"
require_relative "treasury/models"
require_relative "treasury/page"
require_relative "treasury/transport"
require_relative "treasury/webhooks"
require_relative "treasury/resources/base"
require_relative "treasury/resources/platforms"
require_relative "treasury/resources/platform"
require_relative "treasury/resources/virtual_accounts"
require_relative "treasury/resources/payments"
require_relative "treasury/resources/book_transfers"
require_relative "treasury/resources/counterparties"
require_relative "treasury/resources/kyb"
require_relative "treasury/resources/ledger"
require_relative "treasury/resources/webhooks"
require_relative "treasury/resources/events"
require_relative "treasury/resources/simulations"
require_relative "treasury/resources/rails"
require_relative "treasury/client"
