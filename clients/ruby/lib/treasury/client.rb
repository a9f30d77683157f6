# frozen_string_literal: true

module Treasury
  # The entry point: one client per API key.
  #
  # @example A platform's client
  #   client = Treasury::Client.new(api_key: ENV["TREASURY_API_KEY"], base_url: "http://localhost:8080/v1")
  #   account = client.virtual_accounts.create(platform_id: "plt_...", entity_ref: "acme", type: "checking")
  #   client.payments.list.each { |payment| puts payment.status }
  #
  # @example The operator's client
  #   operator = Treasury::Client.new(api_key: ENV["TREASURY_OPERATOR_KEY"])
  #   platform = operator.platforms.register(name: "Acme Payroll", contact_email: "ops@acme.test")
  #   sandbox_key = operator.platforms.approve(platform.id).sandbox_api_key.secret
  #
  # Every call raises a subclass of {APIError} when the API refuses it. Calls are retried (2 times
  # by default) on connection errors, 408, 429, 409 `idempotency_in_progress` and 5xx answers but 501 (the
  # server's `x-should-retry` header decides when present), waiting `Retry-After` when given, else
  # an exponential backoff from 0.5 s to at most 8 s. Every POST carries an `Idempotency-Key` (yours,
  # or a random one), the same on each retry.
  #
  # A client is safe to share between threads: each call opens its own connection.
  class Client
    # The address of a local `treasury dev` or `treasury serve`.
    DEFAULT_BASE_URL = "http://localhost:8080/v1"

    # @return [String] the API's base URL, e.g. `http://localhost:8080/v1`
    attr_reader :base_url
    # @return [Integer] how many times a failed call is retried
    attr_reader :max_retries
    # @return [Transport]
    # @api private
    attr_reader :transport

    # @param api_key [String] a platform key (`sk_sandbox_...`, `sk_live_...`) or the operator key;
    #   default `ENV["TREASURY_API_KEY"]`
    # @param base_url [String] default `ENV["TREASURY_BASE_URL"]`, else {DEFAULT_BASE_URL}
    # @param max_retries [Integer] retries of a failed call (0 disables them)
    # @param timeout [Numeric] seconds to wait for an answer (read and write), per attempt
    # @param open_timeout [Numeric] seconds to wait for a connection, per attempt
    # @raise [ArgumentError] without an API key
    def initialize(api_key: ENV.fetch("TREASURY_API_KEY", nil), base_url: ENV.fetch("TREASURY_BASE_URL", nil),
                   max_retries: 2, timeout: 60, open_timeout: 10)
      raise ArgumentError, "api_key is required (or set TREASURY_API_KEY)" if api_key.nil? || api_key.to_s.empty?
      raise ArgumentError, "max_retries must be an Integer >= 0" unless max_retries.is_a?(Integer) && max_retries >= 0

      @base_url = (base_url.nil? || base_url.to_s.empty? ? DEFAULT_BASE_URL : base_url.to_s).chomp("/")
      @max_retries = max_retries
      @transport = Transport.new(api_key: api_key.to_s, base_url: @base_url, max_retries: max_retries,
                                 timeout: timeout, open_timeout: open_timeout,
                                 user_agent: "treasury-ruby/#{VERSION} ruby/#{RUBY_VERSION}")
    end

    # Platforms, as the operator sees them (operator key).
    # @return [Resources::Platforms]
    def platforms
      @platforms ||= Resources::Platforms.new(self)
    end

    # The caller's platform: settings, API keys, revenue share (platform key).
    # @return [Resources::Platform]
    def platform
      @platform ||= Resources::Platform.new(self)
    end

    # @return [Resources::VirtualAccounts]
    def virtual_accounts
      @virtual_accounts ||= Resources::VirtualAccounts.new(self)
    end

    # @return [Resources::Payments]
    def payments
      @payments ||= Resources::Payments.new(self)
    end

    # Money moved at once between two of the platform's accounts (platform key).
    # @return [Resources::BookTransfers]
    def book_transfers
      @book_transfers ||= Resources::BookTransfers.new(self)
    end

    # Saved bank accounts to pay (`counterparty_id` of a payment), verified by ACH prenote.
    # @return [Resources::Counterparties]
    def counterparties
      @counterparties ||= Resources::Counterparties.new(self)
    end

    # @return [Resources::KYB]
    def kyb
      @kyb ||= Resources::KYB.new(self)
    end

    # @return [Resources::Ledger]
    def ledger
      @ledger ||= Resources::Ledger.new(self)
    end

    # @return [Resources::Webhooks]
    def webhooks
      @webhooks ||= Resources::Webhooks.new(self)
    end

    # @return [Resources::Events]
    def events
      @events ||= Resources::Events.new(self)
    end

    # Sandbox simulations (sandbox key).
    # @return [Resources::Simulations]
    def simulations
      @simulations ||= Resources::Simulations.new(self)
    end

    # The live rails' ACH files (operator key).
    # @return [Resources::LiveRails]
    def rails
      @rails ||= Resources::LiveRails.new(self)
    end

    def inspect
      "#<#{self.class.name} base_url=#{@base_url.inspect}>"
    end
  end
end
