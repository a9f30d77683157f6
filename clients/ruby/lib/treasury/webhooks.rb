# frozen_string_literal: true

require "json"
require "openssl"

module Treasury
  # Verifies the webhook deliveries Treasury sends (API.md §8, the Standard Webhooks scheme).
  #
  # Each delivery is a `POST` whose body is the event, with the headers `webhook-id` (the delivery
  # id, the same on every retry: deduplicate on it), `webhook-timestamp` (Unix seconds of this
  # attempt) and `webhook-signature`: space-separated `v1,<base64>` entries, each
  # base64(HMAC-SHA256(secret, "id.timestamp.body")). During the 24 hours after a secret rotation
  # two entries are sent, by the new and by the old secret; either verifies.
  #
  # @example In a Rack or Rails handler
  #   event = Treasury::Webhooks.verify(request.raw_post, request.headers, ENV["TREASURY_WEBHOOK_SECRET"])
  #   case event["type"]
  #   when "payment.completed" then ...
  #   end
  # @note Verify the raw body exactly as received, before any JSON parsing.
  module Webhooks
    # How far the timestamp may be from now, in seconds (5 minutes).
    DEFAULT_TOLERANCE = 300

    module_function

    # Checks a delivery's signature and timestamp, and returns its event.
    #
    # @param raw_body [String] the request body, byte for byte
    # @param headers [Hash] the request headers: any key case (`webhook-id`, `Webhook-Id`) or the
    #   Rack form (`HTTP_WEBHOOK_ID`)
    # @param secret [String] the endpoint's secret, `whsec_...` (several secrets: an Array, any of
    #   them may verify)
    # @param tolerance [Integer] the largest accepted gap between the timestamp and now, seconds
    # @param now [Time] the current time (for tests)
    # @return [Hash] the event, parsed from JSON (String keys)
    # @raise [WebhookVerificationError] on a missing header, a timestamp outside the tolerance, no
    #   matching signature or a body that is not JSON
    def verify(raw_body, headers, secret, tolerance: DEFAULT_TOLERANCE, now: Time.now)
      raise WebhookVerificationError, "raw_body must be the request body as a String" unless raw_body.is_a?(String)

      msg_id = header(headers, "webhook-id")
      timestamp = header(headers, "webhook-timestamp")
      signatures = header(headers, "webhook-signature")
      raise WebhookVerificationError, "missing webhook-id header" if msg_id.nil? || msg_id.empty?
      raise WebhookVerificationError, "missing webhook-timestamp header" if timestamp.nil? || timestamp.empty?
      raise WebhookVerificationError, "missing webhook-signature header" if signatures.nil? || signatures.empty?

      check_timestamp(timestamp, tolerance, now)

      keys = Array(secret).map { |s| decode_secret(s) }
      signed = "#{msg_id}.#{timestamp}.#{raw_body.b}".b
      expected = keys.map { |key| OpenSSL::HMAC.digest("SHA256", key, signed) }
      matched = signatures.split(" ").any? do |entry|
        version, sig = entry.split(",", 2)
        next false unless version == "v1" && sig

        given = begin
          sig.unpack1("m0")
        rescue ArgumentError
          next false
        end
        expected.any? { |digest| given.bytesize == digest.bytesize && OpenSSL.fixed_length_secure_compare(given, digest) }
      end
      raise WebhookVerificationError, "no signature matches the body and secret" unless matched

      begin
        JSON.parse(raw_body)
      rescue JSON::ParserError => e
        raise WebhookVerificationError, "the body is not JSON: #{e.message}"
      end
    end

    # Signs a body as Treasury does: the value of the `webhook-signature` header (one entry).
    # Useful to test a webhook handler.
    #
    # @param msg_id [String] the `webhook-id`
    # @param timestamp [Integer] the `webhook-timestamp`, Unix seconds
    # @param raw_body [String]
    # @param secret [String] `whsec_...`
    # @return [String] `v1,<base64>`
    def sign(msg_id, timestamp, raw_body, secret)
      digest = OpenSSL::HMAC.digest("SHA256", decode_secret(secret), "#{msg_id}.#{timestamp.to_i}.#{raw_body.b}".b)
      "v1,#{[digest].pack("m0")}"
    end

    # @api private
    def decode_secret(secret)
      raise WebhookVerificationError, "the secret must be a String" unless secret.is_a?(String)

      encoded = secret.start_with?("whsec_") ? secret.delete_prefix("whsec_") : secret
      encoded.unpack1("m0")
    rescue ArgumentError
      raise WebhookVerificationError, "the secret is not whsec_ followed by base64"
    end

    # @api private
    def check_timestamp(timestamp, tolerance, now)
      raise WebhookVerificationError, "webhook-timestamp is not Unix seconds" unless timestamp.match?(/\A\d+\z/)

      gap = now.to_i - timestamp.to_i
      raise WebhookVerificationError, "webhook-timestamp is too old" if gap > tolerance
      raise WebhookVerificationError, "webhook-timestamp is too far in the future" if gap < -tolerance
    end

    # @api private
    def header(headers, name)
      return nil if headers.nil?

      rack = "HTTP_#{name.upcase.tr("-", "_")}"
      headers.each do |key, value|
        k = key.to_s
        next unless k.casecmp?(name) || k == rack

        value = value.first if value.is_a?(Array)
        return value.to_s.strip
      end
      nil
    end
  end
end
