# frozen_string_literal: true

module Treasury
  module Resources
    # Platform registration and administration (`/platforms`, `/operator/platforms`). Operator key only.
    class Platforms < Base
      # Registers a platform, `pending_approval` until {#approve}.
      # `POST /platforms`
      #
      # @param name [String]
      # @param contact_email [String]
      # @param metadata [Hash{String=>String}, nil]
      # @param idempotency_key [String, nil] the Idempotency-Key (a random one when nil)
      # @return [Models::Platform]
      def register(name:, contact_email:, metadata: NOT_GIVEN, idempotency_key: nil)
        call(:post, "/platforms", model: Models::Platform,
                                  body: compact(name: name, contact_email: contact_email, metadata: metadata),
                                  idempotency_key: idempotency_key)
      end

      # Lists the platforms, newest first.
      # `GET /operator/platforms`
      #
      # @param limit [Integer] page size, 1..100
      # @param cursor [String] start after this cursor
      # @return [Page<Models::Platform>]
      def list(limit: NOT_GIVEN, cursor: NOT_GIVEN)
        paged("/operator/platforms", Models::Platform, limit: limit, cursor: cursor)
      end

      # `GET /operator/platforms/{id}`
      # @param id [String] `plt_...`
      # @return [Models::Platform]
      def retrieve(id)
        call(:get, "/operator/platforms/#{seg(id)}", model: Models::Platform)
      end

      # Configures a platform; only the parameters given change.
      # `PATCH /operator/platforms/{id}`
      #
      # @param id [String] `plt_...`
      # @param revenue_share_rate [String] decimal string "0".."1", e.g. "0.30"
      # @param interest_rate [String] annual, decimal string, e.g. "0.045"
      # @param fee_schedule [Hash{Symbol=>Integer}] cents by rail (`ach_standard`, `ach_same_day`, `rtp`, `fednow`)
      # @param rate_limit [Hash, nil] `{per_second:, burst:}` for all the platform's keys; nil restores the defaults
      # @return [Models::Platform]
      def update(id, revenue_share_rate: NOT_GIVEN, interest_rate: NOT_GIVEN, fee_schedule: NOT_GIVEN,
                 rate_limit: NOT_GIVEN)
        call(:patch, "/operator/platforms/#{seg(id)}", model: Models::Platform,
                                                       body: compact(revenue_share_rate: revenue_share_rate,
                                                                     interest_rate: interest_rate,
                                                                     fee_schedule: fee_schedule, rate_limit: rate_limit))
      end

      # Approves a platform: the answer carries its new sandbox key, with its secret (shown once).
      # `POST /operator/platforms/{id}/approve`
      #
      # @param id [String] `plt_...`
      # @return [Models::PlatformWithKeys] with `sandbox_api_key.secret`
      def approve(id)
        call(:post, "/operator/platforms/#{seg(id)}/approve", model: Models::PlatformWithKeys, body: empty_body)
      end

      # Opens the live environment of an approved platform: the answer carries its first live key.
      # `POST /operator/platforms/{id}/enable-live`
      #
      # @param id [String] `plt_...`
      # @return [Models::PlatformWithKeys] with `live_api_key.secret`
      def enable_live(id)
        call(:post, "/operator/platforms/#{seg(id)}/enable-live", model: Models::PlatformWithKeys, body: empty_body)
      end

      # Records money the operator placed at the bank for the platform (a `funding` journal entry
      # crediting its `platform_operating` account).
      # `POST /operator/platforms/{id}/fund`
      #
      # @param id [String] `plt_...`
      # @param amount [Integer] cents
      # @param environment [String] `live` (default) or `sandbox`
      # @param description [String]
      # @param idempotency_key [String, nil] the Idempotency-Key (a random one when nil)
      # @return [Models::JournalEntry]
      def fund(id, amount:, environment: NOT_GIVEN, description: NOT_GIVEN, idempotency_key: nil)
        call(:post, "/operator/platforms/#{seg(id)}/fund", model: Models::JournalEntry,
                                                           body: compact(amount: amount, environment: environment,
                                                                         description: description),
                                                           idempotency_key: idempotency_key)
      end
    end
  end
end
