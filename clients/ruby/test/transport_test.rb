# frozen_string_literal: true

require_relative "test_helper"

# Retries, idempotency keys and error mapping against a local stub: for what a real server cannot
# be made to answer on demand (a 500; a 503 then a success). Everything else is tested against
# the real server in integration_test.rb, including a real 429 and its Retry-After.
class TransportTest < Minitest::Test
  include TestHelpers

  JSON_TYPE = { "Content-Type" => "application/json" }.freeze
  PAYMENT = {
    virtual_account_id: "va_01", amount: 100, rail: "rtp",
    destination: { account_number: "123456789", routing_number: "021000021", name: "Globex" }
  }.freeze

  def teardown
    @stub&.close
  end

  def stub(&handler)
    @stub = StubServer.new(&handler)
  end

  def client(max_retries: 2)
    Treasury::Client.new(api_key: "sk_sandbox_test", base_url: @stub.url("/v1"), max_retries: max_retries)
  end

  def error_body(code, message = "failed", **extra)
    JSON.generate({ code: code, message: message, request_id: "req_stub" }.merge(extra))
  end

  def payment_body(key)
    JSON.generate(PAYMENT.merge(id: "pay_01", object: "payment", status: "pending", idempotency_key: key))
  end

  def test_internal_server_error_after_the_retries
    stub { [500, JSON_TYPE.merge("Retry-After" => "0"), error_body("internal_error", "an internal error occurred")] }
    error = assert_api_error(Treasury::InternalServerError, code: "internal_error", status: 500) do
      client.payments.retrieve("pay_01")
    end
    assert_equal "req_stub", error.request_id
    assert_equal 3, @stub.requests.size, "2 retries by default"
  end

  def test_503_is_an_internal_server_error_too
    stub { [503, JSON_TYPE.merge("Retry-After" => "0"), error_body("unavailable")] }
    assert_api_error(Treasury::InternalServerError, code: "unavailable", status: 503) do
      client(max_retries: 0).events.list
    end
    assert_equal 1, @stub.requests.size
  end

  def test_a_retried_post_keeps_its_idempotency_key
    stub do |req, i|
      if i < 2
        [503, JSON_TYPE.merge("Retry-After" => "0"), error_body("unavailable")]
      else
        [201, JSON_TYPE, payment_body(JSON.parse(req.body)["idempotency_key"])]
      end
    end
    payment = client.payments.create(**PAYMENT)
    assert_equal "pending", payment.status
    reqs = @stub.requests
    assert_equal 3, reqs.size
    keys = reqs.map { |r| r["idempotency-key"] }
    refute_nil keys.first
    assert_equal [keys.first] * 3, keys, "the same Idempotency-Key on every attempt"
    assert_equal [keys.first] * 3, reqs.map { |r| JSON.parse(r.body)["idempotency_key"] },
                 "the payment's body idempotency_key defaults to the header's"
    assert_equal 1, reqs.map(&:body).uniq.size, "the same body on every attempt"
    assert_equal keys.first, payment.idempotency_key
  end

  def test_the_callers_idempotency_key_is_used
    stub do |req, i|
      i.zero? ? [503, JSON_TYPE.merge("Retry-After" => "0"), error_body("unavailable")] : [201, JSON_TYPE, payment_body(req["idempotency-key"])]
    end
    client.payments.create(**PAYMENT, idempotency_key: "order-42")
    assert_equal %w[order-42 order-42], @stub.requests.map { |r| r["idempotency-key"] }
    assert_equal %w[order-42 order-42], @stub.requests.map { |r| JSON.parse(r.body)["idempotency_key"] }
  end

  # The server refuses a book transfer without an idempotency key: the client always sends one, in
  # the header and the body alike, the same on every attempt (its own, or the caller's).
  def test_a_book_transfer_always_carries_one_idempotency_key
    stub do |req, i|
      if i.even?
        [503, JSON_TYPE.merge("Retry-After" => "0"), error_body("unavailable")]
      else
        [201, JSON_TYPE, JSON.generate(id: "bt_01", object: "book_transfer", status: "completed",
                                       idempotency_key: JSON.parse(req.body)["idempotency_key"])]
      end
    end
    c = client
    generated = c.book_transfers.create(from_virtual_account_id: "va_01", to_virtual_account_id: "va_02", amount: 5)
    given = c.book_transfers.create(from_virtual_account_id: "va_01", to_virtual_account_id: "va_02", amount: 5,
                                    description: "d", metadata: { "k" => "v" }, idempotency_key: "bt-42")
    assert_kind_of Treasury::Models::BookTransfer, generated
    reqs = @stub.requests
    assert_equal 4, reqs.size
    assert(reqs.all? { |r| r.method == "POST" && r.path == "/v1/book-transfers" })
    keys = reqs.map { |r| r["idempotency-key"] }
    bodies = reqs.map { |r| JSON.parse(r.body) }
    assert_match(/\A\S+\z/, keys[0])
    assert_equal [keys[0], keys[0], "bt-42", "bt-42"], keys
    assert_equal keys, bodies.map { |b| b["idempotency_key"] }, "the body's idempotency_key is the header's"
    assert_equal keys[0], generated.idempotency_key
    assert_equal({ "from_virtual_account_id" => "va_01", "to_virtual_account_id" => "va_02", "amount" => 5,
                   "idempotency_key" => keys[0] }, bodies[0])
    assert_equal({ "from_virtual_account_id" => "va_01", "to_virtual_account_id" => "va_02", "amount" => 5,
                   "description" => "d", "metadata" => { "k" => "v" }, "idempotency_key" => "bt-42" }, bodies[2])
  end

  def test_book_transfers_list_keeps_its_filters_on_every_page
    stub do |_req, i|
      cursor = i.zero? ? '"c1"' : "null"
      [200, JSON_TYPE, %({"object":"list","data":[{"id":"bt_#{i}","object":"book_transfer"}],"has_more":#{i.zero?},"next_cursor":#{cursor}})]
    end
    ids = client.book_transfers.list(virtual_account_id: "va_01", created_after: Time.utc(2026, 1, 2, 3, 4, 5),
                                     metadata: { "order id" => "A&B" }, limit: 1).map(&:id)
    assert_equal %w[bt_0 bt_1], ids
    first, second = @stub.requests.map(&:path)
    assert_equal "/v1/book-transfers?virtual_account_id=va_01&created_after=2026-01-02T03%3A04%3A05.000Z" \
                 "&metadata[order+id]=A%26B&limit=1", first
    assert_equal "#{first}&cursor=c1", second
  end

  # Approve takes no body; deny sends its reason only when given. Both answer the payment, its
  # `approval` a PaymentApproval; a payment without one has no `approval` key at all.
  def test_approve_and_deny_bodies_and_the_approval_model
    approval = { created_by: "key_a", expires_at: "2026-01-08T00:00:00.000Z", approved_at: nil, approved_by: nil,
                 denied_at: "2026-01-01T00:00:01.000Z", denied_by: "key_b", denial_reason: "no" }
    stub do |req, _|
      body = { id: "pay_01", object: "payment", status: req.path.end_with?("/approve") ? "pending" : "denied" }
      body[:approval] = approval unless req.path.end_with?("/approve")
      [200, JSON_TYPE, JSON.generate(body)]
    end
    c = client
    approved = c.payments.approve("pay_01")
    denied = c.payments.deny("pay_01", reason: "no")
    c.payments.deny("pay/01")
    approve, deny, bare = @stub.requests
    assert_equal ["POST", "/v1/payments/pay_01/approve", "{}"], [approve.method, approve.path, approve.body]
    assert_equal ["POST", "/v1/payments/pay_01/deny", { "reason" => "no" }], [deny.method, deny.path, JSON.parse(deny.body)]
    assert_equal ["/v1/payments/pay%2F01/deny", "{}"], [bare.path, bare.body]
    assert_equal "pending", approved.status
    refute approved.key?(:approval)
    assert_nil approved.approval
    assert_kind_of Treasury::Models::PaymentApproval, denied.approval
    assert_equal ["denied", "key_b", "no", nil], [denied.status, denied.approval.denied_by, denied.approval.denial_reason,
                                                  denied.approval.approved_by]
    assert_equal approval, denied.to_h[:approval]
  end

  # scheduled_for goes in the body only when given (a Date as YYYY-MM-DD); release takes no body. A
  # scheduled payment carries scheduled_for and a null journal_entry_id, an unscheduled one has no
  # scheduled_for key at all; a failure a rule decided has a null network_code.
  def test_scheduled_for_release_and_the_null_network_code
    stub do |req, _|
      body = { id: "pay_01", object: "payment", status: "scheduled", scheduled_for: "2026-12-01",
               journal_entry_id: nil, failure: nil }
      if req.path.end_with?("/release")
        body = body.merge(status: "failed", failure: { code: "insufficient_funds", network_code: nil, reason: "r",
                                                       retry_recommendation: { action: "retry_later" } })
      elsif !req.body.include?("scheduled_for")
        body = { id: "pay_02", object: "payment", status: "pending", journal_entry_id: "je_01" }
      end
      [req.path.end_with?("/release") ? 200 : 201, JSON_TYPE, JSON.generate(body)]
    end
    c = client
    scheduled = c.payments.create(**PAYMENT, scheduled_for: Date.new(2026, 12, 1))
    c.payments.create(**PAYMENT, scheduled_for: "2026-12-01")
    plain = c.payments.create(**PAYMENT)
    failed = c.simulations.payments.release("pay/01")
    with_date, with_string, without, release = @stub.requests
    assert_equal "2026-12-01", JSON.parse(with_date.body)["scheduled_for"]
    assert_equal "2026-12-01", JSON.parse(with_string.body)["scheduled_for"]
    refute JSON.parse(without.body).key?("scheduled_for")
    assert_equal ["POST", "/v1/simulations/payments/pay%2F01/release", "{}"], [release.method, release.path, release.body]
    refute_nil release.headers["idempotency-key"]
    assert_equal ["scheduled", "2026-12-01", nil], [scheduled.status, scheduled.scheduled_for, scheduled.journal_entry_id]
    assert scheduled.key?(:journal_entry_id)
    refute plain.key?(:scheduled_for)
    assert_nil plain.scheduled_for
    assert_kind_of Treasury::Models::PaymentFailure, failed.failure
    assert_equal ["failed", "insufficient_funds", nil], [failed.status, failed.failure.code, failed.failure.network_code]
    assert failed.failure.key?(:network_code)
  end

  # replay sends the window (a Time as RFC 3339 UTC with milliseconds, a Date as YYYY-MM-DD, a string
  # as it is) and types only when given, with an Idempotency-Key (the caller's, else a random one, the
  # same on a retry); it answers a WebhookReplay. replay_too_large is a 400: BadRequestError.
  def test_webhook_replay_body_key_model_and_too_large
    stub do |req, i|
      if i == 1
        [503, JSON_TYPE.merge("Retry-After" => "0"), error_body("unavailable")]
      elsif i == 3
        [400, JSON_TYPE, error_body("replay_too_large", "too many", param: "created_before")]
      else
        body = JSON.parse(req.body)
        [201, JSON_TYPE,
         JSON.generate(id: "rpl_01", object: "webhook_replay", webhook_id: "wh_01",
                       created_after: body["created_after"], created_before: body["created_before"],
                       types: body["types"], replayed: 3, created_at: "2026-01-02T00:00:00.000Z")]
      end
    end
    c = client
    replay = c.webhooks.replay("wh/01", created_after: Time.utc(2026, 1, 2, 3, 4, 5),
                                        created_before: Date.new(2026, 1, 3), types: ["payment.completed"])
    untyped = c.webhooks.replay("wh_01", created_after: "2026-01-01T00:00:00Z", created_before: "2026-01-02",
                                         idempotency_key: "replay-42")
    error = assert_api_error(Treasury::BadRequestError, code: "replay_too_large", status: 400) do
      c.webhooks.replay("wh_01", created_after: "2020-01-01", created_before: "2026-01-01")
    end
    assert_equal "created_before", error.param
    first, untyped_first, retried, = @stub.requests
    assert_equal ["POST", "/v1/webhooks/wh%2F01/replay"], [first.method, first.path]
    assert_equal({ "created_after" => "2026-01-02T03:04:05.000Z", "created_before" => "2026-01-03",
                   "types" => ["payment.completed"] }, JSON.parse(first.body))
    refute_nil first.headers["idempotency-key"]
    assert_equal({ "created_after" => "2026-01-01T00:00:00Z", "created_before" => "2026-01-02" },
                 JSON.parse(untyped_first.body))
    assert_equal untyped_first.body, retried.body
    assert_equal %w[replay-42 replay-42], [untyped_first.headers["idempotency-key"], retried.headers["idempotency-key"]]
    assert_kind_of Treasury::Models::WebhookReplay, replay
    assert_equal ["rpl_01", "webhook_replay", "wh_01", ["payment.completed"], 3],
                 [replay.id, replay.object, replay.webhook_id, replay.types, replay.replayed]
    assert_nil untyped.types
    assert untyped.key?(:types), "types is null, not absent"
  end

  # The journal entries list: each filter under its name (metadata as a deepObject, a Time as RFC
  # 3339), kept on every page with the cursor; items are JournalEntry models with their lines. A
  # delivery's replay_id is read, null or not.
  def test_journal_entries_list_keeps_its_filters_on_every_page_and_replay_id
    stub do |req, i|
      if req.path.include?("/deliveries")
        next [200, JSON_TYPE, JSON.generate(object: "list", has_more: false, next_cursor: nil,
                                            data: [{ id: "msg_1", replay_id: "rpl_01" }, { id: "msg_2", replay_id: nil }])]
      end
      cursor = i.zero? ? '"c1"' : "null"
      [200, JSON_TYPE, %({"object":"list","data":[{"id":"je_#{i}","object":"journal_entry","source":{"type":"journal_entry","id":"je_#{i}"},"entries":[{"id":"le_#{i}","direction":"debit"}]}],"has_more":#{i.zero?},"next_cursor":#{cursor}})]
    end
    entries = client.ledger.journal_entries.list(type: "adjustment", status: "posted", virtual_account_id: "va_01",
                                                 source_type: "journal_entry", source_id: "je_9",
                                                 metadata: { "order id" => "A&B", tier: "gold" },
                                                 created_after: Time.utc(2026, 1, 2, 3, 4, 5),
                                                 created_before: Date.new(2026, 2, 1), limit: 1).to_a
    assert_equal %w[je_0 je_1], entries.map(&:id)
    assert_kind_of Treasury::Models::JournalEntry, entries.first
    assert_kind_of Treasury::Models::Source, entries.first.source
    assert_kind_of Treasury::Models::LedgerEntry, entries.first.entries.first
    first, second = @stub.requests.map(&:path)
    assert_equal "/v1/ledger/journal-entries?type=adjustment&status=posted&virtual_account_id=va_01" \
                 "&source_type=journal_entry&source_id=je_9&metadata[order+id]=A%26B&metadata[tier]=gold" \
                 "&created_after=2026-01-02T03%3A04%3A05.000Z&created_before=2026-02-01&limit=1", first
    assert_equal "#{first}&cursor=c1", second
    deliveries = client.webhooks.deliveries.list("wh_01").to_a
    assert_equal ["rpl_01", nil], deliveries.map(&:replay_id)
    assert deliveries.last.key?(:replay_id)
  end

  # counterparties: create with an Idempotency-Key (the caller's, else a random one, the same on a
  # retry) and only the fields given; the list keeps its filters on every page; verify sends
  # {method: "prenote"}; delete answers a DeletedCounterparty; the models nest the verification.
  def test_counterparties_bodies_keys_filters_and_models
    cp = lambda do |id, status|
      { id: id, object: "counterparty", name: "Initech LLC", account_number_last4: "4321",
        routing_number: "021000021", account_type: "checking",
        verification: { status: status, method: status == "unverified" ? nil : "prenote" },
        metadata: {}, environment: "sandbox", created_at: "2026-01-02T00:00:00.000Z" }
    end
    stub do |req, i|
      if i == 1 # the first create, retried once
        next [503, JSON_TYPE.merge("Retry-After" => "0"), error_body("unavailable")]
      end

      case [req.method, req.path]
      in ["POST", "/v1/counterparties"] then [201, JSON_TYPE, JSON.generate(cp.call("cp_01", "unverified"))]
      in ["POST", %r{/verify\z}] then [200, JSON_TYPE, JSON.generate(cp.call("cp_01", "pending"))]
      in ["DELETE", _] then [200, JSON_TYPE, JSON.generate(id: "cp_01", object: "counterparty", deleted: true)]
      in ["GET", %r{\A/v1/counterparties\?}]
        more = !req.path.include?("cursor=")
        [200, JSON_TYPE, JSON.generate(object: "list", data: [cp.call("cp_0#{i}", "verified")], has_more: more,
                                       next_cursor: more ? "c1" : nil)]
      else [200, JSON_TYPE, JSON.generate(cp.call("cp_01", "failed").tap { |h| h[:verification][:failure_code] = "R03" })]
      end
    end
    c = client
    c.counterparties.create(name: "Initech LLC", account_number: "987654321", routing_number: "021000021",
                            account_type: "checking")
    created = c.counterparties.create(name: "Initech LLC", account_number: "987654321", routing_number: "021000021",
                                      account_type: "savings", metadata: { "vendor" => "42" }, idempotency_key: "cp-42")
    listed = c.counterparties.list(verification_status: "verified", metadata: { "vendor" => "42" },
                                   created_after: Time.utc(2026, 1, 2, 3, 4, 5), created_before: Date.new(2026, 2, 1),
                                   limit: 1).to_a
    pending = c.counterparties.verify("cp/01")
    failed = c.counterparties.retrieve("cp_01")
    deleted = c.counterparties.delete("cp_01")

    plain, first_try, retried, page1, page2, verify, get, delete = @stub.requests
    assert_equal({ "name" => "Initech LLC", "account_number" => "987654321", "routing_number" => "021000021",
                   "account_type" => "checking" }, JSON.parse(plain.body))
    assert_match(/\A\S+\z/, plain["idempotency-key"])
    assert_equal %w[cp-42 cp-42], [first_try["idempotency-key"], retried["idempotency-key"]]
    assert_equal first_try.body, retried.body
    assert_equal({ "vendor" => "42" }, JSON.parse(retried.body)["metadata"])
    assert_kind_of Treasury::Models::Counterparty, created
    assert_kind_of Treasury::Models::CounterpartyVerification, created.verification
    assert_equal ["cp_01", "4321", "unverified", nil], [created.id, created.account_number_last4,
                                                      created.verification.status, created.verification.method]
    assert_equal "/v1/counterparties?verification_status=verified&metadata[vendor]=42" \
                 "&created_after=2026-01-02T03%3A04%3A05.000Z&created_before=2026-02-01&limit=1", page1.path
    assert_equal "#{page1.path}&cursor=c1", page2.path
    assert_equal 2, listed.size
    assert(listed.all? { |x| x.is_a?(Treasury::Models::Counterparty) && x.verification.status == "verified" })
    assert_equal ["POST", "/v1/counterparties/cp%2F01/verify", { "method" => "prenote" }],
                 [verify.method, verify.path, JSON.parse(verify.body)]
    refute_nil verify["idempotency-key"]
    assert_equal ["pending", "prenote"], [pending.verification.status, pending.verification.method]
    assert_equal ["GET", "/v1/counterparties/cp_01"], [get.method, get.path]
    assert_equal %w[failed R03], [failed.verification.status, failed.verification.failure_code]
    assert_equal ["DELETE", "/v1/counterparties/cp_01"], [delete.method, delete.path]
    assert_kind_of Treasury::Models::DeletedCounterparty, deleted
    assert_equal ["cp_01", "counterparty", true], [deleted.id, deleted.object, deleted.deleted]
    # An event's data.object of a counterparty is a Counterparty.
    event = Treasury::Models::Event.construct(type: "counterparty.verified",
                                              data: { object: cp.call("cp_01", "verified") })
    assert_kind_of Treasury::Models::Counterparty, event.data.resource
  end

  # A payment to a counterparty sends counterparty_id and no destination; the model reads
  # counterparty_id. require_verified_counterparty goes in the settings' body and is read back.
  # counterparty_not_verified is a 422.
  def test_payment_to_a_counterparty_and_the_require_verified_counterparty_setting
    stub do |req, i|
      case i
      when 0
        body = JSON.parse(req.body)
        [201, JSON_TYPE, JSON.generate(id: "pay_01", object: "payment", counterparty_id: body["counterparty_id"],
                                       destination: { account_number: "987654321", routing_number: "021000021",
                                                      name: "Initech LLC" })]
      when 1
        [200, JSON_TYPE, JSON.generate(object: "platform_settings", require_verified_counterparty: JSON.parse(req.body)["require_verified_counterparty"])]
      else
        [422, JSON_TYPE, error_body("counterparty_not_verified", "not verified", param: "counterparty_id",
                                                                                 resource_id: "cp_01")]
      end
    end
    c = client
    payment = c.payments.create(virtual_account_id: "va_01", amount: 100, rail: "rtp", counterparty_id: "cp_01")
    settings = c.platform.settings.update(require_verified_counterparty: true)
    error = assert_api_error(Treasury::UnprocessableEntityError, code: "counterparty_not_verified", status: 422) do
      c.payments.create(virtual_account_id: "va_01", amount: 100, rail: "rtp", counterparty_id: "cp_01")
    end
    sent, patch, refused = @stub.requests
    body = JSON.parse(sent.body)
    refute body.key?("destination"), "no destination with counterparty_id"
    assert_equal "cp_01", body["counterparty_id"]
    assert_equal body["idempotency_key"], sent["idempotency-key"]
    assert_equal ["cp_01", "Initech LLC"], [payment.counterparty_id, payment.destination.name]
    assert_equal({ "require_verified_counterparty" => true }, JSON.parse(patch.body))
    assert_equal true, settings.require_verified_counterparty
    assert_equal ["counterparty_id", "cp_01"], [error.param, error.resource_id]
    assert_equal 3, @stub.requests.size, "a 422 is not retried"
    assert_equal %w[amount counterparty_id idempotency_key rail virtual_account_id], JSON.parse(refused.body).keys.sort
  end

  # 501 not_implemented (a route this build does not serve; faked here on verify) is a
  # NotImplementedError, a 5xx class, and is never
  # retried, even when the server's x-should-retry says it may be.
  def test_501_not_implemented_is_its_own_class_and_never_retried
    %w[false true].each do |should_retry|
      stub { [501, JSON_TYPE.merge("x-should-retry" => should_retry, "Retry-After" => "0"), error_body("not_implemented", "this route is not served by this build", resource_id: "cp_01")] }
      error = assert_api_error(Treasury::NotImplementedError, code: "not_implemented", status: 501) do
        client.counterparties.verify("cp_01")
      end
      assert_kind_of Treasury::InternalServerError, error
      refute_kind_of ::NotImplementedError, error
      assert_equal "cp_01", error.resource_id
      assert_equal 1, @stub.requests.size, "x-should-retry: #{should_retry}: one attempt"
      @stub.close
    end
    assert_equal Treasury::NotImplementedError, Treasury::APIError.class_for(501)
    assert_equal Treasury::InternalServerError, Treasury::APIError.class_for(502)
  end

  def test_every_post_sends_an_idempotency_key_and_other_methods_none
    stub { |req, _| [200, JSON_TYPE, req.method == "GET" ? '{"id":"va_01"}' : '{"id":"va_01","status":"frozen"}'] }
    c = client
    c.virtual_accounts.freeze("va_01")
    c.virtual_accounts.retrieve("va_01")
    post, get = @stub.requests
    assert_match(/\A\S+\z/, post["idempotency-key"])
    assert_equal "{}", post.body
    assert_nil get["idempotency-key"]
    assert_equal "Bearer sk_sandbox_test", get["authorization"]
    assert_match(%r{\Atreasury-ruby/1\.2\.1}, get["user-agent"])
  end

  def test_two_calls_get_two_keys
    stub { [200, JSON_TYPE, "{}"] }
    c = client
    2.times { c.virtual_accounts.freeze("va_01") }
    keys = @stub.requests.map { |r| r["idempotency-key"] }
    assert_equal 2, keys.uniq.size
  end

  def test_x_should_retry_false_stops_a_retry
    stub { [500, JSON_TYPE.merge("x-should-retry" => "false"), error_body("internal_error")] }
    assert_api_error(Treasury::InternalServerError) { client.payments.retrieve("pay_01") }
    assert_equal 1, @stub.requests.size
  end

  def test_x_should_retry_true_forces_a_retry
    stub do |_req, i|
      i.zero? ? [400, JSON_TYPE.merge("x-should-retry" => "true", "Retry-After" => "0"), error_body("invalid_request")] : [200, JSON_TYPE, '{"id":"pay_01"}']
    end
    assert_equal "pay_01", client.payments.retrieve("pay_01").id
    assert_equal 2, @stub.requests.size
  end

  def test_client_errors_are_not_retried
    stub { [400, JSON_TYPE, error_body("invalid_request", "amount must be at least 1", param: "amount")] }
    error = assert_api_error(Treasury::BadRequestError, code: "invalid_request", status: 400) do
      client.payments.create(**PAYMENT, amount: 0)
    end
    assert_equal "amount", error.param
    assert_equal 1, @stub.requests.size
  end

  def test_idempotency_in_progress_is_retried_and_other_conflicts_are_not
    stub do |_req, i|
      if i.zero?
        [409, JSON_TYPE.merge("Retry-After" => "0"), error_body("idempotency_in_progress")]
      else
        [409, JSON_TYPE, error_body("idempotency_conflict", resource_id: "pay_07")]
      end
    end
    error = assert_api_error(Treasury::ConflictError, code: "idempotency_conflict") { client.payments.create(**PAYMENT) }
    assert_equal "pay_07", error.resource_id
    assert_equal 2, @stub.requests.size
  end

  def test_408_and_429_are_retried
    stub do |_req, i|
      case i
      when 0 then [408, JSON_TYPE.merge("Retry-After" => "0"), error_body("request_timeout")]
      when 1 then [429, JSON_TYPE.merge("Retry-After" => "0"), error_body("rate_limited")]
      else [200, JSON_TYPE, '{"id":"pay_01"}']
      end
    end
    client.payments.retrieve("pay_01")
    assert_equal 3, @stub.requests.size
  end

  def test_backoff_without_retry_after_starts_at_half_a_second
    stub { |_req, i| i.zero? ? [502, {}, "bad gateway"] : [200, JSON_TYPE, '{"id":"pay_01"}'] }
    started = monotonic
    client.payments.retrieve("pay_01")
    waited = @stub.requests[1].received_at - @stub.requests[0].received_at
    assert_operator waited, :>=, 0.35
    assert_operator monotonic - started, :<, 2
  end

  def test_retry_after_is_honoured
    stub do |_req, i|
      i.zero? ? [429, JSON_TYPE.merge("Retry-After" => "1"), error_body("rate_limited")] : [200, JSON_TYPE, '{"id":"pay_01"}']
    end
    client.payments.retrieve("pay_01")
    waited = @stub.requests[1].received_at - @stub.requests[0].received_at
    assert_operator waited, :>=, 0.95
  end

  def test_backoff_doubles_and_is_capped
    transport = client_for_backoff
    assert_in_delta 0.5, transport.backoff(0), 0.13
    assert_in_delta 1.0, transport.backoff(1), 0.26
    assert_operator transport.backoff(10), :<=, 8.0
    assert_operator transport.backoff(10), :>=, 6.0
    assert_equal 3.0, transport.delay(0, { "retry-after" => "3" })
    assert_in_delta 0.5, transport.delay(0, { "retry-after" => "3600" }), 0.13
  end

  def test_a_connection_error_is_retried_then_raised
    server = TCPServer.new("127.0.0.1", 0)
    port = server.addr[1]
    server.close # nothing listens there now
    c = Treasury::Client.new(api_key: "k", base_url: "http://127.0.0.1:#{port}/v1", max_retries: 1)
    started = monotonic
    error = assert_raises(Treasury::APIConnectionError) { c.events.list }
    assert_kind_of Treasury::APIError, error
    assert_nil error.status
    assert_operator monotonic - started, :>=, 0.35, "one retry after a backoff"
  end

  def test_other_statuses_are_api_errors
    stub { [413, JSON_TYPE, error_body("request_too_large")] }
    error = assert_raises(Treasury::APIError) { client.events.list }
    assert_equal Treasury::APIError, error.class
    assert_equal 413, error.status
  end

  def test_a_non_json_error_body
    stub { [500, { "Content-Type" => "text/plain", "X-Request-Id" => "req_header" }, "oops"] }
    error = assert_raises(Treasury::InternalServerError) { client(max_retries: 0).events.list }
    assert_equal "oops", error.body
    assert_equal "req_header", error.request_id
    assert_nil error.code
  end

  def test_query_parameters_and_path_escaping
    stub { [200, JSON_TYPE, '{"object":"list","data":[],"has_more":false,"next_cursor":null}'] }
    at = Time.utc(2026, 1, 2, 3, 4, 5.678r)
    client.payments.list(status: "completed", created_after: at, limit: 5).to_a
    client.virtual_accounts.transactions("va/../x", created_before: Date.new(2026, 2, 1)).to_a
    first, second = @stub.requests
    assert_equal "/v1/payments?status=completed&created_after=2026-01-02T03%3A04%3A05.678Z&limit=5", first.path
    assert_equal "/v1/virtual-accounts/va%2F..%2Fx/transactions?created_before=2026-02-01", second.path
  end

  def test_metadata_filter_is_a_deep_object_kept_on_every_page
    stub do |req, i|
      cursor = i.zero? ? '"c1"' : "null"
      [200, JSON_TYPE, %({"object":"list","data":[],"has_more":#{i.zero?},"next_cursor":#{cursor}})]
    end
    client.payments.list(metadata: { "order id" => "A&B", tier: "gold" }, limit: 1).each_page.to_a
    client.virtual_accounts.list(metadata: { "region" => "east/1" }).to_a
    client.virtual_accounts.list(metadata: {}).to_a
    paths = @stub.requests.map(&:path)
    assert_equal "/v1/payments?metadata[order+id]=A%26B&metadata[tier]=gold&limit=1", paths[0]
    assert_equal "/v1/payments?metadata[order+id]=A%26B&metadata[tier]=gold&limit=1&cursor=c1", paths[1]
    assert_equal "/v1/virtual-accounts?metadata[region]=east%2F1", paths[2]
    assert_equal "/v1/virtual-accounts", paths[3], "an empty filter sends nothing"
    assert_equal [["metadata[order id]", "A&B"], ["metadata[tier]", "gold"], %w[limit 1]],
                 URI.decode_www_form(URI.parse(paths[0]).query)
  end

  def test_nil_is_sent_as_null_and_not_given_is_left_out
    stub { [200, JSON_TYPE, "{}"] }
    Treasury::Client.new(api_key: "op", base_url: @stub.url("/v1")).platforms.update("plt_01", rate_limit: nil)
    assert_equal({ "rate_limit" => nil }, JSON.parse(@stub.requests.first.body))
  end

  private

  def client_for_backoff
    Treasury::Transport.new(api_key: "k", base_url: "http://127.0.0.1:1/v1", max_retries: 2, timeout: 1,
                            open_timeout: 1, user_agent: "t")
  end
end
