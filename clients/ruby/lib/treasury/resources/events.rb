# frozen_string_literal: true

module Treasury
  module Resources
    # Public events: what webhooks deliver (`/events`).
    class Events < Base
      # `GET /events`
      #
      # @param type [String] e.g. `payment.completed`
      # @param created_after [Time, String]
      # @param created_before [Time, String]
      # @param limit [Integer]
      # @param cursor [String]
      # @return [Page<Models::Event>]
      def list(type: NOT_GIVEN, created_after: NOT_GIVEN, created_before: NOT_GIVEN, limit: NOT_GIVEN,
               cursor: NOT_GIVEN)
        paged("/events", Models::Event, type: type, created_after: created_after, created_before: created_before,
                                        limit: limit, cursor: cursor)
      end

      # `GET /events/{id}`
      # @param id [String] `evt_...`
      # @return [Models::Event]
      def retrieve(id)
        call(:get, "/events/#{seg(id)}", model: Models::Event)
      end
    end
  end
end
