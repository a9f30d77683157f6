# frozen_string_literal: true

require_relative "test_helper"

# Treasury::Webhooks.verify on deliveries signed here, as the server signs them. (The suite also
# verifies real deliveries from the server: integration_test.rb.)
class WebhooksTest < Minitest::Test
  SECRET = "whsec_#{["a 32-byte secret for the tests!!"].pack("m0")}".freeze
  OTHER = "whsec_#{["another secret of 32 bytes......"].pack("m0")}".freeze
  BODY = '{"id":"evt_01","object":"event","type":"webhook.test","data":{"object":{"id":"wh_01"}}}'

  def headers(body: BODY, secret: SECRET, id: "msg_01", at: Time.now.to_i, signature: nil)
    {
      "webhook-id" => id,
      "webhook-timestamp" => at.to_s,
      "webhook-signature" => signature || Treasury::Webhooks.sign(id, at, body, secret)
    }
  end

  def test_returns_the_event
    event = Treasury::Webhooks.verify(BODY, headers, SECRET)
    assert_equal "webhook.test", event["type"]
    assert_equal "wh_01", event.dig("data", "object", "id")
  end

  def test_signature_matches_the_standard_webhooks_scheme
    at = 1_700_000_000
    raw_secret = "a 32-byte secret for the tests!!"
    expected = [OpenSSL::HMAC.digest("SHA256", raw_secret, "msg_01.#{at}.#{BODY}")].pack("m0")
    assert_equal "v1,#{expected}", Treasury::Webhooks.sign("msg_01", at, BODY, SECRET)
  end

  def test_rejects_a_tampered_body
    h = headers
    error = assert_raises(Treasury::WebhookVerificationError) do
      Treasury::Webhooks.verify(BODY.sub("webhook.test", "payment.completed"), h, SECRET)
    end
    assert_match(/no signature matches/, error.message)
  end

  def test_rejects_the_wrong_secret
    assert_raises(Treasury::WebhookVerificationError) { Treasury::Webhooks.verify(BODY, headers, OTHER) }
  end

  def test_rejects_a_timestamp_outside_five_minutes
    old = Time.now.to_i - 301
    assert_raises(Treasury::WebhookVerificationError) { Treasury::Webhooks.verify(BODY, headers(at: old), SECRET) }
    future = Time.now.to_i + 301
    assert_raises(Treasury::WebhookVerificationError) { Treasury::Webhooks.verify(BODY, headers(at: future), SECRET) }
    # Within the tolerance, both ways.
    Treasury::Webhooks.verify(BODY, headers(at: Time.now.to_i - 290), SECRET)
    Treasury::Webhooks.verify(BODY, headers(at: Time.now.to_i + 290), SECRET)
  end

  def test_a_timestamp_is_checked_even_with_a_good_signature
    at = Time.now.to_i - 3600
    h = headers(at: at)
    assert_raises(Treasury::WebhookVerificationError) { Treasury::Webhooks.verify(BODY, h, SECRET) }
    assert Treasury::Webhooks.verify(BODY, h, SECRET, now: Time.at(at + 10))
  end

  def test_accepts_any_of_several_signatures_during_a_rotation
    at = Time.now.to_i
    both = [Treasury::Webhooks.sign("msg_01", at, BODY, OTHER), Treasury::Webhooks.sign("msg_01", at, BODY, SECRET)].join(" ")
    h = headers(at: at, signature: both)
    assert Treasury::Webhooks.verify(BODY, h, SECRET)
    assert Treasury::Webhooks.verify(BODY, h, OTHER)
    assert Treasury::Webhooks.verify(BODY, h, ["whsec_#{["unrelated"].pack("m0")}", OTHER])
  end

  def test_ignores_other_signature_versions
    at = Time.now.to_i
    sig = Treasury::Webhooks.sign("msg_01", at, BODY, SECRET).sub("v1,", "v2,")
    assert_raises(Treasury::WebhookVerificationError) do
      Treasury::Webhooks.verify(BODY, headers(at: at, signature: sig), SECRET)
    end
  end

  def test_rejects_missing_headers
    %w[webhook-id webhook-timestamp webhook-signature].each do |name|
      h = headers.reject { |k, _| k == name }
      error = assert_raises(Treasury::WebhookVerificationError) { Treasury::Webhooks.verify(BODY, h, SECRET) }
      assert_match(/#{name}/, error.message)
    end
  end

  def test_reads_headers_in_any_case_and_in_rack_form
    h = headers
    mixed = h.transform_keys { |k| k.split("-").map(&:capitalize).join("-") }
    assert Treasury::Webhooks.verify(BODY, mixed, SECRET)
    rack = h.transform_keys { |k| "HTTP_#{k.upcase.tr("-", "_")}" }
    assert Treasury::Webhooks.verify(BODY, rack, SECRET)
  end

  def test_rejects_a_malformed_secret
    assert_raises(Treasury::WebhookVerificationError) { Treasury::Webhooks.verify(BODY, headers, "whsec_not base64!") }
  end

  def test_the_resource_shortcut_verifies_too
    client = Treasury::Client.new(api_key: "sk_sandbox_x", base_url: "http://127.0.0.1:1/v1")
    assert_equal "webhook.test", client.webhooks.verify(BODY, headers, SECRET)["type"]
  end
end
