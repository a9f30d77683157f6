# frozen_string_literal: true

require_relative "test_helper"
require "date"
require "time"

# The journey against a real `treasury serve` (sandbox), named by TREASURY_BASE_URL and
# TREASURY_OPERATOR_KEY: platform, accounts, KYB, inbound funds, payments on the four rails,
# a journal entry, every page of a list, a webhook received and verified, each error class from a
# real answer, a real 429 honoured, and every other route at least once. The steps run in order
# and share what they made; the last one checks that every route of the API was called.
class IntegrationTest < Minitest::Test
  include TestHelpers
  i_suck_and_my_tests_are_order_dependent!

  BASE_URL = ENV.fetch("TREASURY_BASE_URL", "")
  OPERATOR_KEY = ENV.fetch("TREASURY_OPERATOR_KEY", "")
  RUN = "#{Time.now.utc.strftime("%Y%m%d%H%M%S")}-#{SecureRandom.hex(4)}"
  S = {} # what the steps made, shared between them
  GOOD = { account_number: "123456789", routing_number: "021000021", name: "Globex Supplies" }.freeze
  ORIGINATOR = { name: "Initech Funding", account_number: "987654321", routing_number: "021000021" }.freeze
  ADDRESS = { line1: "1 Market St", city: "San Francisco", state: "CA", postal_code: "94105", country: "US" }.freeze

  def setup
    return unless BASE_URL.empty? || OPERATOR_KEY.empty?

    flunk "TREASURY_BASE_URL and TREASURY_OPERATOR_KEY must name a running treasury serve " \
          "(e.g. TREASURY_BASE_URL=http://127.0.0.1:8080/v1)"
  end

  def operator
    @operator ||= Treasury::Client.new(api_key: OPERATOR_KEY, base_url: BASE_URL)
  end

  def client
    @client ||= Treasury::Client.new(api_key: S.fetch(:sandbox_key), base_url: BASE_URL)
  end

  def kyb_body(account_id, ein:, name: "Acme #{RUN} LLC")
    {
      virtual_account_id: account_id,
      business: {
        legal_name: name, ein: ein, entity_type: "llc", formation_date: "2019-04-01",
        formation_state: "DE", address: ADDRESS, website: "https://acme.example"
      },
      beneficial_owners: [{
        first_name: "Ada", last_name: "Lovelace", date_of_birth: "1985-12-10", ssn_last4: "1234",
        ownership_percentage: "60", is_control_person: true, title: "CEO", address: ADDRESS
      }]
    }
  end

  def pay(rail, amount, destination: GOOD, account: S[:a], **opts)
    client.payments.create(virtual_account_id: account, amount: amount, rail: rail, destination: destination, **opts)
  end

  def poll_payment(id, *statuses, timeout: 15)
    wait_until("payment #{id} to be #{statuses.join(" or ")}", timeout: timeout) do
      p = client.payments.retrieve(id)
      statuses.include?(p.status) ? p : nil
    end
  end

  # GET /ledger/journal-entries/{id}: checks that the entry, and each of its lines, names `source`
  # (`{type:, id:}`) and stands in `status`, and that it balances. Returns the entry.
  def assert_journal_entry(id, source, status)
    assert_match(/\Aje_[0-9a-hjkmnp-tv-z]{26}\z/, id.to_s)
    entry = client.ledger.journal_entries.retrieve(id)
    assert_equal id, entry.id
    assert_kind_of Treasury::Models::Source, entry.source
    assert_equal source, entry.source.to_h, "#{id}: the journal entry's source"
    assert_equal status, entry.status, "#{id}: its status"
    assert_operator entry.entries.size, :>=, 2
    entry.entries.each do |line|
      assert_kind_of Treasury::Models::Source, line.source
      assert_equal [id, source, status], [line.journal_entry_id, line.source.to_h, line.status], "#{line.id} of #{id}"
    end
    debits, credits = entry.entries.partition { |line| line.direction == "debit" }
    assert_equal debits.sum(&:amount), credits.sum(&:amount), "#{id} is balanced"
    entry
  end

  # A payment's lines on its own account, as [type, direction, amount]: its amount and its fee.
  def own_lines(entry, payment)
    entry.entries.select { |l| l.virtual_account_id == payment.virtual_account_id }
         .map { |l| [l.type, l.direction, l.amount] }.sort
  end

  def payment_lines(payment)
    lines = [["payment", "debit", payment.amount]]
    lines << ["payment_fee", "debit", payment.fee] if payment.fee.positive? # no fee, no fee lines
    lines.sort
  end

  # --- the journey --------------------------------------------------------------------------

  def test_01_register_approve_and_configure_a_platform
    platform = operator.platforms.register(name: "ruby-client #{RUN}", contact_email: "ops+#{RUN}@acme.example",
                                           metadata: { "run" => RUN })
    assert_match(/\Aplt_/, platform.id)
    assert_equal "pending_approval", platform.status
    assert_equal({ "run" => RUN }, platform.metadata)
    assert_kind_of Treasury::Models::FeeSchedule, platform.fee_schedule
    S[:platform] = platform.id

    assert_equal platform.id, operator.platforms.retrieve(platform.id).id
    # A second platform, for the rate limit of step 15 (and so that a fresh server lists two).
    other = operator.platforms.register(name: "ruby-client rate #{RUN}", contact_email: "rate+#{RUN}@acme.example")
    S[:other] = other.id
    # Lazy paging: the first 2 platforms take two pages of 1, not the whole list.
    before = Recorder.calls.size
    first2 = operator.platforms.list(limit: 1).first(2)
    assert_equal 2, first2.size
    assert(first2.all? { |p| p.is_a?(Treasury::Models::Platform) })
    assert_equal 2, Recorder.calls[before..].count { |c| c.uri.path.end_with?("/operator/platforms") && ![429, 503].include?(c.status) }

    approved = operator.platforms.approve(platform.id)
    assert_kind_of Treasury::Models::PlatformWithKeys, approved
    assert_equal "approved", approved.status
    assert_match(/\Ask_sandbox_/, approved.sandbox_api_key.secret)
    S[:sandbox_key] = approved.sandbox_api_key.secret
    S[:sandbox_key_id] = approved.sandbox_api_key.id

    updated = operator.platforms.update(platform.id, revenue_share_rate: "0.30", interest_rate: "0.045",
                                                     fee_schedule: { rtp: 60 })
    assert_equal "0.30", updated.revenue_share_rate
    assert_equal 60, updated.fee_schedule.rtp
    assert_equal 25, updated.fee_schedule.ach_standard

    funding = operator.platforms.fund(platform.id, amount: 1_000_000, environment: "sandbox",
                                                   description: "seed money")
    assert_equal "funding", funding.type
    assert_equal 2, funding.entries.size
    assert_kind_of Treasury::Models::LedgerEntry, funding.entries.first
    # A funding is its own source, and so is each of its lines.
    assert_equal({ type: "journal_entry", id: funding.id }, funding.source.to_h)
    assert_equal [funding.source.to_h] * 2, funding.entries.map { |e| e.source.to_h }
    S[:funding] = funding

    live = operator.platforms.enable_live(platform.id)
    assert live.live_enabled
    assert_match(/\Ask_live_/, live.live_api_key.secret)
    S[:live_key] = live.live_api_key.secret

    own = client.platform.retrieve
    assert_equal platform.id, own.id
    assert_equal "sandbox", own.environment

    settings = client.platform.settings.update(
      sandbox: { auto_settle: true, ach_same_day_delay_seconds: 1, ach_standard_delay_seconds: 1 }
    )
    assert_equal 1, settings.sandbox.ach_same_day_delay_seconds
    assert_equal 1, client.platform.settings.retrieve.sandbox.ach_standard_delay_seconds
  end

  def test_02_open_accounts_and_pass_kyb
    open = lambda do |entity|
      client.virtual_accounts.create(platform_id: S[:platform], entity_ref: "#{entity}-#{RUN}", type: "checking",
                                     metadata: { "entity" => entity })
    end
    a = open.call("acme")
    assert_equal "active", a.status
    assert_equal "not_started", a.kyb_status
    assert_equal 0, a.balance.available
    assert_match(/\A\d{12}\z/, a.account_number)
    S[:a] = a.id
    S[:b] = open.call("beta").id
    S[:c] = open.call("gamma").id
    S[:d] = open.call("delta").id

    kyb = client.kyb.create(**kyb_body(S[:a], ein: "12-3456789"))
    assert_equal "pending", kyb.status
    assert kyb.business.ein.end_with?("6789"), kyb.business.ein
    refute_includes kyb.business.ein, "12345", "the EIN is masked to its last 4 digits"
    approved = wait_until("KYB approval") do
      k = client.kyb.retrieve(kyb.id)
      k.status == "approved" ? k : nil
    end
    assert_equal "approved", approved.decision.outcome
    assert_equal "automatic", approved.decision.method
    assert_equal "approved", client.virtual_accounts.retrieve(S[:a]).kyb_status

    # An EIN ending 1111 goes to manual review: the operator decides one, a simulation the other.
    review_b = client.kyb.submit(**kyb_body(S[:b], ein: "98-7651111", name: "Beta #{RUN} Inc"))
    review_c = client.kyb.create(**kyb_body(S[:c], ein: "55-5551111", name: "Gamma #{RUN} Inc"))
    [review_b, review_c].each do |k|
      reviewed = wait_until("pending_review") do
        r = client.kyb.retrieve(k.id)
        r.status == "pending_review" ? r : nil
      end
      refute_nil reviewed.review.eta
    end
    decided = operator.kyb.decide(review_b.id, outcome: "approved")
    assert_equal "approved", decided.status
    assert_equal "manual", decided.decision.method
    rejected = client.simulations.kyb.decide(review_c.id, outcome: "rejected",
                                                          reasons: [{ code: "ein_mismatch", message: "EIN does not match" }])
    assert_equal "rejected", rejected.status
    assert_equal "ein_mismatch", rejected.decision.reasons.first.code

    assert_equal [kyb.id], client.kyb.list(virtual_account_id: S[:a]).map(&:id)
    assert_includes client.kyb.list(status: "rejected").map(&:id), review_c.id
    assert_equal [S[:a]], client.virtual_accounts.list(entity_ref: "acme-#{RUN}").map(&:id)
    assert_equal 4, client.virtual_accounts.list(limit: 100).count { |v| v.metadata["entity"] }
  end

  def test_03_fund_an_account_with_an_inbound_transfer
    S[:before_funds] = Time.now.utc - 1
    transfer = client.simulations.inbound_transfers.create(virtual_account_id: S[:a], amount: 500_000, rail: "rtp",
                                                           originator: ORIGINATOR, description: "seed funds")
    assert_match(/\Aitx_/, transfer.id)
    assert_equal "completed", transfer.status
    assert_equal "Initech Funding", transfer.originator.name
    assert_match(/\Aje_/, transfer.journal_entry_id)
    S[:transfer] = transfer
    balance = client.virtual_accounts.balance(S[:a])
    assert_equal 500_000, balance.posted
    assert_equal 500_000, balance.available
    assert_equal 0, client.virtual_accounts.balance(S[:a], as_of: S[:before_funds]).posted
  end

  def test_04_payments_on_the_four_rails_complete
    rails = %w[rtp fednow ach_same_day ach_standard]
    payments = rails.each_with_index.map { |rail, i| pay(rail, 1_000 + i, description: "rail #{rail}") }
    payments.each { |p| assert_includes %w[pending submitted completed], p.status }
    payments.each { |p| assert_match(/\Aje_/, p.journal_entry_id, "the creation answer names the journal entry") }
    completed = payments.map { |p| poll_payment(p.id, "completed", "failed") }
    assert_equal %w[completed] * 4, completed.map(&:status), completed.map { |p| [p.rail, p.failure&.to_h] }.inspect
    assert_equal payments.map(&:journal_entry_id), completed.map(&:journal_entry_id)
    assert_equal rails, completed.map(&:rail)
    refute_nil completed.first.completed_at
    assert_equal 60, completed.first.fee # the fee_schedule set in step 1
    S[:completed] = completed.map(&:id)

    failing = pay("rtp", 700, destination: GOOD.merge(account_number: "4000000003"))
    failed = poll_payment(failing.id, "failed")
    assert_equal "no_account", failed.failure.code
    assert_equal "update_destination", failed.failure.retry_recommendation.action
    S[:failed] = failed.id
  end

  def test_05_cancel_and_simulated_outcomes
    client.platform.settings.update(sandbox: { auto_settle: false })
    begin
      to_cancel = pay("ach_standard", 300)
      canceled = client.payments.cancel(to_cancel.id)
      assert_equal "canceled", canceled.status
      refute_nil canceled.canceled_at

      to_complete = pay("ach_same_day", 301)
      completed = client.simulations.payments.complete(to_complete.id)
      assert_equal "completed", completed.status

      to_fail = pay("ach_same_day", 302)
      failed = client.simulations.payments.fail(to_fail.id, network_code: "R02")
      assert_equal "failed", failed.status
      assert_equal "account_closed", failed.failure.code
    ensure
      client.platform.settings.update(sandbox: { auto_settle: true })
    end
    error = assert_api_error(Treasury::ConflictError, code: "payment_not_cancelable", status: 409) do
      client.payments.cancel(S[:completed].first)
    end
    refute_nil error.request_id
  end

  def test_06_idempotency_replay_and_conflict
    key = "ruby-#{RUN}-order-1"
    first = pay("rtp", 555, idempotency_key: key)
    assert_equal key, first.idempotency_key
    replay = pay("rtp", 555, idempotency_key: key)
    assert_equal first.id, replay.id
    error = assert_api_error(Treasury::ConflictError, code: "idempotency_conflict", status: 409) do
      pay("rtp", 556, idempotency_key: key)
    end
    assert_equal first.id, error.resource_id
    assert_equal [first.id], client.payments.list(idempotency_key: key).map(&:id)
    # One attempt each: a conflict is not retried.
    conflict_attempts = Recorder.calls.count { |c| c.status == 409 && c.headers["Idempotency-Key"] == key }
    assert_equal 1, conflict_attempts
  end

  def test_07_journal_entries
    adjustment = client.ledger.entries.create(type: "adjustment", description: "goodwill credit",
                                              virtual_account_id: S[:a], direction: "credit", amount: 250,
                                              metadata: { "ticket" => "T-1" })
    assert_match(/\Aje_/, adjustment.id)
    assert_equal 2, adjustment.entries.size
    assert_equal %w[credit debit], adjustment.entries.map(&:direction).sort
    assert_kind_of Treasury::Models::Source, adjustment.source
    assert_equal({ type: "journal_entry", id: adjustment.id }, adjustment.source.to_h)
    assert_equal [adjustment.source.to_h] * 2, adjustment.entries.map { |e| e.source.to_h }, "and each of its lines"

    # GET /ledger/journal-entries/{id}: a manual entry's source is itself ...
    fetched = client.ledger.journal_entries.retrieve(adjustment.id)
    assert_kind_of Treasury::Models::JournalEntry, fetched
    assert_equal adjustment.id, fetched.id
    assert_equal "adjustment", fetched.type
    assert_equal "journal_entry", fetched.source.type
    assert_equal adjustment.id, fetched.source.id
    assert_equal adjustment.entries.map(&:id).sort, fetched.entries.map(&:id).sort
    assert_kind_of Treasury::Models::LedgerEntry, fetched.entries.first
    # ... an inbound transfer's entry (its journal_entry_id) points back at the transfer ...
    transfer = S.fetch(:transfer)
    funded = client.ledger.journal_entries.retrieve(transfer.journal_entry_id)
    assert_equal transfer.journal_entry_id, funded.id
    assert_equal "inbound_transfer", funded.type
    assert_equal({ type: "inbound_transfer", id: transfer.id }, funded.source.to_h)
    assert_equal [funded.source.to_h] * funded.entries.size, funded.entries.map { |e| e.source.to_h }
    assert_includes funded.entries.map(&:amount), 500_000
    # ... and an unknown id, or one of another environment, is 404.
    assert_api_error(Treasury::NotFoundError, code: "not_found", status: 404) do
      client.ledger.journal_entries.retrieve("je_00000000000000000000000000")
    end
    live = Treasury::Client.new(api_key: S.fetch(:live_key), base_url: BASE_URL)
    assert_api_error(Treasury::NotFoundError, status: 404) { live.ledger.journal_entries.retrieve(adjustment.id) }

    operating = client.ledger.accounts.list(limit: 100).find { |la| la.name == "platform_operating" }
    refute_nil operating
    assert_kind_of Treasury::Models::LedgerAccountBalances, operating.balances
    lines = client.ledger.entries.create(type: "fee", description: "monthly fee", lines: [
                                           { virtual_account_id: S[:a], direction: "debit", amount: 100 },
                                           { ledger_account_id: operating.id, direction: "credit", amount: 100 }
                                         ])
    assert_equal 2, lines.entries.size
    assert_equal [{ type: "journal_entry", id: lines.id }] * 2, lines.entries.map { |e| e.source.to_h }

    # A reversal is a manual entry of its own: its source is itself, not the entry it reverses.
    reversal = client.ledger.entries.create(reverses: adjustment.id)
    assert_equal adjustment.id, reversal.reverses
    assert_equal({ type: "journal_entry", id: reversal.id }, reversal.source.to_h)
    assert_equal [reversal.source.to_h] * 2, reversal.entries.map { |e| e.source.to_h }
    S[:manual] = [adjustment.id, lines.id, reversal.id]

    entries = client.ledger.entries.list(virtual_account_id: S[:a], limit: 100).to_a
    assert_includes entries.map(&:journal_entry_id), lines.id
    assert_operator client.ledger.entries.list(ledger_account_id: operating.id).count, :>=, 1

    assert_api_error(Treasury::BadRequestError, code: "unbalanced_entry", status: 400) do
      client.ledger.entries.create(type: "correction", description: "unbalanced", lines: [
                                     { virtual_account_id: S[:a], direction: "debit", amount: 100 },
                                     { ledger_account_id: operating.id, direction: "credit", amount: 99 }
                                   ])
    end

    csv = client.ledger.export(created_after: Date.today - 1)
    assert csv.start_with?("entry_id,journal_entry_id,ledger_account_id"), csv[0, 80]
    assert_includes csv, lines.id
  end

  def test_08_every_page
    page = client.payments.list(limit: 2)
    assert_equal 2, page.data.size
    assert page.has_more
    refute_nil page.next_cursor
    pages = page.each_page.to_a
    assert_operator pages.size, :>, 3
    all = client.payments.list(limit: 2).to_a
    assert_equal all.size, pages.sum { |p| p.data.size }
    assert_equal all.size, all.map(&:id).uniq.size
    assert_operator all.size, :>=, 9 # steps 4 to 6 made 9 payments
    assert_equal all.map(&:id), client.payments.list(limit: 100).map(&:id)
    assert_equal all.map(&:id).sort.reverse, all.map(&:id), "newest first"

    transactions = client.virtual_accounts.transactions(S[:a], limit: 2).to_a
    assert_operator transactions.size, :>, 2
    assert(transactions.all? { |t| t.virtual_account_id == S[:a] })
    assert_equal "inbound_transfer", client.virtual_accounts.transactions(S[:a], type: "inbound_transfer").first.type
    assert_equal 4, client.virtual_accounts.list(limit: 2).count
  end

  # A creating POST retried after its answer was lost (same Idempotency-Key, same body) makes one
  # resource: the retry is a replay (200, not 201) of the first. After test_08, which counts accounts.
  def test_08b_a_retried_create_makes_one_account
    key = "ruby-#{RUN}-account-1"
    params = { platform_id: S[:platform], entity_ref: "retried-#{RUN}", type: "savings" }
    first = client.virtual_accounts.create(**params, idempotency_key: key)
    again = client.virtual_accounts.create(**params, idempotency_key: key)
    assert_equal first.id, again.id
    assert_equal first.account_number, again.account_number
    assert_equal [first.id], client.virtual_accounts.list(entity_ref: "retried-#{RUN}").map(&:id)
    # (A 429 on the way is retried by the client, under the same key: only the answers count.)
    statuses = Recorder.calls.select { |c| c.method == :post && c.headers["Idempotency-Key"] == key }.map(&:status)
    assert_equal [201, 200], statuses.reject { |st| [429, 503].include?(st) }, "the second answer was a replay: #{statuses.inspect}"

    error = assert_api_error(Treasury::ConflictError, code: "idempotency_conflict", status: 409) do
      client.virtual_accounts.create(**params.merge(type: "checking"), idempotency_key: key)
    end
    assert_equal first.id, error.resource_id
  end

  # Lists filtered on metadata (`metadata[key]=value`, every pair matching), on every page. After
  # test_08, which counts accounts and payments.
  def test_08c_lists_filtered_on_metadata
    open = lambda do |name, metadata|
      client.virtual_accounts.create(platform_id: S[:platform], entity_ref: "#{name}-#{RUN}", type: "checking",
                                     metadata: metadata).id
    end
    va1 = open.call("meta-1", { "order id" => "A&B", "region" => "east" })
    va2 = open.call("meta-2", { "order id" => "A&B", "region" => "west" })
    va3 = open.call("meta-3", { "order id" => "A", "region" => "east" })
    accounts = ->(**q) { client.virtual_accounts.list(**q).map(&:id).sort }
    assert_equal [va1, va2].sort, accounts.call(metadata: { "order id" => "A&B" })
    assert_equal [va1], accounts.call(metadata: { "order id" => "A&B", region: "east" })
    assert_equal [va3], accounts.call(metadata: { "order id" => "A" })
    assert_empty accounts.call(metadata: { "order id" => "A&B", "region" => "north" })
    assert_equal [S[:a]], accounts.call(metadata: { "entity" => "acme" }) # step 2's metadata

    # One item a page: the filter goes with every page's request (the cursor alone would not keep it).
    before = Recorder.calls.size
    assert_equal [va1, va3].sort, accounts.call(metadata: { "region" => "east" }, limit: 1)
    # A request a busy server refused for now (429, 503) is sent again unchanged: only the retry counts.
    pages = Recorder.calls[before..].select do |c|
      c.method == :get && c.uri.path.end_with?("/virtual-accounts") && ![429, 503].include?(c.status)
    end
    assert_operator pages.size, :>=, 2, "pages of one: #{pages.map { |c| c.uri.query }}"
    assert(pages.all? { |c| c.uri.query.include?("metadata[region]=east") }, pages.map { |c| c.uri.query }.inspect)
    assert(pages.drop(1).all? { |c| c.uri.query.include?("cursor=") })

    # Payments out of the funded, approved account of step 2.
    p1 = pay("rtp", 201, metadata: { "order id" => "A&B", "tier" => "gold" }).id
    p2 = pay("rtp", 202, metadata: { "order id" => "A&B", "tier" => "silver" }).id
    p3 = pay("fednow", 203, metadata: { "order id" => "A", "tier" => "gold" }).id
    payments = ->(**q) { client.payments.list(**q).map(&:id).sort }
    assert_equal [p1, p2].sort, payments.call(metadata: { "order id" => "A&B" })
    assert_equal [p1], payments.call(metadata: { "order id" => "A&B", "tier" => "gold" })
    assert_equal [p1, p3].sort, payments.call(metadata: { "tier" => "gold" }, limit: 1)
    assert_equal [p3], payments.call(metadata: { "tier" => "gold" }, rail: "fednow")
    assert_empty payments.call(metadata: { "order id" => "A&B" }, virtual_account_id: S[:b])

    # A bare `metadata=` (not a Hash) is the server's 400.
    error = assert_api_error(Treasury::BadRequestError, status: 400) { client.payments.list(metadata: "A&B").to_a }
    assert_equal "metadata", error.param
  end

  def test_09_webhooks_are_received_and_verified
    receiver = StubServer.new { [200, { "Content-Type" => "text/plain" }, "ok"] }
    endpoint = client.webhooks.create(url: receiver.url("/hooks/treasury"), events: ["*"],
                                      description: "ruby client #{RUN}",
                                      retry_policy: { max_attempts: 3, initial_delay_seconds: 1 })
    assert_match(/\Awhsec_/, endpoint.secret)
    assert_equal "enabled", endpoint.status
    secret = endpoint.secret

    queued = client.webhooks.test(endpoint.id)
    assert_match(/\Amsg_/, queued.id)
    delivery = receiver.wait_for(timeout: 10) { |r| r["webhook-id"] == queued.id }
    refute_nil delivery, "the test delivery did not arrive"
    assert_equal "/hooks/treasury", delivery.path
    event = Treasury::Webhooks.verify(delivery.body, delivery.headers, secret)
    assert_equal "webhook.test", event["type"]
    assert_equal endpoint.id, event.dig("data", "object", "id")

    tampered = delivery.body.sub("webhook.test", "payment.completed")
    assert_raises(Treasury::WebhookVerificationError) { Treasury::Webhooks.verify(tampered, delivery.headers, secret) }
    forged = delivery.headers.merge("webhook-signature" => Treasury::Webhooks.sign(queued.id, Time.now.to_i, tampered,
                                                                                   "whsec_#{["forger"].pack("m0")}"))
    assert_raises(Treasury::WebhookVerificationError) { Treasury::Webhooks.verify(tampered, forged, secret) }

    # A real event of the journey, delivered too.
    pay_event = pay("rtp", 123)
    poll_payment(pay_event.id, "completed")
    completed = receiver.wait_for(timeout: 10) do |r|
      body = JSON.parse(r.body)
      body["type"] == "payment.completed" && body.dig("data", "object", "id") == pay_event.id
    end
    refute_nil completed, "payment.completed was not delivered"
    event = Treasury::Webhooks.verify(completed.body, completed.headers, secret)
    assert_equal pay_event.id, Treasury::Models::Event.construct(event).data.resource.id

    deliveries = wait_until("the delivery to be recorded as succeeded") do
      list = client.webhooks.deliveries.list(endpoint.id, status: "succeeded").to_a
      list.any? { |d| d.id == queued.id } ? list : nil
    end
    recorded = deliveries.find { |d| d.id == queued.id }
    assert_equal 200, recorded.attempts.first.status_code
    assert_kind_of Treasury::Models::WebhookAttempt, recorded.attempts.first

    retried = client.webhooks.deliveries.retry(endpoint.id, queued.id)
    assert_equal queued.id, retried.id
    again = receiver.wait_for(timeout: 10) { |r| r["webhook-id"] == queued.id && !r.equal?(delivery) }
    refute_nil again, "the retried delivery did not arrive"
    assert_equal "webhook.test", Treasury::Webhooks.verify(again.body, again.headers, secret)["type"]

    rotated = client.webhooks.rotate_secret(endpoint.id)
    refute_equal secret, rotated.secret
    queued2 = client.webhooks.test(endpoint.id)
    after = receiver.wait_for(timeout: 10) { |r| r["webhook-id"] == queued2.id }
    refute_nil after, "the delivery after the rotation did not arrive"
    assert_equal 2, after["webhook-signature"].split(" ").size, "two signatures during the rotation"
    assert Treasury::Webhooks.verify(after.body, after.headers, rotated.secret)
    assert Treasury::Webhooks.verify(after.body, after.headers, secret)

    updated = client.webhooks.update(endpoint.id, description: "payments only", events: ["payment.completed"])
    assert_equal ["payment.completed"], updated.events
    assert_nil client.webhooks.retrieve(endpoint.id).secret
    assert_includes client.webhooks.list.map(&:id), endpoint.id
    health = client.webhooks.retrieve(endpoint.id).delivery_status
    assert_kind_of Treasury::Models::WebhookDeliveryStatus, health

    deleted = client.webhooks.delete(endpoint.id)
    assert deleted.deleted
    assert_api_error(Treasury::NotFoundError, code: "not_found") { client.webhooks.retrieve(endpoint.id) }
  ensure
    receiver&.close
  end

  def test_10_events
    events = client.events.list(type: "payment.completed", limit: 2)
    assert(events.first(3).all? { |e| e.type == "payment.completed" })
    event = client.events.retrieve(events.data.first.id)
    assert_equal events.data.first.id, event.id
    assert_kind_of Treasury::Models::Payment, event.data.resource
    assert_operator client.events.list(created_after: S[:before_funds], limit: 100).count, :>, 10
  end

  def test_11_api_keys
    created = client.platform.api_keys.create(name: "ci #{RUN}")
    assert_match(/\Ask_sandbox_/, created.secret)
    assert_includes client.platform.api_keys.list.map(&:id), created.id
    assert(client.platform.api_keys.list.all? { |k| k.secret.nil? }, "secrets are never listed")

    rolled = client.platform.api_keys.roll(created.id, grace_seconds: 0)
    refute_equal created.id, rolled.id
    assert_equal "ci #{RUN}", rolled.name

    with_new = Treasury::Client.new(api_key: rolled.secret, base_url: BASE_URL)
    assert_equal S[:platform], with_new.platform.retrieve.id
    revoked = client.platform.api_keys.revoke(rolled.id)
    refute_nil revoked.revoked_at

    # 401: the revoked key.
    error = assert_api_error(Treasury::AuthenticationError, code: "unauthorized", status: 401) do
      with_new.platform.retrieve
    end
    refute_nil error.request_id

    # 403: a sandbox key cannot create a live key.
    assert_api_error(Treasury::PermissionDeniedError, code: "forbidden", status: 403) do
      client.platform.api_keys.create(name: "live", environment: "live")
    end
  end

  def test_12_each_error_class_from_the_server
    # 400
    error = assert_api_error(Treasury::BadRequestError, code: "invalid_request", status: 400) { pay("rtp", 0) }
    assert_equal "amount", error.param
    # 403: a platform key on an operator route; a live key on a sandbox-only route.
    assert_api_error(Treasury::PermissionDeniedError, code: "forbidden", status: 403) { client.platforms.list }
    live = Treasury::Client.new(api_key: S[:live_key], base_url: BASE_URL)
    assert_api_error(Treasury::PermissionDeniedError, code: "forbidden", status: 403) do
      live.simulations.payments.complete(S[:completed].first)
    end
    # 404
    assert_api_error(Treasury::NotFoundError, code: "not_found", status: 404) do
      client.payments.retrieve("pay_01jh3v8x9q2w3e4r5t6y7u8i9z")
    end
    # 409
    assert_api_error(Treasury::ConflictError, code: "invalid_state", status: 409) do
      operator.platforms.approve(S[:platform])
    end
    # 422: KYB not approved; insufficient funds.
    assert_api_error(Treasury::UnprocessableEntityError, code: "kyb_not_approved", status: 422) do
      pay("rtp", 100, account: S[:d])
    end
    error = assert_api_error(Treasury::UnprocessableEntityError, code: "insufficient_funds", status: 422) do
      pay("rtp", 9_000_000)
    end
    refute_nil error.request_id
  end

  def test_13_account_lifecycle_statements_and_revenue
    frozen = client.virtual_accounts.freeze(S[:d])
    assert_equal "frozen", frozen.status
    assert_api_error(Treasury::UnprocessableEntityError) { pay("rtp", 100, account: S[:d]) }
    assert_equal "active", client.virtual_accounts.unfreeze(S[:d]).status
    closed = client.virtual_accounts.close(S[:d])
    assert_equal "closed", closed.status
    assert_equal [S[:d]], client.virtual_accounts.list(status: "closed").map(&:id)

    month = Time.now.utc.strftime("%Y-%m")
    statement = client.virtual_accounts.statement(S[:a], month)
    assert_equal "statement", statement.object
    assert_equal 0, statement.opening_balance
    assert_equal statement.total_in - statement.total_out, statement.closing_balance
    assert_kind_of Treasury::Models::Transaction, statement.transactions.first
    csv = client.virtual_accounts.statement(S[:a], month, format: "csv")
    assert_kind_of String, csv
    rows = csv.lines.map { |l| l.chomp.split(",", -1) }
    assert_equal %w[transaction_id posted_at type description amount balance source_type source_id], rows.first
    assert_includes csv, statement.transactions.first.id

    today = Date.today
    report = client.platform.revenue_share(from: today - 1, to: today)
    assert_equal "revenue_share_report", report.object
    assert_equal "0.30", report.share_rate
    assert(report.lines.all? { |l| l.is_a?(Treasury::Models::RevenueLine) })
  end

  # Book transfers (`/book-transfers`): money moved at once between two of the platform's accounts,
  # one posted journal entry whose source is the transfer, a `book_transfer` transaction on each
  # side, the list and its filters, the idempotency key, the event and its webhook. After test_13:
  # account d is closed then, and no later step counts transactions or accounts.
  def test_13b_book_transfers_move_money_at_once
    receiver = StubServer.new { [200, { "Content-Type" => "text/plain" }, "ok"] }
    endpoint = client.webhooks.create(url: receiver.url("/hooks/book-transfers"), events: ["book_transfer.completed"])
    assert_equal ["book_transfer.completed"], endpoint.events
    a_before = client.virtual_accounts.balance(S[:a])
    b_before = client.virtual_accounts.balance(S[:b])

    # No key given: the client makes one, sent in the header and the body alike.
    before = Recorder.calls.size
    t1 = client.book_transfers.create(from_virtual_account_id: S[:a], to_virtual_account_id: S[:b], amount: 12_345,
                                      description: "rent share", metadata: { "order id" => "A&B", "kind" => "rent" })
    assert_kind_of Treasury::Models::BookTransfer, t1
    assert_match(/\Abt_[0-9a-z]{26}\z/, t1.id)
    assert_equal "book_transfer", t1.object
    assert_equal "completed", t1.status
    assert_equal [S[:a], S[:b], 12_345, "USD"], [t1.from_virtual_account_id, t1.to_virtual_account_id, t1.amount, t1.currency]
    assert_equal "rent share", t1.description
    assert_equal({ "order id" => "A&B", "kind" => "rent" }, t1.metadata)
    assert_equal "sandbox", t1.environment
    assert_match(/\Aje_/, t1.journal_entry_id)
    assert_match(/\A\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z\z/, t1.created_at)
    posts = Recorder.calls[before..].select { |c| c.method == :post && c.uri.path.end_with?("/book-transfers") }
    assert_equal [201], posts.map(&:status).reject { |st| [429, 503].include?(st) }
    header_key = posts.last.headers["Idempotency-Key"]
    refute_nil header_key
    assert_equal header_key, JSON.parse(posts.last.body)["idempotency_key"]
    assert_equal header_key, t1.idempotency_key
    assert_equal t1.to_h, client.book_transfers.retrieve(t1.id).to_h

    # Both balances moved at once, by the amount and no fee (available: a payment settling on the
    # way moves posted and pending_outbound alike).
    assert_equal a_before.available - 12_345, client.virtual_accounts.balance(S[:a]).available
    assert_equal b_before.available + 12_345, client.virtual_accounts.balance(S[:b]).available

    # Its journal entry (current at once): posted, of type book_transfer, its source the transfer; a
    # debit of a and a credit of b, each a book_transfer transaction of its account (the transactions
    # and the ledger entries are asynchronous projections: they appear within moments).
    entry = client.ledger.journal_entries.retrieve(t1.journal_entry_id)
    assert_equal ["book_transfer", "posted", "rent share"], [entry.type, entry.status, entry.description]
    assert_equal({ type: "book_transfer", id: t1.id }, entry.source.to_h)
    lines = entry.entries.to_h { |e| [e.direction, [e.virtual_account_id, e.amount, e.type, e.status]] }
    assert_equal({ "debit" => [S[:a], 12_345, "book_transfer", "posted"],
                   "credit" => [S[:b], 12_345, "book_transfer", "posted"] }, lines)
    assert_equal [entry.source.to_h] * 2, entry.entries.map { |e| e.source.to_h }, "each line names the transfer too"
    book_lines = lambda do |account|
      wait_until("#{account}'s book_transfer transaction") do
        list = client.virtual_accounts.transactions(account, type: "book_transfer").to_a
        list.empty? ? nil : list.map { |t| [t.type, t.amount, t.status, t.source.to_h] }
      end
    end
    assert_equal [["book_transfer", -12_345, "posted", { type: "book_transfer", id: t1.id }]], book_lines.call(S[:a])
    assert_equal [["book_transfer", 12_345, "posted", { type: "book_transfer", id: t1.id }]], book_lines.call(S[:b])
    ledger_entries = wait_until("b's book_transfer ledger entry") do
      list = client.ledger.entries.list(virtual_account_id: S[:b], type: "book_transfer").to_a
      list.empty? ? nil : list
    end
    assert_equal [[t1.journal_entry_id, "credit", 12_345, { type: "book_transfer", id: t1.id }]],
                 ledger_entries.map { |e| [e.journal_entry_id, e.direction, e.amount, e.source.to_h] }

    # The caller's key: a replay (200) returns the transfer, another body under it is a 409 naming
    # it. No description: the journal entry says where the money went.
    key = "ruby-#{RUN}-book-1"
    t2 = client.book_transfers.create(from_virtual_account_id: S[:b], to_virtual_account_id: S[:a], amount: 345,
                                      idempotency_key: key)
    assert_equal key, t2.idempotency_key
    assert_equal "", t2.description
    assert_equal "Book transfer to #{S[:a]}", client.ledger.journal_entries.retrieve(t2.journal_entry_id).description
    again = client.book_transfers.create(from_virtual_account_id: S[:b], to_virtual_account_id: S[:a], amount: 345,
                                         idempotency_key: key)
    assert_equal t2.to_h, again.to_h
    statuses = Recorder.calls.select { |c| c.method == :post && c.headers["Idempotency-Key"] == key }.map(&:status)
    assert_equal [201, 200], statuses.reject { |st| [429, 503].include?(st) }, "the second answer was a replay: #{statuses.inspect}"
    error = assert_api_error(Treasury::ConflictError, code: "idempotency_conflict", status: 409) do
      client.book_transfers.create(from_virtual_account_id: S[:b], to_virtual_account_id: S[:a], amount: 346,
                                   idempotency_key: key)
    end
    assert_equal t2.id, error.resource_id
    assert_equal b_before.available + 12_345 - 345, client.virtual_accounts.balance(S[:b]).available

    t3 = client.book_transfers.create(from_virtual_account_id: S[:a], to_virtual_account_id: S[:b], amount: 1,
                                      metadata: { "kind" => "rent" })
    S[:book_transfers] = [t3.id, t2.id, t1.id] # newest first

    # The list: newest first, by account (out of or into), by creation time, by metadata, page by page.
    transfers = ->(**q) { client.book_transfers.list(**q).map(&:id) }
    assert_equal [t3.id, t2.id, t1.id], transfers.call
    assert(client.book_transfers.list.all? { |t| t.is_a?(Treasury::Models::BookTransfer) })
    assert_equal [t3.id, t2.id, t1.id], transfers.call(virtual_account_id: S[:b])
    assert_empty transfers.call(virtual_account_id: S[:c])
    assert_empty transfers.call(virtual_account_id: "va_00000000000000000000000000")
    assert_equal [t3.id, t2.id], transfers.call(created_after: t2.created_at)
    assert_equal [t1.id], transfers.call(created_before: t2.created_at)
    assert_equal [t2.id], transfers.call(created_after: t2.created_at, created_before: t3.created_at)
    assert_equal [t3.id, t1.id], transfers.call(metadata: { "kind" => "rent" })
    assert_equal [t1.id], transfers.call(metadata: { "order id" => "A&B", "kind" => "rent" })
    assert_empty transfers.call(metadata: { "kind" => "rent" }, virtual_account_id: S[:c])
    before = Recorder.calls.size
    assert_equal [t3.id, t1.id], transfers.call(metadata: { "kind" => "rent" }, limit: 1)
    pages = Recorder.calls[before..].select do |c|
      c.method == :get && c.uri.path.end_with?("/book-transfers") && ![429, 503].include?(c.status)
    end
    assert_operator pages.size, :>=, 2, "pages of one: #{pages.map { |c| c.uri.query }}"
    assert(pages.all? { |c| c.uri.query.include?("metadata[kind]=rent") }, pages.map { |c| c.uri.query }.inspect)
    assert(pages.drop(1).all? { |c| c.uri.query.include?("cursor=") })
    page = client.book_transfers.list(limit: 2)
    assert_equal [t3.id, t2.id], page.data.map(&:id)
    assert page.has_more
    assert_equal [t1.id], page.next_page.data.map(&:id)
    error = assert_api_error(Treasury::BadRequestError, status: 400) { client.book_transfers.list(metadata: "rent").to_a }
    assert_equal "metadata", error.param
    assert_api_error(Treasury::BadRequestError, status: 400) { client.book_transfers.list(created_after: "yesterday").to_a }

    # The events (an asynchronous projection too), and their webhook deliveries.
    events = wait_until("three book_transfer.completed events") do
      list = client.events.list(type: "book_transfer.completed").to_a
      list.size >= 3 ? list : nil
    end
    assert_equal [t3.id, t2.id, t1.id], events.map { |e| e.data.resource.id }
    assert(events.all? { |e| e.type == "book_transfer.completed" && e.data.resource.is_a?(Treasury::Models::BookTransfer) })
    assert_equal t1.to_h, events.last.data.resource.to_h
    delivery = receiver.wait_for(timeout: 10) { |r| JSON.parse(r.body).dig("data", "object", "id") == t1.id }
    refute_nil delivery, "book_transfer.completed was not delivered"
    event = Treasury::Webhooks.verify(delivery.body, delivery.headers, endpoint.secret)
    assert_equal "book_transfer.completed", event["type"]
    assert_equal 12_345, Treasury::Models::Event.construct(event).data.resource.amount
    recorded = wait_until("three book_transfer.completed deliveries") do
      list = client.webhooks.deliveries.list(endpoint.id).to_a
      list.size >= 3 ? list : nil
    end
    assert_equal ["book_transfer.completed"], recorded.map(&:event_type).uniq
  ensure
    client.webhooks.delete(endpoint.id) if endpoint
    receiver&.close
  end

  # What the server refuses (each moving nothing and, for a refused request, not taking its key):
  # 400 for the same account twice, a bad amount or description, 404 for an account of another
  # platform or environment or unknown, 422 for a sender frozen, closed or not KYB-approved, a
  # receiver closed, or too little money. A frozen receiver still receives.
  def test_13c_book_transfer_refusals
    transfer = lambda do |from, to, amount, **opts|
      client.book_transfers.create(from_virtual_account_id: from, to_virtual_account_id: to, amount: amount, **opts)
    end
    count = -> { client.book_transfers.list(limit: 100).count }
    made = count.call

    error = assert_api_error(Treasury::BadRequestError, code: "invalid_request", status: 400) { transfer.call(S[:a], S[:a], 1) }
    assert_equal "to_virtual_account_id", error.param
    error = assert_api_error(Treasury::BadRequestError, code: "invalid_request", status: 400) { transfer.call(S[:a], S[:b], 0) }
    assert_equal "amount", error.param
    error = assert_api_error(Treasury::BadRequestError, code: "invalid_request", status: 400) do
      transfer.call(S[:a], S[:b], 1, description: "x" * 141)
    end
    assert_equal "description", error.param

    # 404: unknown; another platform's; another environment's (the live key sees no sandbox account).
    assert_api_error(Treasury::NotFoundError, code: "not_found", status: 404) do
      transfer.call(S[:a], "va_00000000000000000000000000", 1)
    end
    foreign_platform = operator.platforms.register(name: "ruby-client foreign #{RUN}", contact_email: "foreign+#{RUN}@acme.example")
    S[:foreign_key] = operator.platforms.approve(foreign_platform.id).sandbox_api_key.secret
    foreign = Treasury::Client.new(api_key: S[:foreign_key], base_url: BASE_URL)
    stranger = foreign.virtual_accounts.create(platform_id: foreign_platform.id, entity_ref: "stranger-#{RUN}",
                                               type: "checking")
    assert_api_error(Treasury::NotFoundError, code: "not_found", status: 404) { transfer.call(S[:a], stranger.id, 1) }
    assert_api_error(Treasury::NotFoundError, code: "not_found", status: 404) do
      foreign.book_transfers.create(from_virtual_account_id: stranger.id, to_virtual_account_id: S[:a], amount: 1)
    end
    live = Treasury::Client.new(api_key: S.fetch(:live_key), base_url: BASE_URL)
    assert_api_error(Treasury::NotFoundError, code: "not_found", status: 404) do
      live.book_transfers.create(from_virtual_account_id: S[:a], to_virtual_account_id: S[:b], amount: 1)
    end
    t1 = S.fetch(:book_transfers).last
    assert_api_error(Treasury::NotFoundError, code: "not_found", status: 404) { live.book_transfers.retrieve(t1) }
    assert_api_error(Treasury::NotFoundError, code: "not_found", status: 404) { foreign.book_transfers.retrieve(t1) }
    assert_api_error(Treasury::NotFoundError, code: "not_found", status: 404) do
      client.book_transfers.retrieve("bt_00000000000000000000000000")
    end
    assert_empty live.book_transfers.list.to_a
    assert_empty foreign.book_transfers.list.to_a

    # 422, each naming the account in resource_id: a sender not KYB-approved (c's KYB was rejected:
    # that rule comes before the funds, which c has none of) ...
    error = assert_api_error(Treasury::UnprocessableEntityError, code: "kyb_not_approved", status: 422) do
      transfer.call(S[:c], S[:a], 1)
    end
    assert_equal S[:c], error.resource_id
    # ... a closed receiver, or sender (d, closed in test_13) ...
    error = assert_api_error(Treasury::UnprocessableEntityError, code: "account_not_active", status: 422) do
      transfer.call(S[:a], S[:d], 1)
    end
    assert_equal S[:d], error.resource_id
    error = assert_api_error(Treasury::UnprocessableEntityError, code: "account_not_active", status: 422) do
      transfer.call(S[:d], S[:a], 1)
    end
    assert_equal S[:d], error.resource_id
    # ... too little money: one cent more than b has available; the key it was sent under stays free.
    available = client.virtual_accounts.balance(S[:b]).available
    key = "ruby-#{RUN}-book-refused"
    error = assert_api_error(Treasury::UnprocessableEntityError, code: "insufficient_funds", status: 422) do
      transfer.call(S[:b], S[:a], available + 1, idempotency_key: key)
    end
    assert_equal S[:b], error.resource_id
    assert_equal made, count.call, "the refused transfers moved nothing"
    assert_equal available, client.virtual_accounts.balance(S[:b]).available

    # ... a frozen sender; but a frozen receiver still receives (under the key the refusal left free).
    frozen = client.virtual_accounts.freeze(S[:a])
    begin
      assert_equal "frozen", frozen.status
      error = assert_api_error(Treasury::UnprocessableEntityError, code: "account_not_active", status: 422) do
        transfer.call(S[:a], S[:b], 1)
      end
      assert_equal S[:a], error.resource_id
      a_before = client.virtual_accounts.balance(S[:a]).available
      into_frozen = transfer.call(S[:b], S[:a], 100, idempotency_key: key)
      assert_equal ["completed", key], [into_frozen.status, into_frozen.idempotency_key]
      assert_equal a_before + 100, client.virtual_accounts.balance(S[:a]).available
      assert_equal available - 100, client.virtual_accounts.balance(S[:b]).available
    ensure
      client.virtual_accounts.unfreeze(S[:a])
    end
    assert_equal made + 1, count.call
  end

  # Payment approvals: with the platform's `payment_approval_threshold` set, a payment at or above
  # it is created `requires_approval` (held, never sent) until a second key approves it; any key may
  # deny it, and it can still be canceled. The threshold is removed at the end, so that no later
  # step's payment waits. After test_13c (no later step counts payments or events by type).
  def test_13d_payment_approvals
    threshold = 20_000
    approver_key = client.platform.api_keys.create(name: "approver #{RUN}")
    approver = Treasury::Client.new(api_key: approver_key.secret, base_url: BASE_URL)
    foreign = Treasury::Client.new(api_key: S.fetch(:foreign_key), base_url: BASE_URL)
    live = Treasury::Client.new(api_key: S.fetch(:live_key), base_url: BASE_URL)
    creator = S.fetch(:sandbox_key_id)
    receiver = StubServer.new { [200, { "Content-Type" => "text/plain" }, "ok"] }
    types = %w[payment.requires_approval payment.approved payment.denied]
    endpoint = client.webhooks.create(url: receiver.url("/hooks/approvals"), events: types)
    assert_equal types, endpoint.events
    available = -> { client.virtual_accounts.balance(S[:a]).available }

    settings = client.platform.settings.update(payment_approval_threshold: threshold)
    assert_equal threshold, settings.payment_approval_threshold
    assert_equal threshold, client.platform.settings.retrieve.payment_approval_threshold

    # Below the threshold: an ordinary payment, without any `approval` key.
    below = pay("rtp", threshold - 1)
    refute_equal "requires_approval", below.status
    refute below.key?(:approval), "approval is absent (not null) below the threshold: #{below.keys}"
    refute below.key?(:cancellation_reason)
    assert_equal "completed", poll_payment(below.id, "completed", "failed").status

    # At the threshold: created (201) requires_approval, held (amount + fee), approval filled in.
    before_hold = available.call
    key = "ruby-#{RUN}-approval-1"
    held = pay("rtp", threshold, idempotency_key: key, description: "needs a second key")
    assert_equal "requires_approval", held.status
    assert_kind_of Treasury::Models::PaymentApproval, held.approval
    assert_equal [creator, nil, nil, nil, nil, nil],
                 [held.approval.created_by, held.approval.approved_at, held.approval.approved_by,
                  held.approval.denied_at, held.approval.denied_by, held.approval.denial_reason]
    assert_in_delta Time.iso8601(held.created_at) + (7 * 86_400), Time.iso8601(held.approval.expires_at), 1
    refute held.key?(:cancellation_reason)
    assert_nil held.submitted_at
    assert_equal before_hold - threshold - held.fee, available.call, "amount + fee held"
    # ... by its journal entry, pending, named from the creation on; its source is the payment.
    held_source = { type: "payment", id: held.id }
    held_entry = assert_journal_entry(held.journal_entry_id, held_source, "pending")
    assert_equal payment_lines(held), own_lines(held_entry, held)
    statuses = Recorder.calls.select { |c| c.method == :post && c.headers["Idempotency-Key"] == key }.map(&:status)
    assert_equal [201], statuses.reject { |st| [429, 503].include?(st) }
    replay = pay("rtp", threshold, idempotency_key: key, description: "needs a second key")
    assert_equal [held.id, "requires_approval"], [replay.id, replay.status]

    # Never sent: an RTP payment settles within a second in the sandbox, this one stays put.
    sleep 1.5
    waiting = client.payments.retrieve(held.id)
    assert_equal ["requires_approval", nil], [waiting.status, waiting.submitted_at]
    assert_equal held.approval.to_h, waiting.approval.to_h
    listed = client.payments.list(status: "requires_approval").to_a
    assert_equal [held.id], listed.map(&:id)
    assert_equal held.approval.to_h, listed.first.approval.to_h

    # Refusals of the approval: the creating key (403), the operator (403), another platform or
    # environment (404), a reason too long for a denial (400); none changes the payment.
    error = assert_api_error(Treasury::PermissionDeniedError, code: "forbidden", status: 403) do
      client.payments.approve(held.id)
    end
    refute_nil error.request_id
    assert_api_error(Treasury::PermissionDeniedError, code: "forbidden", status: 403) { operator.payments.approve(held.id) }
    assert_api_error(Treasury::NotFoundError, code: "not_found", status: 404) { foreign.payments.approve(held.id) }
    assert_api_error(Treasury::NotFoundError, code: "not_found", status: 404) { foreign.payments.deny(held.id) }
    assert_api_error(Treasury::NotFoundError, code: "not_found", status: 404) { live.payments.approve(held.id) }
    assert_api_error(Treasury::NotFoundError, code: "not_found", status: 404) { live.payments.deny(held.id) }
    assert_api_error(Treasury::NotFoundError, code: "not_found", status: 404) do
      approver.payments.approve("pay_00000000000000000000000000")
    end
    error = assert_api_error(Treasury::BadRequestError, code: "invalid_request", status: 400) do
      approver.payments.deny(held.id, reason: "x" * 501)
    end
    assert_equal "reason", error.param
    assert_equal "requires_approval", client.payments.retrieve(held.id).status

    # A second key approves: pending, settling from the approval (RTP: completed within moments).
    approved = approver.payments.approve(held.id)
    assert_equal "pending", approved.status
    assert_equal [creator, approver_key.id], [approved.approval.created_by, approved.approval.approved_by]
    refute_nil approved.approval.approved_at
    assert_nil approved.approval.denied_at
    assert_operator approved.expected_settlement_at, :>=, approved.approval.approved_at
    completed = poll_payment(held.id, "completed", "failed")
    assert_equal "completed", completed.status, completed.failure&.to_h.inspect
    assert_equal approved.approval.to_h, completed.approval.to_h
    assert_equal before_hold - threshold - held.fee, available.call, "settled: posted, the hold gone"
    assert_equal held.journal_entry_id, completed.journal_entry_id
    assert_journal_entry(held.journal_entry_id, held_source, "posted")
    # It is no longer awaiting an approval: 409 for another approval or a denial.
    assert_api_error(Treasury::ConflictError, code: "invalid_state", status: 409) { approver.payments.approve(held.id) }
    assert_api_error(Treasury::ConflictError, code: "invalid_state", status: 409) { client.payments.deny(held.id) }
    # (and an ordinary payment never was)
    assert_api_error(Treasury::ConflictError, code: "invalid_state", status: 409) { approver.payments.approve(below.id) }

    # The creating key denies (withdraws) one, with a reason: denied, final, the hold released.
    before_deny = available.call
    to_deny = pay("fednow", threshold + 1_000)
    assert_equal "requires_approval", to_deny.status
    assert_equal before_deny - to_deny.amount - to_deny.fee, available.call
    denied = client.payments.deny(to_deny.id, reason: "over budget")
    assert_equal "denied", denied.status
    assert_equal [creator, creator, "over budget", nil],
                 [denied.approval.created_by, denied.approval.denied_by, denied.approval.denial_reason,
                  denied.approval.approved_by]
    refute_nil denied.approval.denied_at
    assert_equal before_deny, available.call, "the hold was released"
    assert_equal to_deny.journal_entry_id, denied.journal_entry_id
    assert_journal_entry(to_deny.journal_entry_id, { type: "payment", id: to_deny.id }, "archived")
    assert_api_error(Treasury::ConflictError, code: "payment_not_cancelable", status: 409) { client.payments.cancel(to_deny.id) }
    assert_api_error(Treasury::ConflictError, code: "invalid_state", status: 409) { approver.payments.approve(to_deny.id) }
    assert_api_error(Treasury::ConflictError, code: "invalid_state", status: 409) { approver.payments.deny(to_deny.id) }
    assert_equal denied.to_h, client.payments.retrieve(to_deny.id).to_h

    # Another key denies one without a reason: denial_reason is null.
    other = pay("ach_same_day", threshold + 2_000)
    denied2 = approver.payments.deny(other.id)
    assert_equal ["denied", approver_key.id, nil], [denied2.status, denied2.approval.denied_by, denied2.approval.denial_reason]

    # A payment awaiting approval can still be canceled: the hold released, no cancellation_reason
    # (only an expiry sets one), and then nothing more to approve.
    before_cancel = available.call
    to_cancel = pay("ach_standard", threshold + 3_000)
    assert_equal "requires_approval", to_cancel.status
    canceled = client.payments.cancel(to_cancel.id)
    assert_equal "canceled", canceled.status
    refute_nil canceled.canceled_at
    refute canceled.key?(:cancellation_reason), canceled.keys.inspect
    assert_nil canceled.cancellation_reason
    assert_equal creator, canceled.approval.created_by
    assert_equal before_cancel, available.call
    assert_journal_entry(canceled.journal_entry_id, { type: "payment", id: to_cancel.id }, "archived")
    assert_api_error(Treasury::ConflictError, code: "invalid_state", status: 409) { approver.payments.approve(to_cancel.id) }

    # The status filter takes the two new values.
    assert_equal [other.id, to_deny.id], client.payments.list(status: "denied").map(&:id)
    assert_empty client.payments.list(status: "requires_approval").to_a
    assert_includes client.payments.list(status: "canceled").map(&:id), to_cancel.id

    # The events (an asynchronous projection), and the webhook that asked for the three new types.
    event_ids = lambda do |type, count|
      wait_until("#{count} #{type} events") do
        list = client.events.list(type: type).to_a
        list.size >= count ? list : nil
      end
    end
    requires = event_ids.call("payment.requires_approval", 4)
    assert_equal [to_cancel.id, other.id, to_deny.id, held.id], requires.map { |e| e.data.resource.id }
    assert(requires.all? { |e| e.data.resource.status == "requires_approval" })
    # A held payment's payment.created already shows it requires_approval, with its approval and its
    # journal entry (it never stood `pending` before its approval was asked for).
    waiting = [to_cancel, other, to_deny, held]
    # (Not `created_after: held.created_at`: an event's created_at is the log's recording time, which
    # can come a few milliseconds before the resource's own created_at.)
    created = wait_until("the held payments' payment.created") do
      list = client.events.list(type: "payment.created", limit: 100).to_a
      list.count { |e| waiting.map(&:id).include?(e.data.resource.id) } >= 4 ? list : nil
    end
    waiting.each do |p|
      its = created.select { |e| e.data.resource.id == p.id }
      assert_equal 1, its.size, "one payment.created for #{p.id}"
      resource = its.first.data.resource
      assert_equal ["requires_approval", p.journal_entry_id], [resource.status, resource.journal_entry_id], p.id
      assert_kind_of Treasury::Models::PaymentApproval, resource.approval
      assert_equal [creator, p.approval.expires_at, nil, nil],
                   [resource.approval.created_by, resource.approval.expires_at, resource.approval.approved_at,
                    resource.approval.denied_at]
    end
    approved_events = event_ids.call("payment.approved", 1)
    assert_equal [[held.id, "pending", approver_key.id]],
                 approved_events.map { |e| [e.data.resource.id, e.data.resource.status, e.data.resource.approval.approved_by] }
    denied_events = event_ids.call("payment.denied", 2)
    assert_equal [[other.id, nil], [to_deny.id, "over budget"]],
                 denied_events.map { |e| [e.data.resource.id, e.data.resource.approval.denial_reason] }
    assert_kind_of Treasury::Models::PaymentApproval, denied_events.first.data.resource.approval
    recorded = wait_until("seven approval deliveries") do
      list = client.webhooks.deliveries.list(endpoint.id).to_a
      list.size >= 7 ? list : nil
    end
    assert_equal({ "payment.requires_approval" => 4, "payment.approved" => 1, "payment.denied" => 2 },
                 recorded.map(&:event_type).tally)
    delivery = receiver.wait_for(timeout: 10) { |r| JSON.parse(r.body)["type"] == "payment.approved" }
    refute_nil delivery, "payment.approved was not delivered"
    event = Treasury::Models::Event.construct(Treasury::Webhooks.verify(delivery.body, delivery.headers, endpoint.secret))
    assert_equal [held.id, approver_key.id], [event.data.resource.id, event.data.resource.approval.approved_by]

    # An empty reason is the same as none: denial_reason null.
    blank = pay("rtp", threshold)
    assert_equal "requires_approval", blank.status
    denied3 = approver.payments.deny(blank.id, reason: "")
    sent = Recorder.calls.reverse.find { |c| c.method == :post && c.uri.path.end_with?("/payments/#{blank.id}/deny") }
    assert_equal({ "reason" => "" }, JSON.parse(sent.body))
    assert_equal ["denied", approver_key.id, nil],
                 [denied3.status, denied3.approval.denied_by, denied3.approval.denial_reason]
    assert_nil client.payments.retrieve(blank.id).approval.denial_reason
    assert_journal_entry(blank.journal_entry_id, { type: "payment", id: blank.id }, "archived")

    # Without the threshold, the same amount goes straight to its rail.
    assert_nil client.platform.settings.update(payment_approval_threshold: nil).payment_approval_threshold
    after = pay("rtp", threshold)
    refute_equal "requires_approval", after.status
    refute after.key?(:approval)
  ensure
    client.platform.settings.update(payment_approval_threshold: nil)
    client.webhooks.delete(endpoint.id) if endpoint
    receiver&.close
  end

  # Links (API.md §12): a payment, an inbound transfer, a book transfer, a manual entry and a funding
  # each lead to their journal entry, whose `source` (and each of its lines') names them back; the
  # ledger entries listed by GET /ledger/entries and the ledger.entry.created events carry the same
  # source, and payment.created the journal_entry_id. After test_13d (no threshold any more: these
  # payments go straight to their rails).
  def test_13e_links_between_payments_transfers_and_the_ledger
    linked = {} # journal entry id => the entry, for the ledger list and the events below

    # The payments completed on the four rails (step 4): one posted entry each, amount + fee.
    completed = S.fetch(:completed).map { |id| client.payments.retrieve(id) }
    completed.each do |p|
      entry = assert_journal_entry(p.journal_entry_id, { type: "payment", id: p.id }, "posted")
      assert_equal "payment", entry.type
      assert_equal payment_lines(p), own_lines(entry, p), p.rail
      linked[entry.id] = entry
    end
    assert_equal completed.size, completed.map(&:journal_entry_id).uniq.size, "one journal entry a payment"

    # The inbound transfer (step 3), the funding (step 1), the manual entries (step 7), a book transfer.
    transfer = S.fetch(:transfer)
    linked[transfer.journal_entry_id] = assert_journal_entry(transfer.journal_entry_id,
                                                             { type: "inbound_transfer", id: transfer.id }, "posted")
    funding = assert_journal_entry(S.fetch(:funding).id, { type: "journal_entry", id: S.fetch(:funding).id }, "posted")
    assert_equal "funding", funding.type
    linked[funding.id] = funding
    S.fetch(:manual).each { |id| linked[id] = assert_journal_entry(id, { type: "journal_entry", id: id }, "posted") }
    book = client.book_transfers.retrieve(S.fetch(:book_transfers).last)
    linked[book.journal_entry_id] = assert_journal_entry(book.journal_entry_id, { type: "book_transfer", id: book.id },
                                                         "posted")

    # A payment names its entry from its creation on: pending while it waits, posted at completion;
    # a return after settlement leaves it posted, reversed by a payment_reversal of the same source.
    # One failed before settling, or canceled, leaves its entry archived.
    receiver = StubServer.new { [200, { "Content-Type" => "text/plain" }, "ok"] }
    endpoint = client.webhooks.create(url: receiver.url("/hooks/links"), events: ["ledger.entry.created"])
    client.platform.settings.update(sandbox: { auto_settle: false })
    begin
      to_cancel = pay("ach_standard", 2_300, metadata: { "links" => RUN })
      canceled = client.payments.cancel(to_cancel.id) # at once: a sandbox payment is submitted after 1 s
      assert_equal ["canceled", to_cancel.journal_entry_id], [canceled.status, canceled.journal_entry_id]
      linked[canceled.journal_entry_id] =
        assert_journal_entry(canceled.journal_entry_id, { type: "payment", id: canceled.id }, "archived")

      key = "ruby-#{RUN}-links-1"
      returned = pay("ach_same_day", 2_100, idempotency_key: key, metadata: { "links" => RUN })
      released = pay("ach_same_day", 2_200, metadata: { "links" => RUN })
      [returned, released].each do |p|
        entry = assert_journal_entry(p.journal_entry_id, { type: "payment", id: p.id }, "pending")
        assert_equal payment_lines(p), own_lines(entry, p)
        # In this order (as the README shows): the amount out to the rail's clearing, then the fee.
        assert_equal [["payment", "debit", p.amount], ["payment", "credit", p.amount],
                      ["payment_fee", "debit", p.fee], ["payment_fee", "credit", p.fee]],
                     entry.entries.map { |l| [l.type, l.direction, l.amount] }
        assert_equal p.journal_entry_id, client.payments.retrieve(p.id).journal_entry_id
      end
      mine = [canceled, returned, released]
      assert_equal 3, mine.map(&:journal_entry_id).uniq.size
      assert_equal mine.map { |p| [p.id, p.journal_entry_id] }.sort,
                   client.payments.list(metadata: { "links" => RUN }).map { |p| [p.id, p.journal_entry_id] }.sort,
                   "the list shows the same journal_entry_id"
      replay = pay("ach_same_day", 2_100, idempotency_key: key, metadata: { "links" => RUN })
      assert_equal [returned.id, returned.journal_entry_id], [replay.id, replay.journal_entry_id]

      settled = client.simulations.payments.complete(returned.id)
      assert_equal ["completed", returned.journal_entry_id], [settled.status, settled.journal_entry_id]
      assert_journal_entry(returned.journal_entry_id, { type: "payment", id: returned.id }, "posted")
      back = client.simulations.payments.fail(returned.id, network_code: "R01")
      assert_equal ["failed", returned.journal_entry_id], [back.status, back.journal_entry_id],
                   "a return keeps the payment's journal entry"
      original = assert_journal_entry(returned.journal_entry_id, { type: "payment", id: returned.id }, "posted")
      refute_nil original.reversed_by, "the return reverses it"
      reversal = assert_journal_entry(original.reversed_by, { type: "payment", id: returned.id }, "posted")
      assert_equal ["payment_reversal", original.id], [reversal.type, reversal.reverses]
      given_back = reversal.entries.select { |l| l.virtual_account_id == S[:a] }
      assert_equal ["credit"], given_back.map(&:direction).uniq
      assert_equal returned.amount + returned.fee, given_back.sum(&:amount), "amount and fee given back"
      linked[original.id] = original
      linked[reversal.id] = reversal

      failed = client.simulations.payments.fail(released.id, network_code: "R01")
      assert_equal ["failed", released.journal_entry_id], [failed.status, failed.journal_entry_id]
      linked[released.journal_entry_id] =
        assert_journal_entry(released.journal_entry_id, { type: "payment", id: released.id }, "archived")
    ensure
      client.platform.settings.update(sandbox: { auto_settle: true })
    end

    # GET /ledger/entries lists every line of those entries as the journal entry shows it, source
    # included (the ledger's tables are written asynchronously: wait for them).
    want = linked.values.flat_map(&:entries)
    listed = wait_until("#{want.size} ledger entries listed as their journal entries show them") do
      by_id = client.ledger.entries.list(limit: 100).to_h { |e| [e.id, e] }
      want.all? { |w| by_id[w.id]&.status == w.status } ? by_id : nil
    end
    want.each { |w| assert_equal w.to_h, listed[w.id].to_h, "#{w.id} listed as its journal entry shows it" }
    # Every listed entry names a source of its kind: a manual entry or a funding is its own.
    prefixes = { "payment" => "pay_", "inbound_transfer" => "itx_", "book_transfer" => "bt_" }
    listed.each_value do |e|
      assert_kind_of Treasury::Models::Source, e.source
      if e.source.type == "journal_entry"
        assert_equal e.journal_entry_id, e.source.id, "#{e.id} (#{e.type})"
      else
        assert e.source.id.start_with?(prefixes.fetch(e.source.type)), "#{e.id}: #{e.source.to_h}"
      end
      manual = %w[adjustment fee correction funding].include?(e.type)
      assert_equal manual, e.source.type == "journal_entry", "#{e.id} (#{e.type}): #{e.source.to_h}"
    end
    # With a filter too: b's book_transfer lines name their transfers (step 13b).
    b_lines = client.ledger.entries.list(virtual_account_id: S[:b], type: "book_transfer").to_a
    refute_empty b_lines
    b_lines.each do |e|
      assert_equal "book_transfer", e.source.type
      assert_match(/\Abt_/, e.source.id)
      assert_equal client.book_transfers.retrieve(e.source.id).journal_entry_id, e.journal_entry_id
    end

    # The events say the same: payment.created names the journal entry (an asynchronous projection) ...
    payments = completed + [canceled, returned, released]
    created = wait_until("payment.created of #{payments.size} payments") do
      list = client.events.list(type: "payment.created", created_after: S[:before_funds], limit: 100).to_a
      payments.all? { |p| list.any? { |e| e.data.resource.id == p.id } } ? list : nil
    end
    payments.each do |p|
      its = created.select { |e| e.data.resource.id == p.id }
      assert_equal [[p.journal_entry_id, "pending"]],
                   its.map { |e| [e.data.resource.journal_entry_id, e.data.resource.status] }, "payment.created of #{p.id}"
    end
    # ... and ledger.entry.created, once for each line posted (none for one released unposted), the
    # line as GET shows it, source included.
    posted = want.select { |w| w.status == "posted" }
    events = wait_until("ledger.entry.created for #{posted.size} lines") do
      list = client.events.list(type: "ledger.entry.created", limit: 100).to_a
      ids = list.map { |e| e.data.resource.id }
      posted.all? { |w| ids.include?(w.id) } ? list : nil
    end
    want.each do |line|
      its = events.select { |e| e.data.resource.id == line.id }
      assert_equal line.status == "posted" ? 1 : 0, its.size, "#{line.id} (#{line.status}): ledger.entry.created events"
      next if its.empty?

      assert_kind_of Treasury::Models::LedgerEntry, its.first.data.resource
      assert_equal line.to_h, its.first.data.resource.to_h, "#{its.first.id}: the event's entry"
    end
    events.each { |e| assert_kind_of Treasury::Models::Source, e.data.resource.source, e.id }
    # ... and their signed webhook deliveries.
    delivery = receiver.wait_for(timeout: 10) do |r|
      JSON.parse(r.body).dig("data", "object", "journal_entry_id") == reversal.id
    end
    refute_nil delivery, "the reversal's ledger.entry.created was not delivered"
    verified = Treasury::Webhooks.verify(delivery.body, delivery.headers, endpoint.secret)
    event = Treasury::Models::Event.construct(verified)
    assert_equal ["ledger.entry.created", { type: "payment", id: returned.id }],
                 [event.type, event.data.resource.source.to_h]

    # Another platform's key, or this platform's live key, does not see them.
    foreign = Treasury::Client.new(api_key: S.fetch(:foreign_key), base_url: BASE_URL)
    live = Treasury::Client.new(api_key: S.fetch(:live_key), base_url: BASE_URL)
    [foreign, live].each do |stranger|
      [completed.first.journal_entry_id, book.journal_entry_id, transfer.journal_entry_id].each do |id|
        assert_api_error(Treasury::NotFoundError, code: "not_found", status: 404) do
          stranger.ledger.journal_entries.retrieve(id)
        end
      end
      refute(stranger.ledger.entries.list(limit: 100).any? { |e| linked.key?(e.journal_entry_id) })
    end
  ensure
    client.webhooks.delete(endpoint.id) if endpoint
    receiver&.close
  end

  # Today's date in New York (the server's calendar for scheduled payments), by the US rule: EDT
  # (UTC-4) from 02:00 on March's second Sunday to 02:00 on November's first Sunday, else EST (UTC-5).
  def eastern_today(now = Time.now.utc)
    march = Date.new(now.year, 3, 1)
    november = Date.new(now.year, 11, 1)
    dst_from = march + ((7 - march.wday) % 7) + 7
    dst_to = november + ((7 - november.wday) % 7)
    summer = now >= Time.utc(now.year, 3, dst_from.day, 7) && now < Time.utc(now.year, 11, dst_to.day, 6)
    (now + ((summer ? -4 : -5) * 3600)).to_date
  end

  # Scheduled payments: `scheduled_for` creates the payment `scheduled` (nothing held, no journal
  # entry) until its date, when the rules run again; the sandbox's simulation releases it at once:
  # held and `pending` (`payment.released`), or `failed` with the rule's code and a null
  # network_code. It can be canceled while scheduled. After test_13e (no later step counts payments,
  # balances or events).
  def test_13f_scheduled_payments
    tomorrow = eastern_today + 1
    receiver = StubServer.new { [200, { "Content-Type" => "text/plain" }, "ok"] }
    endpoint = client.webhooks.create(url: receiver.url("/hooks/scheduled"), events: ["payment.released"])
    live = Treasury::Client.new(api_key: S.fetch(:live_key), base_url: BASE_URL)
    foreign = Treasury::Client.new(api_key: S.fetch(:foreign_key), base_url: BASE_URL)
    balance = ->(id) { client.virtual_accounts.balance(id) }

    # Scheduled for tomorrow (a Date is sent as YYYY-MM-DD): 201 `scheduled`, nothing held.
    before = balance.call(S[:a])
    key = "ruby-#{RUN}-scheduled-1"
    scheduled = pay("ach_same_day", 3_100, idempotency_key: key, scheduled_for: tomorrow,
                                           description: "rent, due tomorrow")
    assert_equal ["scheduled", tomorrow.strftime("%Y-%m-%d"), nil],
                 [scheduled.status, scheduled.scheduled_for, scheduled.journal_entry_id]
    assert scheduled.key?(:journal_entry_id), "journal_entry_id is null, not absent"
    assert_nil scheduled.failure
    assert_nil scheduled.submitted_at
    statuses = Recorder.calls.select { |c| c.method == :post && c.headers["Idempotency-Key"] == key }.map(&:status)
    assert_equal [201], statuses.reject { |st| [429, 503].include?(st) }
    now = balance.call(S[:a])
    assert_equal [before.available, before.pending_outbound], [now.available, now.pending_outbound], "nothing held"
    assert_equal scheduled.to_h, client.payments.retrieve(scheduled.id).to_h
    replay = pay("ach_same_day", 3_100, idempotency_key: key, scheduled_for: tomorrow,
                                        description: "rent, due tomorrow")
    assert_equal [scheduled.id, "scheduled"], [replay.id, replay.status]
    # A payment made without one has no scheduled_for key at all.
    ordinary = client.payments.retrieve(S.fetch(:completed).first)
    refute ordinary.key?(:scheduled_for), ordinary.keys.inspect
    assert_nil ordinary.scheduled_for

    # Two more (the date as a string): one to cancel, one on b for more than b has (the funds are
    # the release's to check, not the schedule's).
    to_cancel = pay("rtp", 3_200, scheduled_for: tomorrow.strftime("%Y-%m-%d"))
    b_before = balance.call(S[:b])
    too_much = pay("rtp", b_before.available + 1, account: S[:b], scheduled_for: tomorrow)
    assert_equal %w[scheduled scheduled], [to_cancel.status, too_much.status]
    assert_equal b_before.available, balance.call(S[:b]).available

    # The status filter takes `scheduled` (newest first).
    listed = client.payments.list(status: "scheduled").to_a
    assert_equal [too_much.id, to_cancel.id, scheduled.id], listed.map(&:id)
    assert(listed.all? { |p| p.scheduled_for == tomorrow.strftime("%Y-%m-%d") && p.journal_entry_id.nil? })

    # A bad date: 400, param scheduled_for, nothing made.
    [eastern_today, eastern_today + 366, eastern_today - 1, "tomorrow", "2027-02-30"].each do |bad|
      error = assert_api_error(Treasury::BadRequestError, code: "invalid_request", status: 400) do
        pay("rtp", 100, scheduled_for: bad)
      end
      assert_equal "scheduled_for", error.param, bad.to_s
    end
    assert_equal 3, client.payments.list(status: "scheduled").count

    # Released by the simulation: held and pending, with its journal entry.
    assert_api_error(Treasury::PermissionDeniedError, status: 403) { live.simulations.payments.release(scheduled.id) }
    assert_api_error(Treasury::NotFoundError, code: "not_found", status: 404) do
      foreign.simulations.payments.release(scheduled.id)
    end
    released = client.simulations.payments.release(scheduled.id)
    assert_equal ["pending", scheduled.id, tomorrow.strftime("%Y-%m-%d")],
                 [released.status, released.id, released.scheduled_for]
    refute_nil released.journal_entry_id
    assert_equal before.available - released.amount - released.fee, balance.call(S[:a]).available, "amount + fee held"
    # Released once: again, 409 invalid_state; and an ordinary payment never was scheduled.
    assert_api_error(Treasury::ConflictError, code: "invalid_state", status: 409) do
      client.simulations.payments.release(scheduled.id)
    end
    assert_api_error(Treasury::ConflictError, code: "invalid_state", status: 409) do
      client.simulations.payments.release(ordinary.id)
    end
    settled = poll_payment(scheduled.id, "completed", "failed")
    assert_equal ["completed", released.journal_entry_id], [settled.status, settled.journal_entry_id]
    entry = assert_journal_entry(released.journal_entry_id, { type: "payment", id: scheduled.id }, "posted")
    assert_equal payment_lines(settled), own_lines(entry, settled)

    # Canceled while scheduled: nothing to release, and nothing more to release.
    canceled = client.payments.cancel(to_cancel.id)
    assert_equal ["canceled", nil, tomorrow.strftime("%Y-%m-%d")],
                 [canceled.status, canceled.journal_entry_id, canceled.scheduled_for]
    refute_nil canceled.canceled_at
    assert_api_error(Treasury::ConflictError, code: "invalid_state", status: 409) do
      client.simulations.payments.release(to_cancel.id)
    end
    assert_equal before.available - released.amount - released.fee, balance.call(S[:a]).available

    # Released without the funds: failed with the rule's code, no rail's code, nothing held.
    failed = client.simulations.payments.release(too_much.id)
    assert_equal "failed", failed.status
    assert_kind_of Treasury::Models::PaymentFailure, failed.failure
    assert_equal ["insufficient_funds", nil], [failed.failure.code, failed.failure.network_code]
    assert failed.failure.key?(:network_code), "network_code is null, not absent"
    assert_equal "retry_later", failed.failure.retry_recommendation.action
    assert_nil failed.journal_entry_id
    refute_nil failed.failed_at
    assert_equal b_before.available, balance.call(S[:b]).available
    assert_equal failed.to_h, client.payments.retrieve(too_much.id).to_h
    assert_empty client.payments.list(status: "scheduled").to_a

    # The events: payment.released for the released one (pending, with its entry), payment.failed
    # for the refused one; and the webhook that asked for payment.released.
    released_events = wait_until("payment.released of #{scheduled.id}") do
      list = client.events.list(type: "payment.released").to_a
      list.any? { |e| e.data.resource.id == scheduled.id } ? list : nil
    end
    assert_equal [[scheduled.id, "pending", released.journal_entry_id]],
                 released_events.map { |e| [e.data.resource.id, e.data.resource.status, e.data.resource.journal_entry_id] }
    failed_event = wait_until("payment.failed of #{too_much.id}") do
      client.events.list(type: "payment.failed").find { |e| e.data.resource.id == too_much.id }
    end
    assert_equal ["insufficient_funds", nil],
                 [failed_event.data.resource.failure.code, failed_event.data.resource.failure.network_code]
    delivery = receiver.wait_for(timeout: 10) { |r| JSON.parse(r.body)["type"] == "payment.released" }
    refute_nil delivery, "payment.released was not delivered"
    event = Treasury::Models::Event.construct(Treasury::Webhooks.verify(delivery.body, delivery.headers, endpoint.secret))
    assert_equal [scheduled.id, tomorrow.strftime("%Y-%m-%d")], [event.data.resource.id, event.data.resource.scheduled_for]
  ensure
    client.webhooks.delete(endpoint.id) if endpoint
    receiver&.close
  end

  # Webhook replay: the platform's past events of a window sent to an endpoint again, each as a new
  # delivery (its own webhook-id, `replay_id` naming the replay) carrying the event as first sent
  # (the same event id), signed like any delivery. After test_13f (no later step counts events or
  # deliveries).
  def test_13g_webhook_replay
    receiver = StubServer.new { [200, { "Content-Type" => "text/plain" }, "ok"] }
    live = Treasury::Client.new(api_key: S.fetch(:live_key), base_url: BASE_URL)
    foreign = Treasury::Client.new(api_key: S.fetch(:foreign_key), base_url: BASE_URL)
    started = Time.now.utc
    endpoint = client.webhooks.create(url: receiver.url("/hooks/replay"), events: ["payment.completed"],
                                      description: "replay #{RUN}")
    secret = endpoint.secret

    # Some events: two payments, completed, and their payment.completed delivered the first time.
    made = [pay("rtp", 301), pay("fednow", 302)].map { |p| poll_payment(p.id, "completed") }
    originals = made.to_h do |p|
      delivery = receiver.wait_for(timeout: 20) do |r|
        body = JSON.parse(r.body)
        body["type"] == "payment.completed" && body.dig("data", "object", "id") == p.id
      end
      refute_nil delivery, "payment.completed of #{p.id} was not delivered"
      event = Treasury::Webhooks.verify(delivery.body, delivery.headers, secret)
      [event["id"], delivery]
    end
    sleep 0.01
    ended = Time.now.utc
    # The window's events, as GET /events shows them once they stop changing (projected, async).
    window = ->(**q) { client.events.list(created_after: started, created_before: ended, limit: 100, **q).to_a }
    events = nil
    wait_until("the window's events to settle", timeout: 20, interval: 0.3) do
      now = window.call.map(&:id).sort
      settled = events == now
      events = now
      settled
    end
    by_type = ->(*types) { window.call.select { |e| types.include?(e.type) }.map(&:id).sort }
    completed_ids = by_type.call("payment.completed")
    assert_equal originals.keys.sort, completed_ids, "the window holds the two payment.completed events"
    typed_ids = by_type.call("payment.created", "payment.completed")
    assert_equal 4, typed_ids.size

    # Without types: the types the endpoint subscribes to (payment.completed).
    plain = client.webhooks.replay(endpoint.id, created_after: started, created_before: ended)
    assert_kind_of Treasury::Models::WebhookReplay, plain
    assert_match(/\Arpl_[0-9a-z]{26}\z/, plain.id)
    assert_equal ["webhook_replay", endpoint.id, 2, nil], [plain.object, plain.webhook_id, plain.replayed, plain.types]
    assert plain.key?(:types), "types is null, not absent"
    assert_equal started.strftime("%Y-%m-%dT%H:%M:%S.%LZ"), plain.created_after
    assert_equal ended.strftime("%Y-%m-%dT%H:%M:%S.%LZ"), plain.created_before

    # With types, under one idempotency key: subscribed to or not; the same key and body again is
    # the same replay (200, no second batch); another body under the key is 409.
    key = "ruby-#{RUN}-replay-1"
    typed = client.webhooks.replay(endpoint.id, created_after: started, created_before: ended,
                                                types: %w[payment.created payment.completed], idempotency_key: key)
    assert_equal [typed_ids.size, %w[payment.created payment.completed]], [typed.replayed, typed.types]
    again = client.webhooks.replay(endpoint.id, created_after: started, created_before: ended,
                                                types: %w[payment.created payment.completed], idempotency_key: key)
    assert_equal typed.to_h, again.to_h
    statuses = Recorder.calls.select { |c| c.method == :post && c.headers["Idempotency-Key"] == key }.map(&:status)
    assert_equal [201, 200], statuses.reject { |st| [429, 503].include?(st) }, statuses.inspect
    error = assert_api_error(Treasury::ConflictError, code: "idempotency_conflict", status: 409) do
      client.webhooks.replay(endpoint.id, created_after: started, created_before: ended,
                                          types: ["payment.created"], idempotency_key: key)
    end
    assert_equal typed.id, error.resource_id

    # The deliveries: one per replayed event, with replay_id; the first ones have none.
    deliveries = wait_until("the replayed deliveries to succeed", timeout: 30, interval: 0.3) do
      list = client.webhooks.deliveries.list(endpoint.id, limit: 100).to_a
      replayed = list.reject { |d| d.replay_id.nil? }
      replayed.size == plain.replayed + typed.replayed && replayed.all? { |d| d.status == "succeeded" } ? list : nil
    end
    assert_equal [nil, nil], deliveries.select { |d| originals.key?(d.event_id) && d.replay_id.nil? }.map(&:replay_id)
    assert_equal 2, deliveries.count { |d| d.replay_id.nil? }, "the two first deliveries, no more"
    assert(deliveries.all? { |d| d.key?(:replay_id) })
    of = ->(replay) { deliveries.select { |d| d.replay_id == replay.id } }
    assert_equal completed_ids, of.call(plain).map(&:event_id).sort
    assert_equal typed_ids, of.call(typed).map(&:event_id).sort, "one batch for the key, not two"
    assert_equal [plain.id, typed.id].sort, deliveries.map(&:replay_id).compact.uniq.sort

    # Received again: each replayed delivery under its own webhook-id, signed, with the original event id
    # and body.
    [plain, typed].each do |replay|
      of.call(replay).each do |d|
        got = receiver.wait_for(timeout: 20) { |r| r["webhook-id"] == d.id }
        refute_nil got, "replayed delivery #{d.id} did not arrive"
        event = Treasury::Webhooks.verify(got.body, got.headers, secret)
        assert_equal [d.event_id, d.event_type], [event["id"], event["type"]]
        refute_includes originals.values.map { |o| o["webhook-id"] }, d.id
        original = originals[event["id"]]
        assert_equal JSON.parse(original.body), event, "the event as first sent" if original
      end
    end
    received = receiver.requests.map { |r| JSON.parse(r.body)["id"] }
    assert_equal 3, received.count(originals.keys.first), "first sent, then replayed twice"

    # Refusals: a reversed window, an unknown type, another platform's or environment's endpoint, a
    # disabled one.
    error = assert_api_error(Treasury::BadRequestError, code: "invalid_request", status: 400) do
      client.webhooks.replay(endpoint.id, created_after: ended, created_before: started)
    end
    assert_equal "created_before", error.param
    error = assert_api_error(Treasury::BadRequestError, code: "invalid_request", status: 400) do
      client.webhooks.replay(endpoint.id, created_after: started, created_before: ended,
                                          types: ["payment.completed", "payment.exploded"])
    end
    assert_equal "types[1]", error.param
    assert_api_error(Treasury::NotFoundError, code: "not_found", status: 404) do
      foreign.webhooks.replay(endpoint.id, created_after: started, created_before: ended)
    end
    assert_api_error(Treasury::NotFoundError, code: "not_found", status: 404) do
      live.webhooks.replay(endpoint.id, created_after: started, created_before: ended)
    end
    client.webhooks.update(endpoint.id, status: "disabled")
    assert_api_error(Treasury::ConflictError, code: "invalid_state", status: 409) do
      client.webhooks.replay(endpoint.id, created_after: started, created_before: ended)
    end
    # A window of dates (midnight UTC) in the future is fine and replays nothing.
    client.webhooks.update(endpoint.id, status: "enabled")
    future = client.webhooks.replay(endpoint.id, created_after: Date.today + 2, created_before: Date.today + 3)
    assert_equal [0, (Date.today + 2).strftime("%Y-%m-%dT00:00:00.000Z")], [future.replayed, future.created_after]
  ensure
    client.webhooks.delete(endpoint.id) if endpoint
    receiver&.close
  end

  # GET /ledger/journal-entries: each filter, alone and combined, pages of 1 and 2 keeping the filters,
  # each item as GET /ledger/journal-entries/{id} shows it. After test_13g.
  def test_13h_journal_entries_list
    started = Time.now.utc
    batch = "ruby-#{RUN}"
    manual = lambda do |type, account, direction, amount, kind|
      entry = client.ledger.entries.create(type: type, description: "#{type} #{kind}", virtual_account_id: account,
                                           direction: direction, amount: amount,
                                           metadata: { "batch" => batch, "kind" => kind })
      sleep 0.01 # distinct created_at milliseconds, for the time filters
      entry
    end
    e1 = manual.call("adjustment", S[:a], "credit", 401, "credit")
    e2 = manual.call("fee", S[:a], "debit", 402, "fee")
    e3 = manual.call("correction", S[:b], "credit", 403, "credit")
    payment = poll_payment(pay("rtp", 404).id, "completed")
    list = ->(**q) { client.ledger.journal_entries.list(**q).to_a }
    ids = ->(**q) { list.call(**q).map(&:id) }

    # Newest first, one a page: the filter and the cursor on every page's request.
    before = Recorder.calls.size
    walked = list.call(metadata: { "batch" => batch }, limit: 1)
    assert_equal [e3.id, e2.id, e1.id], walked.map(&:id)
    pages = Recorder.calls[before..].select do |c|
      c.method == :get && c.uri.path.end_with?("/ledger/journal-entries") && ![429, 503].include?(c.status)
    end
    assert_equal 3, pages.size, pages.map { |c| c.uri.query }.inspect
    assert(pages.all? { |c| c.uri.query.include?("metadata[batch]=#{URI.encode_www_form_component(batch)}") })
    assert(pages.drop(1).all? { |c| c.uri.query.include?("cursor=") })
    # Each item is the journal entry GET /ledger/journal-entries/{id} shows, with its lines and source.
    walked.each do |item|
      assert_kind_of Treasury::Models::JournalEntry, item
      assert_equal client.ledger.journal_entries.retrieve(item.id).to_h, item.to_h
    end
    assert_equal({ type: "journal_entry", id: e2.id }, walked[1].source.to_h)
    assert_kind_of Treasury::Models::LedgerEntry, walked[1].entries.first

    # metadata: every pair must match.
    assert_equal [e3.id, e1.id], ids.call(metadata: { "batch" => batch, "kind" => "credit" })
    assert_empty ids.call(metadata: { "batch" => batch, "kind" => "debit" })
    # type, status, source_type and source_id.
    assert_equal [e2.id], ids.call(type: "fee", metadata: { "batch" => batch })
    assert_equal [e1.id], ids.call(type: "adjustment", created_after: started)
    assert_equal [e3.id, e2.id, e1.id], ids.call(status: "posted", metadata: { "batch" => batch }, limit: 2)
    assert_equal [payment.journal_entry_id], ids.call(source_id: payment.id)
    assert_equal [payment.journal_entry_id], ids.call(source_id: payment.id, status: "posted", type: "payment")
    assert_empty ids.call(source_id: payment.id, status: "archived")
    assert_equal [payment.journal_entry_id], ids.call(source_type: "payment", created_after: started)
    assert_equal [e3.id, e2.id, e1.id], ids.call(source_type: "journal_entry", created_after: started)
    # virtual_account_id, walked two a page; an unknown account is an empty list, not 404.
    before = Recorder.calls.size
    assert_equal [payment.journal_entry_id, e2.id, e1.id],
                 ids.call(virtual_account_id: S[:a], created_after: started, limit: 2)
    pages = Recorder.calls[before..].select do |c|
      c.method == :get && c.uri.path.end_with?("/ledger/journal-entries") && ![429, 503].include?(c.status)
    end
    assert_equal 2, pages.size
    assert(pages.all? { |c| c.uri.query.include?("virtual_account_id=#{S[:a]}") && c.uri.query.include?("created_after=") })
    assert_equal [e3.id], ids.call(virtual_account_id: S[:b], created_after: started)
    assert_empty ids.call(virtual_account_id: "va_00000000000000000000000000")
    # created_before (exclusive) and created_after (inclusive).
    assert_equal [e1.id], ids.call(metadata: { "batch" => batch }, created_before: Time.iso8601(e2.created_at))
    assert_equal [e2.id, e1.id], ids.call(metadata: { "batch" => batch }, created_after: Time.iso8601(e1.created_at),
                                          created_before: Time.iso8601(e3.created_at))
    # The payment's entry as the list shows it: its lines and source, as by id.
    entry = list.call(source_id: payment.id).first
    assert_equal({ type: "payment", id: payment.id }, entry.source.to_h)
    assert_equal client.ledger.journal_entries.retrieve(payment.journal_entry_id).to_h, entry.to_h
    # Another platform sees none of them.
    foreign = Treasury::Client.new(api_key: S.fetch(:foreign_key), base_url: BASE_URL)
    assert_empty foreign.ledger.journal_entries.list(metadata: { "batch" => batch }).to_a

    # A bad filter: 400 naming it (payment_fee is a line's type, not an entry's).
    error = assert_api_error(Treasury::BadRequestError, code: "invalid_request", status: 400) do
      client.ledger.journal_entries.list(type: "payment_fee")
    end
    assert_equal "type", error.param
    error = assert_api_error(Treasury::BadRequestError, code: "invalid_request", status: 400) do
      client.ledger.journal_entries.list(status: "done")
    end
    assert_equal "status", error.param
  end

  # Counterparties: saved, listed with their filters over pages, created again under one key,
  # verified by prenote (verified; failed R03 for 4000000003, with its event and webhook), paid, the
  # require_verified_counterparty setting, deleted; a live key's prenote is pending at once (again:
  # 409); another platform's and environment's counterparties are 404.
  def test_13i_counterparties
    receiver = StubServer.new { [200, { "Content-Type" => "text/plain" }, "ok"] }
    live = Treasury::Client.new(api_key: S.fetch(:live_key), base_url: BASE_URL)
    foreign = Treasury::Client.new(api_key: S.fetch(:foreign_key), base_url: BASE_URL)
    batch = "ruby-cp-#{RUN}"
    # The prenote's answer comes after the same-day delay: long enough to see it pending.
    client.platform.settings.update(sandbox: { ach_same_day_delay_seconds: 3 })
    endpoint = client.webhooks.create(url: receiver.url("/hooks/counterparties"),
                                      events: %w[counterparty.verified counterparty.verification_failed])
    secret = endpoint.secret
    save = lambda do |name, number, type, vendor, **opts|
      client.counterparties.create(name: "#{name} #{RUN}", account_number: number, routing_number: "021000021",
                                   account_type: type, metadata: { "batch" => batch, "vendor" => vendor }, **opts)
    end

    # Saved: the shape, the last four digits only, nowhere the whole account number.
    key = "ruby-#{RUN}-cp-1"
    initech = save.call("Initech", "987654321", "checking", "initech", idempotency_key: key)
    assert_kind_of Treasury::Models::Counterparty, initech
    assert_match(/\Acp_[0-9a-hjkmnp-tv-z]{26}\z/, initech.id)
    assert_equal %i[account_number_last4 account_type created_at environment id metadata name object routing_number
                    verification], initech.to_h.keys.sort
    assert_equal ["counterparty", "Initech #{RUN}", "4321", "021000021", "checking", "sandbox"],
                 [initech.object, initech.name, initech.account_number_last4, initech.routing_number,
                  initech.account_type, initech.environment]
    assert_equal({ "batch" => batch, "vendor" => "initech" }, initech.metadata)
    assert_kind_of Treasury::Models::CounterpartyVerification, initech.verification
    assert_equal({ status: "unverified", method: nil }, initech.verification.to_h)
    refute_includes JSON.generate(initech.to_h), "987654321"
    assert_match(/\A\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z\z/, initech.created_at)
    # The same key and body: the same counterparty (201 then 200); another body: 409 naming it.
    again = save.call("Initech", "987654321", "checking", "initech", idempotency_key: key)
    assert_equal initech.to_h, again.to_h
    statuses = Recorder.calls.select { |c| c.method == :post && c.headers["Idempotency-Key"] == key }.map(&:status)
    assert_equal [201, 200], statuses.reject { |st| [429, 503].include?(st) }, statuses.inspect
    error = assert_api_error(Treasury::ConflictError, code: "idempotency_conflict", status: 409) do
      save.call("Initech", "987654322", "checking", "initech", idempotency_key: key)
    end
    assert_equal initech.id, error.resource_id
    # Without a key the client sends a random one: two calls, two counterparties.
    globex = save.call("Globex", "123456789", "savings", "globex")
    nobody = save.call("Nobody", "4000000003", "checking", "nobody")
    refute_equal globex.id, nobody.id
    assert_equal %w[savings 6789 0003], [globex.account_type, globex.account_number_last4, nobody.account_number_last4]
    assert_equal initech.to_h, client.counterparties.retrieve(initech.id).to_h

    # The list: newest first, one a page, the filter and the cursor on every page's request.
    list = ->(**q) { client.counterparties.list(**q).to_a }
    ids = ->(**q) { list.call(metadata: { "batch" => batch }, **q).map(&:id) }
    before = Recorder.calls.size
    walked = list.call(metadata: { "batch" => batch }, limit: 1)
    assert_equal [nobody.id, globex.id, initech.id], walked.map(&:id)
    pages = Recorder.calls[before..].select do |c|
      c.method == :get && c.uri.path.end_with?("/counterparties") && ![429, 503].include?(c.status)
    end
    assert_equal 3, pages.size, pages.map { |c| c.uri.query }.inspect
    assert(pages.all? { |c| c.uri.query.include?("metadata[batch]=#{URI.encode_www_form_component(batch)}") })
    assert(pages.drop(1).all? { |c| c.uri.query.include?("cursor=") })
    assert_equal initech.to_h, walked.last.to_h
    assert_equal [globex.id], list.call(metadata: { "batch" => batch, "vendor" => "globex" }).map(&:id)
    assert_equal [nobody.id, globex.id, initech.id], ids.call(verification_status: "unverified", limit: 2)
    assert_empty ids.call(verification_status: "verified")
    assert_equal [globex.id], ids.call(created_after: Time.iso8601(globex.created_at),
                                       created_before: Time.iso8601(nobody.created_at))
    error = assert_api_error(Treasury::BadRequestError, code: "invalid_request", status: 400) do
      client.counterparties.list(verification_status: "done")
    end
    assert_equal "verification_status", error.param

    # Verified by prenote: pending at once (again: 409), then verified, or failed with the return code.
    pending = client.counterparties.verify(initech.id)
    assert_equal initech.id, pending.id
    assert_equal({ status: "pending", method: "prenote" }, pending.verification.to_h)
    failing = client.counterparties.verify(nobody.id, method: "prenote")
    assert_equal "pending", failing.verification.status
    assert_equal [nobody.id, initech.id], ids.call(verification_status: "pending")
    assert_api_error(Treasury::ConflictError, code: "invalid_state", status: 409) { client.counterparties.verify(initech.id) }
    error = assert_api_error(Treasury::BadRequestError, code: "invalid_request", status: 400) do
      client.counterparties.verify(globex.id, method: "micro_deposits")
    end
    assert_equal "method", error.param
    settled = lambda do |cp, status|
      wait_until("#{cp.id} to be #{status}", timeout: 30, interval: 0.2) do
        now = client.counterparties.retrieve(cp.id)
        now.verification.status == status ? now : nil
      end
    end
    verified = settled.call(initech, "verified")
    assert_equal({ status: "verified", method: "prenote" }, verified.verification.to_h)
    failed = settled.call(nobody, "failed")
    assert_equal({ status: "failed", method: "prenote", failure_code: "R03" }, failed.verification.to_h)
    assert_equal [initech.id], ids.call(verification_status: "verified")
    assert_equal [nobody.id], ids.call(verification_status: "failed")
    assert_equal [globex.id], ids.call(verification_status: "unverified")
    assert_api_error(Treasury::ConflictError, code: "invalid_state", status: 409) { client.counterparties.verify(initech.id) }

    # Their events (data.object the counterparty) and webhooks, signed; no account number in them.
    { initech.id => "counterparty.verified", nobody.id => "counterparty.verification_failed" }.each do |id, type|
      event = wait_until("#{type} of #{id}", timeout: 15) do
        client.events.list(type: type, limit: 100).find { |e| e.data.object["id"] == id }
      end
      assert_kind_of Treasury::Models::Counterparty, event.data.resource
      assert_equal client.counterparties.retrieve(id).to_h, event.data.resource.to_h
      delivery = receiver.wait_for(timeout: 20) do |r|
        body = JSON.parse(r.body)
        body["type"] == type && body.dig("data", "object", "id") == id
      end
      refute_nil delivery, "#{type} of #{id} was not delivered"
      received = Treasury::Webhooks.verify(delivery.body, delivery.headers, secret)
      assert_equal event.id, received["id"]
      refute_includes delivery.body, id == nobody.id ? "4000000003" : "987654321"
    end
    received = receiver.requests.map { |r| JSON.parse(r.body) }
    assert_equal "R03", received.find { |e| e["type"] == "counterparty.verification_failed" }
                                .dig("data", "object", "verification", "failure_code")

    # A failed one may be verified again: pending once more, its failure_code cleared.
    retried = client.counterparties.verify(nobody.id)
    assert_equal({ status: "pending", method: "prenote" }, retried.verification.to_h)
    refute retried.verification.key?(:failure_code)

    # Paid: the payment names the counterparty and copies its account; a raw payment does not.
    payment = client.payments.create(virtual_account_id: S[:a], amount: 601, rail: "rtp", counterparty_id: initech.id)
    assert_equal initech.id, payment.counterparty_id
    assert_equal({ account_number: "987654321", routing_number: "021000021", name: initech.name },
                 payment.destination.to_h)
    completed = poll_payment(payment.id, "completed")
    assert_equal [initech.id, "987654321"], [completed.counterparty_id, completed.destination.account_number]
    raw = pay("rtp", 602)
    assert_nil raw.counterparty_id
    refute raw.key?(:counterparty_id), "absent on a payment to a raw destination"
    # Both, or neither: 400 on counterparty_id; an unknown counterparty: 404 on counterparty_id.
    error = assert_api_error(Treasury::BadRequestError, code: "invalid_request", status: 400) do
      client.payments.create(virtual_account_id: S[:a], amount: 603, rail: "rtp", destination: GOOD,
                             counterparty_id: initech.id)
    end
    assert_equal "counterparty_id", error.param
    error = assert_api_error(Treasury::BadRequestError, code: "invalid_request", status: 400) do
      client.payments.create(virtual_account_id: S[:a], amount: 603, rail: "rtp")
    end
    assert_equal "counterparty_id", error.param
    error = assert_api_error(Treasury::NotFoundError, code: "not_found", status: 404) do
      client.payments.create(virtual_account_id: S[:a], amount: 603, rail: "rtp",
                             counterparty_id: "cp_00000000000000000000000000")
    end
    assert_equal "counterparty_id", error.param

    # require_verified_counterparty: an unverified counterparty, or a raw destination, is 422.
    begin
      settings = client.platform.settings.update(require_verified_counterparty: true)
      assert_kind_of Treasury::Models::PlatformSettings, settings
      assert_equal true, settings.require_verified_counterparty
      assert_equal true, client.platform.settings.retrieve.require_verified_counterparty
      error = assert_api_error(Treasury::UnprocessableEntityError, code: "counterparty_not_verified", status: 422) do
        client.payments.create(virtual_account_id: S[:a], amount: 604, rail: "rtp", counterparty_id: globex.id)
      end
      assert_equal ["counterparty_id", globex.id], [error.param, error.resource_id]
      error = assert_api_error(Treasury::UnprocessableEntityError, code: "counterparty_not_verified", status: 422) do
        pay("rtp", 605)
      end
      assert_equal "destination", error.param
      ok = client.payments.create(virtual_account_id: S[:a], amount: 606, rail: "rtp", counterparty_id: initech.id)
      assert_equal initech.id, ok.counterparty_id
    ensure
      off = client.platform.settings.update(require_verified_counterparty: false)
    end
    assert_equal false, off.require_verified_counterparty
    assert_equal false, client.platform.settings.retrieve.require_verified_counterparty

    # Live: saved like a sandbox one, and its prenote is pending at once, asked once (it leaves in the
    # next outbound ACH file; nothing settles it during a test); again while pending: 409 invalid_state,
    # not retried. Each environment sees only its own.
    live_cp = live.counterparties.create(name: "Live #{RUN}", account_number: "55555555", routing_number: "021000021",
                                         account_type: "checking")
    assert_equal ["live", "5555", "unverified"], [live_cp.environment, live_cp.account_number_last4,
                                                 live_cp.verification.status]
    before = Recorder.calls.size
    live_pending = live.counterparties.verify(live_cp.id)
    assert_equal [live_cp.id, "live"], [live_pending.id, live_pending.environment]
    assert_equal({ status: "pending", method: "prenote" }, live_pending.verification.to_h)
    attempts = Recorder.calls[before..].select { |c| c.uri.path.end_with?("/verify") }.map(&:status)
    assert_equal [200], attempts.reject { |st| [429, 503].include?(st) }, "asked once: #{attempts.inspect}"
    before = Recorder.calls.size
    error = assert_api_error(Treasury::ConflictError, code: "invalid_state", status: 409) do
      live.counterparties.verify(live_cp.id, method: "prenote")
    end
    assert_equal live_cp.id, error.resource_id
    attempts = Recorder.calls[before..].select { |c| c.uri.path.end_with?("/verify") }.map(&:status)
    assert_equal [409], attempts.reject { |st| [429, 503].include?(st) }, "not retried: #{attempts.inspect}"
    assert_equal({ status: "pending", method: "prenote" }, live.counterparties.retrieve(live_cp.id).verification.to_h)
    assert_equal [live_cp.id], live.counterparties.list(verification_status: "pending").map(&:id)
    assert_api_error(Treasury::NotFoundError, code: "not_found", status: 404) { live.counterparties.retrieve(initech.id) }
    assert_api_error(Treasury::NotFoundError, code: "not_found", status: 404) { client.counterparties.retrieve(live_cp.id) }
    refute_includes list.call(limit: 100).map(&:id), live_cp.id
    assert_equal({ id: live_cp.id, object: "counterparty", deleted: true }, live.counterparties.delete(live_cp.id).to_h)

    # Another platform: 404 for each of them, and none listed.
    assert_api_error(Treasury::NotFoundError, code: "not_found", status: 404) { foreign.counterparties.retrieve(initech.id) }
    assert_api_error(Treasury::NotFoundError, code: "not_found", status: 404) { foreign.counterparties.verify(globex.id) }
    assert_api_error(Treasury::NotFoundError, code: "not_found", status: 404) { foreign.counterparties.delete(globex.id) }
    assert_empty foreign.counterparties.list(metadata: { "batch" => batch }).to_a

    # Deleted: 404 from then on, for payments too, and out of the list.
    deleted = client.counterparties.delete(globex.id)
    assert_kind_of Treasury::Models::DeletedCounterparty, deleted
    assert_equal({ id: globex.id, object: "counterparty", deleted: true }, deleted.to_h)
    assert_api_error(Treasury::NotFoundError, code: "not_found", status: 404) { client.counterparties.retrieve(globex.id) }
    assert_api_error(Treasury::NotFoundError, code: "not_found", status: 404) { client.counterparties.delete(globex.id) }
    error = assert_api_error(Treasury::NotFoundError, code: "not_found", status: 404) do
      client.payments.create(virtual_account_id: S[:a], amount: 607, rail: "rtp", counterparty_id: globex.id)
    end
    assert_equal "counterparty_id", error.param
    assert_equal [nobody.id, initech.id], ids.call
  ensure
    client.webhooks.delete(endpoint.id) if endpoint
    client.platform.settings.update(sandbox: { ach_same_day_delay_seconds: 1 })
    receiver&.close
  end

  def test_14_operator_rails
    files = operator.rails.ach_files.list(limit: 10)
    assert_kind_of Treasury::Page, files
    begin
      cut = operator.rails.ach_files.cut
      assert_equal "list", cut.object
    rescue Treasury::ConflictError => e
      # A server without TREASURY_ACH_OUTBOX cannot cut files: the route answers 409.
      assert_equal "invalid_state", e.code
    end
  end

  def test_15_a_real_429_is_retried_after_retry_after
    other = S.fetch(:other)
    key = operator.platforms.approve(other).sandbox_api_key.secret
    limited = operator.platforms.update(other, rate_limit: { per_second: 1, burst: 1 })
    assert_equal 1, limited.rate_limit.burst

    no_retry = Treasury::Client.new(api_key: key, base_url: BASE_URL, max_retries: 0)
    with_retry = Treasury::Client.new(api_key: key, base_url: BASE_URL)
    error = nil
    5.times do # empty the bucket (burst 1): a 429 comes by the second call
      no_retry.platform.retrieve
    rescue Treasury::RateLimitError => e
      error = e
      break
    end
    refute_nil error, "no 429 with a rate limit of 1/s"
    assert_equal 429, error.status
    assert_equal "rate_limited", error.code
    assert_operator error.retry_after, :>=, 1

    # The bucket is empty: the retrying client gets a 429, waits its Retry-After, and succeeds.
    started = monotonic
    before = Recorder.calls.size
    account = with_retry.virtual_accounts.create(platform_id: other, entity_ref: "rate-#{RUN}", type: "savings")
    elapsed = monotonic - started
    assert_equal "savings", account.type
    attempts = Recorder.calls[before..].select { |c| c.uri.path.end_with?("/virtual-accounts") }
    statuses = attempts.map(&:status)
    assert_equal 429, statuses.first, "the first attempt was rate limited: #{statuses.inspect}"
    assert_equal 201, statuses.last
    # Retry-After here is 1 s (1 token a second); the backoff's first wait would be 0.5 s at most.
    gap = attempts[1].at - attempts[0].at
    assert_operator gap, :>=, 0.95, "waited the Retry-After of 1 s, not the backoff: #{statuses.inspect}"
    assert_operator elapsed, :>=, 0.95
    keys = attempts.map { |c| c.headers["Idempotency-Key"] }.uniq
    assert_equal 1, keys.size, "the retried POST kept its Idempotency-Key"
  ensure
    operator.platforms.update(other, rate_limit: nil) if other
  end

  def test_99_every_route_was_called_on_the_server
    calls = Recorder.calls.select { |c| "#{c.uri.scheme}://#{c.uri.host}:#{c.uri.port}#{c.uri.path}".start_with?(BASE_URL) }
    prefix = URI.parse(BASE_URL).path
    lines = calls.map { |c| ["#{c.method.to_s.upcase} #{c.uri.request_uri}", c.status] }
    missing = OpenAPIRoutesTest::ROUTES.keys.reject do |route|
      matcher = OpenAPIRoutesTest.matcher(route, prefix)
      lines.any? { |line, status| status && matcher.match?(line) && (status < 300 || route == "POST /operator/rails/ach/files") }
    end
    assert_empty missing, "routes the suite did not call successfully on the server"
  end
end
