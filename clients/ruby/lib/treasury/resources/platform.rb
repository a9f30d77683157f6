# frozen_string_literal: true

module Treasury
  module Resources
    # The caller's own platform (`/platform`). Platform keys only.
    class Platform < Base
      # `GET /platform`
      # @return [Models::Platform] the caller's platform (`environment` is the key's)
      def retrieve
        call(:get, "/platform", model: Models::Platform)
      end

      # The settings of the key's environment.
      # @return [PlatformSettings]
      def settings
        @settings ||= PlatformSettings.new(@client)
      end

      # The platform's API keys.
      # @return [APIKeys]
      def api_keys
        @api_keys ||= APIKeys.new(@client)
      end

      # The revenue share report of a period: payment fees of the payments completed in it, and
      # interest, with the platform's share.
      # `GET /platform/revenue-share`
      #
      # @param from [String, Date] first day, `YYYY-MM-DD`
      # @param to [String, Date] last day, `YYYY-MM-DD`
      # @return [Models::RevenueShareReport]
      def revenue_share(from:, to:)
        call(:get, "/platform/revenue-share", model: Models::RevenueShareReport, query: { from: from, to: to })
      end
    end

    # The settings of the key's environment (`/platform/settings`).
    class PlatformSettings < Base
      # `GET /platform/settings`
      # @return [Models::PlatformSettings]
      def retrieve
        call(:get, "/platform/settings", model: Models::PlatformSettings)
      end

      # Changes settings; only the parameters given change.
      # `PATCH /platform/settings`
      #
      # @param webhook_retry_policy [Hash, nil] `{max_attempts:, initial_delay_seconds:, max_delay_seconds:}`
      #   (fields given replace theirs); nil restores the default
      # @param payment_approval_threshold [Integer, nil] cents; nil removes it. Payments created from then
      #   on with an `amount` at or above it are `requires_approval` until a second key approves them
      #   ({Payments#approve}); those created before keep their status
      # @param daily_payment_limit [Integer, nil] cents per virtual account per UTC day; nil removes it
      # @param require_verified_counterparty [Boolean] `true`: payments go only to `verified`
      #   counterparties (to an unverified one, or to a raw `destination`: 422
      #   `counterparty_not_verified`); `false` (the default) turns it off; nil is 400
      # @param sandbox [Hash] sandbox keys only: `{auto_settle:, ach_same_day_delay_seconds:, ach_standard_delay_seconds:}`
      # @return [Models::PlatformSettings]
      def update(webhook_retry_policy: NOT_GIVEN, payment_approval_threshold: NOT_GIVEN,
                 daily_payment_limit: NOT_GIVEN, require_verified_counterparty: NOT_GIVEN, sandbox: NOT_GIVEN)
        call(:patch, "/platform/settings", model: Models::PlatformSettings,
                                           body: compact(webhook_retry_policy: webhook_retry_policy,
                                                         payment_approval_threshold: payment_approval_threshold,
                                                         daily_payment_limit: daily_payment_limit,
                                                         require_verified_counterparty: require_verified_counterparty,
                                                         sandbox: sandbox))
      end
    end

    # The platform's API keys (`/platform/api-keys`).
    class APIKeys < Base
      # Creates a key; its secret is in this answer only.
      # `POST /platform/api-keys`
      #
      # @param name [String] 1..100 characters
      # @param environment [String, nil] `sandbox` or `live` (default: the caller's; live needs `live_enabled`)
      # @param idempotency_key [String, nil]
      # @return [Models::APIKey] with `secret`
      def create(name:, environment: NOT_GIVEN, idempotency_key: nil)
        call(:post, "/platform/api-keys", model: Models::APIKey,
                                          body: compact(name: name, environment: environment),
                                          idempotency_key: idempotency_key)
      end

      # Lists the keys (no secrets).
      # `GET /platform/api-keys`
      #
      # @param environment [String] whose keys (default: the caller's environment)
      # @param limit [Integer]
      # @param cursor [String]
      # @return [Page<Models::APIKey>]
      def list(environment: NOT_GIVEN, limit: NOT_GIVEN, cursor: NOT_GIVEN)
        paged("/platform/api-keys", Models::APIKey, environment: environment, limit: limit, cursor: cursor)
      end

      # Revokes a key; it stops working on the next request.
      # `DELETE /platform/api-keys/{id}`
      #
      # @param id [String] `key_...`
      # @return [Models::APIKey]
      def revoke(id)
        call(:delete, "/platform/api-keys/#{seg(id)}", model: Models::APIKey)
      end

      # Replaces a key by a new one; the old one keeps working for `grace_seconds`.
      # `POST /platform/api-keys/{id}/roll`
      #
      # @param id [String] `key_...`
      # @param grace_seconds [Integer, nil] 0..604800, default 86400
      # @param idempotency_key [String, nil]
      # @return [Models::APIKey] the new key, with `secret`
      def roll(id, grace_seconds: NOT_GIVEN, idempotency_key: nil)
        call(:post, "/platform/api-keys/#{seg(id)}/roll", model: Models::APIKey,
                                                          body: compact(grace_seconds: grace_seconds),
                                                          idempotency_key: idempotency_key)
      end
    end
  end
end
