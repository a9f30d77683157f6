# frozen_string_literal: true

module Treasury
  module Resources
    # Webhook endpoints and their deliveries (`/webhooks`). To verify a delivery, see
    # {Treasury::Webhooks.verify}.
    class Webhooks < Base
      # Creates an endpoint; its secret (`whsec_...`) is in this answer only.
      # `POST /webhooks`
      #
      # @param url [String] `https` in live; `http` allowed in the sandbox
      # @param events [Array<String>] event types, or `["*"]` (the default)
      # @param description [String]
      # @param status [String] `enabled` or `disabled`
      # @param retry_policy [Hash] `{max_attempts:, initial_delay_seconds:, max_delay_seconds:}`
      # @param idempotency_key [String, nil]
      # @return [Models::WebhookEndpoint] with `secret`
      def create(url:, events: NOT_GIVEN, description: NOT_GIVEN, status: NOT_GIVEN, retry_policy: NOT_GIVEN,
                 idempotency_key: nil)
        call(:post, "/webhooks", model: Models::WebhookEndpoint,
                                 body: compact(url: url, events: events, description: description, status: status,
                                               retry_policy: retry_policy),
                                 idempotency_key: idempotency_key)
      end

      # `GET /webhooks`
      # @param limit [Integer]
      # @param cursor [String]
      # @return [Page<Models::WebhookEndpoint>]
      def list(limit: NOT_GIVEN, cursor: NOT_GIVEN)
        paged("/webhooks", Models::WebhookEndpoint, limit: limit, cursor: cursor)
      end

      # `GET /webhooks/{id}`
      # @param id [String] `wh_...`
      # @return [Models::WebhookEndpoint]
      def retrieve(id)
        call(:get, "/webhooks/#{seg(id)}", model: Models::WebhookEndpoint)
      end

      # Changes an endpoint; only the parameters given change.
      # `PATCH /webhooks/{id}`
      #
      # @param id [String] `wh_...`
      # @param url [String]
      # @param events [Array<String>]
      # @param description [String]
      # @param status [String] `enabled` or `disabled`
      # @param retry_policy [Hash]
      # @return [Models::WebhookEndpoint]
      def update(id, url: NOT_GIVEN, events: NOT_GIVEN, description: NOT_GIVEN, status: NOT_GIVEN,
                 retry_policy: NOT_GIVEN)
        call(:patch, "/webhooks/#{seg(id)}", model: Models::WebhookEndpoint,
                                             body: compact(url: url, events: events, description: description,
                                                           status: status, retry_policy: retry_policy))
      end

      # `DELETE /webhooks/{id}`
      # @param id [String] `wh_...`
      # @return [Models::DeletedWebhookEndpoint]
      def delete(id)
        call(:delete, "/webhooks/#{seg(id)}", model: Models::DeletedWebhookEndpoint)
      end

      # Gives the endpoint a new secret; the old one keeps signing beside it for 24 hours.
      # `POST /webhooks/{id}/rotate-secret`
      # @param id [String] `wh_...`
      # @return [Models::WebhookEndpoint] with the new `secret`
      def rotate_secret(id)
        call(:post, "/webhooks/#{seg(id)}/rotate-secret", model: Models::WebhookEndpoint, body: empty_body)
      end

      # Sends a `webhook.test` event to the endpoint.
      # `POST /webhooks/{id}/test`
      # @param id [String] `wh_...`
      # @return [Models::QueuedWebhookDelivery]
      def test(id)
        call(:post, "/webhooks/#{seg(id)}/test", model: Models::QueuedWebhookDelivery, body: empty_body)
      end

      # Sends the platform's past events of a window (of the key's environment) to the endpoint
      # again, each as a new delivery: its own `webhook-id`, `replay_id` naming the replay, and the
      # event's body as first sent (its original `id`, so a receiver that drops duplicates by event id
      # can tell), signed and retried like any delivery. With `types`, every event of the window of
      # those types, subscribed to or not; without, the types the endpoint subscribes to now. At most
      # 10,000 events: split a larger window. The idempotency key (yours, else a random one) is the
      # same on every retry: the same key and body answer with the first replay and queue nothing
      # again.
      # `POST /webhooks/{id}/replay`
      #
      # @param id [String] `wh_...`
      # @param created_after [Time, Date, String] start of the window, inclusive (a `Time` is sent as
      #   RFC 3339 UTC with milliseconds, a `Date` as `YYYY-MM-DD`, midnight UTC)
      # @param created_before [Time, Date, String] end of the window, exclusive; after `created_after`
      # @param types [Array<String>] event types (not `*` nor `webhook.test`)
      # @param idempotency_key [String, nil] sent as the Idempotency-Key header (a random one when nil)
      # @return [Models::WebhookReplay] with `replayed`, the number of deliveries queued
      # @raise [BadRequestError] `invalid_request` (`param` `created_before` for a reversed window,
      #   `types[i]` for an unknown type), or `replay_too_large` (more than 10,000 events)
      # @raise [NotFoundError] an unknown, deleted, another platform's or environment's endpoint
      # @raise [ConflictError] `invalid_state` (the endpoint is disabled), `idempotency_conflict`
      #   (the key was used with another body; `resource_id` names its replay)
      def replay(id, created_after:, created_before:, types: NOT_GIVEN, idempotency_key: nil)
        body = compact(created_after: time_value(created_after), created_before: time_value(created_before),
                       types: types)
        call(:post, "/webhooks/#{seg(id)}/replay", model: Models::WebhookReplay, body: body,
                                                   idempotency_key: idempotency_key)
      end

      # The endpoint's deliveries.
      # @return [WebhookDeliveries]
      def deliveries
        @deliveries ||= WebhookDeliveries.new(@client)
      end

      # Shortcut for {Treasury::Webhooks.verify}.
      # @return [Hash] the event
      def verify(raw_body, headers, secret, **options)
        Treasury::Webhooks.verify(raw_body, headers, secret, **options)
      end

      private

      def time_value(value)
        case value
        when Time then value.utc.strftime("%Y-%m-%dT%H:%M:%S.%LZ")
        when Date then value.strftime("%Y-%m-%d")
        else value
        end
      end
    end

    # Deliveries of a webhook endpoint (`/webhooks/{id}/deliveries`).
    class WebhookDeliveries < Base
      # `GET /webhooks/{id}/deliveries`
      #
      # @param webhook_id [String] `wh_...`
      # @param status [String] `pending`, `succeeded` or `failed`
      # @param limit [Integer]
      # @param cursor [String]
      # @return [Page<Models::WebhookDelivery>]
      def list(webhook_id, status: NOT_GIVEN, limit: NOT_GIVEN, cursor: NOT_GIVEN)
        paged("/webhooks/#{seg(webhook_id)}/deliveries", Models::WebhookDelivery,
              status: status, limit: limit, cursor: cursor)
      end

      # Sends a delivery again now, whatever its state.
      # `POST /webhooks/{id}/deliveries/{delivery_id}/retry`
      #
      # @param webhook_id [String] `wh_...`
      # @param delivery_id [String] `msg_...` (the `webhook-id` header the endpoint received)
      # @return [Models::QueuedWebhookDelivery]
      def retry(webhook_id, delivery_id)
        call(:post, "/webhooks/#{seg(webhook_id)}/deliveries/#{seg(delivery_id)}/retry",
             model: Models::QueuedWebhookDelivery, body: empty_body)
      end
    end
  end
end
