# frozen_string_literal: true

require_relative "test_helper"

# Every operation of the OpenAPI document has a client method, and each method sends its
# operation's method and path. A route added to the API fails here until the client has it.
# (integration_test.rb then checks that the suite called every route on the real server.)
class OpenAPIRoutesTest < Minitest::Test
  # "METHOD /path" => how the client calls it.
  ROUTES = {
    "POST /platforms" => ->(c) { c.platforms.register(name: "n", contact_email: "e@x.co") },
    "GET /operator/platforms" => ->(c) { c.platforms.list },
    "GET /operator/platforms/{id}" => ->(c) { c.platforms.retrieve("plt_1") },
    "PATCH /operator/platforms/{id}" => ->(c) { c.platforms.update("plt_1", revenue_share_rate: "0.1") },
    "POST /operator/platforms/{id}/approve" => ->(c) { c.platforms.approve("plt_1") },
    "POST /operator/platforms/{id}/enable-live" => ->(c) { c.platforms.enable_live("plt_1") },
    "POST /operator/platforms/{id}/fund" => ->(c) { c.platforms.fund("plt_1", amount: 1) },
    "GET /platform" => ->(c) { c.platform.retrieve },
    "GET /platform/settings" => ->(c) { c.platform.settings.retrieve },
    "PATCH /platform/settings" => ->(c) { c.platform.settings.update(daily_payment_limit: nil) },
    "POST /platform/api-keys" => ->(c) { c.platform.api_keys.create(name: "k") },
    "GET /platform/api-keys" => ->(c) { c.platform.api_keys.list },
    "DELETE /platform/api-keys/{id}" => ->(c) { c.platform.api_keys.revoke("key_1") },
    "POST /platform/api-keys/{id}/roll" => ->(c) { c.platform.api_keys.roll("key_1") },
    "GET /platform/revenue-share" => ->(c) { c.platform.revenue_share(from: "2026-01-01", to: "2026-01-31") },
    "POST /virtual-accounts" => ->(c) { c.virtual_accounts.create(platform_id: "plt_1", entity_ref: "e", type: "checking") },
    "GET /virtual-accounts" => ->(c) { c.virtual_accounts.list },
    "GET /virtual-accounts/{id}" => ->(c) { c.virtual_accounts.retrieve("va_1") },
    "GET /virtual-accounts/{id}/balance" => ->(c) { c.virtual_accounts.balance("va_1") },
    "GET /virtual-accounts/{id}/transactions" => ->(c) { c.virtual_accounts.transactions("va_1") },
    "GET /virtual-accounts/{id}/statements/{month}" => ->(c) { c.virtual_accounts.statement("va_1", "2026-01") },
    "POST /virtual-accounts/{id}/freeze" => ->(c) { c.virtual_accounts.freeze("va_1") },
    "POST /virtual-accounts/{id}/unfreeze" => ->(c) { c.virtual_accounts.unfreeze("va_1") },
    "POST /virtual-accounts/{id}/close" => ->(c) { c.virtual_accounts.close("va_1") },
    "GET /ledger/accounts" => ->(c) { c.ledger.accounts.list },
    "GET /ledger/entries" => ->(c) { c.ledger.entries.list },
    "POST /ledger/entries" => ->(c) { c.ledger.entries.create(reverses: "je_1") },
    "GET /ledger/exports" => ->(c) { c.ledger.export },
    "GET /ledger/journal-entries" => ->(c) { c.ledger.journal_entries.list },
    "GET /ledger/journal-entries/{id}" => ->(c) { c.ledger.journal_entries.retrieve("je_1") },
    "POST /payments" => lambda { |c|
      c.payments.create(virtual_account_id: "va_1", amount: 1, rail: "rtp",
                        destination: { account_number: "1234", routing_number: "021000021", name: "n" })
    },
    "GET /payments" => ->(c) { c.payments.list },
    "GET /payments/{id}" => ->(c) { c.payments.retrieve("pay_1") },
    "POST /payments/{id}/cancel" => ->(c) { c.payments.cancel("pay_1") },
    "POST /payments/{id}/approve" => ->(c) { c.payments.approve("pay_1") },
    "POST /payments/{id}/deny" => ->(c) { c.payments.deny("pay_1", reason: "r") },
    "POST /book-transfers" => lambda { |c|
      c.book_transfers.create(from_virtual_account_id: "va_1", to_virtual_account_id: "va_2", amount: 1)
    },
    "GET /book-transfers" => ->(c) { c.book_transfers.list },
    "GET /book-transfers/{id}" => ->(c) { c.book_transfers.retrieve("bt_1") },
    "POST /counterparties" => lambda { |c|
      c.counterparties.create(name: "n", account_number: "1234", routing_number: "021000021", account_type: "checking")
    },
    "GET /counterparties" => ->(c) { c.counterparties.list },
    "GET /counterparties/{id}" => ->(c) { c.counterparties.retrieve("cp_1") },
    "DELETE /counterparties/{id}" => ->(c) { c.counterparties.delete("cp_1") },
    "POST /counterparties/{id}/verify" => ->(c) { c.counterparties.verify("cp_1") },
    "POST /kyb" => ->(c) { c.kyb.create(virtual_account_id: "va_1", business: {}, beneficial_owners: []) },
    "GET /kyb" => ->(c) { c.kyb.list },
    "GET /kyb/{id}" => ->(c) { c.kyb.retrieve("kyb_1") },
    "POST /operator/kyb/{id}/decision" => ->(c) { c.kyb.decide("kyb_1", outcome: "approved") },
    "POST /simulations/inbound-transfers" => lambda { |c|
      c.simulations.inbound_transfers.create(virtual_account_id: "va_1", amount: 1, rail: "rtp", originator: {})
    },
    "POST /simulations/kyb/{id}/decision" => ->(c) { c.simulations.kyb.decide("kyb_1", outcome: "approved") },
    "POST /simulations/payments/{id}/complete" => ->(c) { c.simulations.payments.complete("pay_1") },
    "POST /simulations/payments/{id}/fail" => ->(c) { c.simulations.payments.fail("pay_1", network_code: "R01") },
    "POST /simulations/payments/{id}/release" => ->(c) { c.simulations.payments.release("pay_1") },
    "GET /events" => ->(c) { c.events.list },
    "GET /events/{id}" => ->(c) { c.events.retrieve("evt_1") },
    "POST /webhooks" => ->(c) { c.webhooks.create(url: "http://127.0.0.1/hook") },
    "GET /webhooks" => ->(c) { c.webhooks.list },
    "GET /webhooks/{id}" => ->(c) { c.webhooks.retrieve("wh_1") },
    "PATCH /webhooks/{id}" => ->(c) { c.webhooks.update("wh_1", description: "d") },
    "DELETE /webhooks/{id}" => ->(c) { c.webhooks.delete("wh_1") },
    "POST /webhooks/{id}/rotate-secret" => ->(c) { c.webhooks.rotate_secret("wh_1") },
    "POST /webhooks/{id}/test" => ->(c) { c.webhooks.test("wh_1") },
    "POST /webhooks/{id}/replay" => lambda { |c|
      c.webhooks.replay("wh_1", created_after: "2026-01-01", created_before: "2026-01-02")
    },
    "GET /webhooks/{id}/deliveries" => ->(c) { c.webhooks.deliveries.list("wh_1") },
    "POST /webhooks/{id}/deliveries/{delivery_id}/retry" => ->(c) { c.webhooks.deliveries.retry("wh_1", "msg_1") },
    "GET /operator/rails/ach/files" => ->(c) { c.rails.ach_files.list },
    "POST /operator/rails/ach/files" => ->(c) { c.rails.ach_files.cut }
  }.freeze

  # "METHOD /path" of each operation with query parameters => how the client calls it with them.
  QUERY_ROUTES = {
    "GET /operator/platforms" => ->(c, **q) { c.platforms.list(**q) },
    "GET /platform/api-keys" => ->(c, **q) { c.platform.api_keys.list(**q) },
    "GET /platform/revenue-share" => ->(c, **q) { c.platform.revenue_share(**q) },
    "GET /virtual-accounts" => ->(c, **q) { c.virtual_accounts.list(**q) },
    "GET /virtual-accounts/{id}/balance" => ->(c, **q) { c.virtual_accounts.balance("va_1", **q) },
    "GET /virtual-accounts/{id}/transactions" => ->(c, **q) { c.virtual_accounts.transactions("va_1", **q) },
    "GET /virtual-accounts/{id}/statements/{month}" => ->(c, **q) { c.virtual_accounts.statement("va_1", "2026-01", **q) },
    "GET /ledger/accounts" => ->(c, **q) { c.ledger.accounts.list(**q) },
    "GET /ledger/entries" => ->(c, **q) { c.ledger.entries.list(**q) },
    "GET /ledger/exports" => ->(c, **q) { c.ledger.export(**q) },
    "GET /ledger/journal-entries" => ->(c, **q) { c.ledger.journal_entries.list(**q) },
    "GET /payments" => ->(c, **q) { c.payments.list(**q) },
    "GET /book-transfers" => ->(c, **q) { c.book_transfers.list(**q) },
    "GET /counterparties" => ->(c, **q) { c.counterparties.list(**q) },
    "GET /kyb" => ->(c, **q) { c.kyb.list(**q) },
    "GET /events" => ->(c, **q) { c.events.list(**q) },
    "GET /webhooks" => ->(c, **q) { c.webhooks.list(**q) },
    "GET /webhooks/{id}/deliveries" => ->(c, **q) { c.webhooks.deliveries.list("wh_1", **q) },
    "GET /operator/rails/ach/files" => ->(c, **q) { c.rails.ach_files.list(**q) }
  }.freeze

  # Routes that are not the API's resources.
  NOT_CLIENT_ROUTES = ["GET /openapi.json"].freeze

  def self.operations
    doc = JSON.parse(File.read(OPENAPI_PATH))
    doc["paths"].flat_map do |path, item|
      item.keys.select { |m| %w[get post put patch delete].include?(m) }.map { |m| "#{m.upcase} #{path}" }
    end
  end

  # "GET /payments" => {"limit" => {"in" => "query", ...}, "metadata" => {..., "style" => "deepObject"}, ...}
  def self.query_parameters
    doc = JSON.parse(File.read(OPENAPI_PATH))
    resolve = lambda do |param|
      ref = param["$ref"]
      ref ? doc.dig(*ref.delete_prefix("#/").split("/")) : param
    end
    doc["paths"].each_with_object({}) do |(path, item), out|
      item.each do |method, op|
        next unless %w[get post put patch delete].include?(method)

        params = ((item["parameters"] || []) + (op["parameters"] || [])).map(&resolve).select { |p| p["in"] == "query" }
        out["#{method.upcase} #{path}"] = params.to_h { |p| [p["name"], p] } unless params.empty?
      end
    end
  end

  # "GET /payments/{id}" => /\AGET \/v1\/payments\/[^\/?]+(\?|\z)/
  def self.matcher(route, prefix = "")
    method, path = route.split(" ", 2)
    pattern = Regexp.escape(path).gsub(/\\\{[^}]+\\\}/, "[^/?]+")
    Regexp.new("\\A#{method} #{Regexp.escape(prefix)}#{pattern}(\\?|\\z)")
  end

  def test_every_operation_has_a_client_method
    ops = self.class.operations - NOT_CLIENT_ROUTES
    assert_empty ops - ROUTES.keys, "operations of openapi.json without a client method in ROUTES"
    assert_empty ROUTES.keys - ops, "ROUTES entries that openapi.json does not have"
  end

  def test_every_query_parameter_has_a_client_parameter
    params = self.class.query_parameters
    assert_empty params.keys - QUERY_ROUTES.keys, "operations with query parameters missing from QUERY_ROUTES"
    assert_empty QUERY_ROUTES.keys - params.keys, "QUERY_ROUTES entries without query parameters in openapi.json"
  end

  # Each query parameter of the document, given to its method, goes over the wire under its name
  # (a deepObject one as `name[key]=value`).
  def test_each_query_parameter_is_sent
    stub = StubServer.new do
      [200, { "Content-Type" => "application/json" }, '{"object":"list","data":[],"has_more":false,"next_cursor":null}']
    end
    client = Treasury::Client.new(api_key: "k", base_url: stub.url("/v1"), max_retries: 0)
    self.class.query_parameters.each do |route, params|
      args = params.to_h do |name, param|
        value = param["style"] == "deepObject" ? { "k" => "v" } : "x"
        [name.to_sym, value]
      end
      before = stub.requests.size
      QUERY_ROUTES.fetch(route).call(client, **args)
      sent = URI.decode_www_form(URI.parse(stub.requests[before].path).query.to_s).map(&:first)
      expected = params.map { |name, param| param["style"] == "deepObject" ? "#{name}[k]" : name }
      assert_equal expected.sort, sent.sort, "#{route} sent #{sent.inspect}"
    end
  ensure
    stub&.close
  end

  def test_each_method_sends_its_operation
    stub = StubServer.new do
      [200, { "Content-Type" => "application/json" }, '{"object":"list","data":[],"has_more":false,"next_cursor":null}']
    end
    client = Treasury::Client.new(api_key: "k", base_url: stub.url("/v1"), max_retries: 0)
    ROUTES.each do |route, call|
      before = stub.requests.size
      call.call(client)
      sent = stub.requests[before..]
      assert_equal 1, sent.size, "#{route}: one request"
      line = "#{sent.first.method} #{sent.first.path}"
      assert_match self.class.matcher(route, "/v1"), line, "#{route} sent #{line}"
    end
  ensure
    stub&.close
  end
end
