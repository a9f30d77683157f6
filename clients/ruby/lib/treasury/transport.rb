# frozen_string_literal: true

require "json"
require "net/http"
require "openssl"
require "securerandom"
require "time"
require "date"
require "uri"

module Treasury
  # Sends one API call: builds the request, retries it when the API or the network says it may,
  # and turns the answer into a parsed body or an {APIError}.
  #
  # @api private
  class Transport
    # Network failures worth another attempt (the request may not have arrived, or its answer was lost).
    CONNECTION_ERRORS = [
      Errno::ECONNREFUSED, Errno::ECONNRESET, Errno::ECONNABORTED, Errno::EPIPE, Errno::EHOSTUNREACH,
      Errno::ENETUNREACH, Errno::ETIMEDOUT, EOFError, IOError, SocketError, OpenSSL::SSL::SSLError,
      Net::HTTPBadResponse
    ].freeze
    TIMEOUT_ERRORS = [Net::OpenTimeout, Net::ReadTimeout, Net::WriteTimeout].freeze

    # The first backoff delay, in seconds; it doubles on each retry.
    INITIAL_RETRY_DELAY = 0.5
    # The longest backoff delay, in seconds.
    MAX_RETRY_DELAY = 8.0
    # The longest `Retry-After` honoured as given; longer ones fall back to the backoff.
    MAX_RETRY_AFTER = 60

    # The answer to a successful call.
    Response = Struct.new(:status, :headers, :body, keyword_init: true)

    attr_reader :base_url, :max_retries

    def initialize(api_key:, base_url:, max_retries:, timeout:, open_timeout:, user_agent:)
      @api_key = api_key
      @base_url = base_url.to_s.chomp("/")
      @base_uri = URI.parse(@base_url)
      @max_retries = max_retries
      @timeout = timeout
      @open_timeout = open_timeout
      @user_agent = user_agent
    end

    # Sends a request, retrying it as API.md §11 says.
    #
    # @param method [Symbol] :get, :post, :patch or :delete
    # @param path [String] the path under the base URL, e.g. "/payments"
    # @param query [Hash, nil] query parameters (nil values are left out; a Hash value is sent as
    #   a deepObject, `name[key]=value` per pair)
    # @param body [Hash, nil] the JSON body
    # @param idempotency_key [String, nil] for a POST: the key to send (a random one when nil)
    # @param accept [String] the Accept header
    # @return [Response] with the body parsed from JSON, or the text for other types
    # @raise [APIError]
    def request(method, path, query: nil, body: nil, idempotency_key: nil, accept: "application/json",
                max_retries: nil)
      uri = build_uri(path, query)
      headers = {
        "Authorization" => "Bearer #{@api_key}",
        "Accept" => accept,
        "User-Agent" => @user_agent
      }
      payload = nil
      unless body.nil?
        payload = JSON.generate(body)
        headers["Content-Type"] = "application/json"
      end
      # One key for every attempt of this call: a retried POST is the same request to the server.
      headers["Idempotency-Key"] = idempotency_key || SecureRandom.uuid if method == :post
      retries = max_retries || @max_retries

      attempt = 0
      loop do
        begin
          response = perform(method, uri, headers, payload)
        rescue *TIMEOUT_ERRORS, *CONNECTION_ERRORS => e
          if attempt < retries
            sleep(backoff(attempt))
            attempt += 1
            next
          end
          klass = TIMEOUT_ERRORS.any? { |t| e.is_a?(t) } ? APITimeoutError : APIConnectionError
          raise klass, "#{method.to_s.upcase} #{uri}: #{e.class}: #{e.message}"
        end

        status = response.code.to_i
        response_headers = headers_of(response)
        return success(status, response_headers, response) if status.between?(200, 299)

        error = APIError.from_response(status, response_headers, response.body)
        if attempt < retries && retry?(status, response_headers, error.code)
          sleep(delay(attempt, response_headers))
          attempt += 1
          next
        end
        raise error
      end
    end

    # Whether an error answer may be retried: never a 501 (`not_implemented`: the route is not served
    # by this build, whatever it says); else the server's `x-should-retry` when it sends one, else 408, 429, 409
    # `idempotency_in_progress` and every other 5xx.
    # @param status [Integer]
    # @param headers [Hash{String=>String}]
    # @param code [String, nil]
    # @return [Boolean]
    def retry?(status, headers, code)
      return false if status == 501 || code == "not_implemented"

      case headers["x-should-retry"]&.strip&.downcase
      when "true" then return true
      when "false" then return false
      end
      status == 408 || status == 429 || status >= 500 || (status == 409 && code == "idempotency_in_progress")
    end

    # The wait before retry number `attempt` (0-based): `Retry-After` when the server sent one
    # (seconds, or an HTTP date) of at most a minute, else the exponential backoff.
    # @return [Float] seconds
    def delay(attempt, headers)
      retry_after = parse_retry_after(headers["retry-after"])
      return retry_after if retry_after && retry_after <= MAX_RETRY_AFTER

      backoff(attempt)
    end

    # Exponential backoff from {INITIAL_RETRY_DELAY}, doubling, capped at {MAX_RETRY_DELAY}, less
    # up to 25 % jitter.
    # @return [Float] seconds
    def backoff(attempt)
      base = [INITIAL_RETRY_DELAY * (2**attempt), MAX_RETRY_DELAY].min
      base * (1 - (rand * 0.25))
    end

    private

    def build_uri(path, query)
      uri = URI.parse(@base_url + path)
      pairs = (query || {}).reject { |_, v| v.nil? || v.equal?(NOT_GIVEN) }
      parts = pairs.flat_map { |k, v| query_parts(k.to_s, v) }
      uri.query = parts.join("&") unless parts.empty?
      uri
    end

    # `name=value`, or for a Hash (an OpenAPI `deepObject`, e.g. the metadata filter) one
    # `name[key]=value` per pair, key and value URL-encoded (the brackets are sent as they are).
    # An empty Hash sends nothing.
    def query_parts(name, value)
      return ["#{escape(name)}=#{escape(query_value(value))}"] unless value.is_a?(Hash)

      value.map { |k, v| "#{escape(name)}[#{escape(k.to_s)}]=#{escape(query_value(v))}" }
    end

    def escape(text)
      URI.encode_www_form_component(text)
    end

    def query_value(value)
      case value
      when Time then value.utc.strftime("%Y-%m-%dT%H:%M:%S.%LZ")
      when Date then value.strftime("%Y-%m-%d")
      else value.to_s
      end
    end

    def perform(method, uri, headers, payload)
      http = Net::HTTP.new(uri.host, uri.port)
      http.use_ssl = uri.scheme == "https"
      http.open_timeout = @open_timeout
      http.read_timeout = @timeout
      http.write_timeout = @timeout
      http.max_retries = 0 # the retries are this class's, with the same idempotency key
      request = request_class(method).new(uri, headers)
      request.body = payload if payload
      http.start { |conn| conn.request(request) }
    end

    def request_class(method)
      case method
      when :get then Net::HTTP::Get
      when :post then Net::HTTP::Post
      when :patch then Net::HTTP::Patch
      when :delete then Net::HTTP::Delete
      else raise ArgumentError, "unsupported method #{method}"
      end
    end

    def headers_of(response)
      response.each_header.to_h { |k, v| [k.downcase, v] }
    end

    def success(status, headers, response)
      raw = response.body.to_s
      type = headers["content-type"].to_s
      body = if type.include?("json") && !raw.empty?
               JSON.parse(raw)
             else
               raw.force_encoding(Encoding::UTF_8)
             end
      Response.new(status: status, headers: headers, body: body)
    end

    def parse_retry_after(value)
      return nil if value.nil? || value.strip.empty?

      value = value.strip
      return Float(value) if value.match?(/\A\d+(\.\d+)?\z/)

      seconds = Time.httpdate(value) - Time.now
      seconds.positive? ? seconds : 0.0
    rescue ArgumentError
      nil
    end
  end
end
