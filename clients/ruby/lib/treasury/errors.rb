# frozen_string_literal: true

require "json"

module Treasury
  # Base class of every error this library raises.
  class Error < StandardError; end

  # An error answer from the API, or no answer at all ({APIConnectionError}).
  #
  # The class says the HTTP status ({BadRequestError} for 400, {NotFoundError} for 404, ...); the
  # readers give the details of the API's error body (API.md §2); `message` is the body's message.
  #
  # @example
  #   begin
  #     client.payments.create(...)
  #   rescue Treasury::UnprocessableEntityError => e
  #     e.code        # => "insufficient_funds"
  #   rescue Treasury::ConflictError => e
  #     e.resource_id # => the payment an idempotency key already made
  #   end
  class APIError < Error
    # @return [Integer, nil] the HTTP status (nil when no answer came)
    attr_reader :status
    # @return [String, nil] the API's error code (`invalid_request`, `insufficient_funds`, ...)
    attr_reader :code
    # @return [String, nil] the request field at fault, when the API names one
    attr_reader :param
    # @return [String, nil] the request id (the body's `request_id`, else the `X-Request-Id` header)
    attr_reader :request_id
    # @return [String, nil] the resource the error is about (e.g. the payment an
    #   `idempotency_conflict` points to)
    attr_reader :resource_id
    # @return [Hash{String=>String}] the answer's headers, names in lower case
    attr_reader :headers
    # @return [Hash, String, nil] the parsed error body (the raw text when it is not JSON)
    attr_reader :body

    # @param message [String]
    # @param status [Integer, nil]
    # @param code [String, nil]
    # @param param [String, nil]
    # @param request_id [String, nil]
    # @param resource_id [String, nil]
    # @param headers [Hash{String=>String}]
    # @param body [Hash, String, nil]
    def initialize(message = nil, status: nil, code: nil, param: nil, request_id: nil, resource_id: nil,
                   headers: {}, body: nil)
      super(message)
      @status = status
      @code = code
      @param = param
      @request_id = request_id
      @resource_id = resource_id
      @headers = headers
      @body = body
    end

    # The error class for an HTTP status.
    # @param status [Integer]
    # @return [Class]
    def self.class_for(status)
      case status
      when 400 then BadRequestError
      when 401 then AuthenticationError
      when 403 then PermissionDeniedError
      when 404 then NotFoundError
      when 409 then ConflictError
      when 422 then UnprocessableEntityError
      when 429 then RateLimitError
      when 501 then NotImplementedError
      when 500..599 then InternalServerError
      else APIError
      end
    end

    # Builds the error for an answer.
    # @param status [Integer]
    # @param headers [Hash{String=>String}] names in lower case
    # @param raw_body [String, nil]
    # @return [APIError]
    def self.from_response(status, headers, raw_body)
      body = begin
        raw_body.nil? || raw_body.empty? ? nil : JSON.parse(raw_body)
      rescue JSON::ParserError
        raw_body
      end
      fields = body.is_a?(Hash) ? body : {}
      message = fields["message"] || "HTTP #{status}"
      class_for(status).new(
        message,
        status: status,
        code: fields["code"],
        param: fields["param"],
        request_id: fields["request_id"] || headers["x-request-id"],
        resource_id: fields["resource_id"],
        headers: headers,
        body: body
      )
    end
  end

  # 400: the request is invalid (`invalid_request` with `param`, `unbalanced_entry`,
  # `amount_exceeds_rail_limit`, `replay_too_large`: a webhook replay's window holds more than
  # 10,000 events).
  class BadRequestError < APIError; end

  # 401: the key is missing, malformed, unknown, revoked or expired (`unauthorized`).
  class AuthenticationError < APIError; end

  # 403: the key may not call this route (`forbidden`): a platform key on an operator route, the
  # operator key on a platform route, a live key on a sandbox-only route.
  class PermissionDeniedError < APIError; end

  # 404: no such resource for this key (`not_found`).
  class NotFoundError < APIError; end

  # 409: a conflict (`idempotency_conflict` with `resource_id`, `idempotency_in_progress`,
  # `payment_not_cancelable`, `kyb_in_progress`, `kyb_already_approved`, `invalid_state`).
  class ConflictError < APIError; end

  # 422: a business rule refused the request (`kyb_not_approved`, `compliance_rejected`,
  # `insufficient_funds`, `account_not_active`, `limit_exceeded`, `live_not_enabled`,
  # `counterparty_not_verified`).
  class UnprocessableEntityError < APIError; end

  # 429: too many requests (`rate_limited`); raised once the client's retries are spent.
  class RateLimitError < APIError
    # @return [Integer, nil] the seconds the server asked to wait (`Retry-After`)
    def retry_after
      value = headers["retry-after"]
      value&.match?(/\A\d+\z/) ? value.to_i : nil
    end
  end

  # 5xx: the server failed (`internal_error`, `unavailable`); raised once the client's retries
  # are spent.
  class InternalServerError < APIError; end

  # 501: the route is not served by this build (`not_implemented`; reserved: no route answers it
  # today). A 5xx, so `rescue InternalServerError` catches it
  # too, but never retried: the same request meets the same answer. (Not Ruby's own
  # `::NotImplementedError`, which is a `ScriptError`.)
  class NotImplementedError < InternalServerError; end

  # No answer: the connection failed or timed out, on every attempt. {#status} is nil.
  class APIConnectionError < APIError; end

  # No answer within the client's timeout, on every attempt.
  class APITimeoutError < APIConnectionError; end

  # A webhook's signature, timestamp or headers did not verify: do not trust its body.
  class WebhookVerificationError < Error; end
end
