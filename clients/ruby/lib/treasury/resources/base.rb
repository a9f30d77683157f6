# frozen_string_literal: true

module Treasury
  # The API's resources, reached from a {Client}: `client.payments`, `client.virtual_accounts`, ...
  module Resources
    # What every resource shares: the client, and helpers to call the API.
    # @api private
    class Base
      # @param client [Client]
      def initialize(client)
        @client = client
      end

      private

      # Calls the API and builds `model` from the answer (the parsed body when model is nil).
      def call(method, path, model: nil, query: nil, body: nil, idempotency_key: nil, accept: "application/json")
        response = @client.transport.request(method, path, query: compact(query), body: body,
                                                            idempotency_key: idempotency_key, accept: accept)
        model && response.body.is_a?(Hash) ? model.construct(response.body) : response.body
      end

      # Fetches the first page of a list; the page fetches the next ones.
      def paged(path, model, query)
        query = compact(query) || {}
        body = @client.transport.request(:get, path, query: query).body
        Page.new(body, model, ->(cursor) { paged(path, model, query.merge(cursor: cursor)) })
      end

      # A JSON body of the parameters given (NOT_GIVEN ones are left out; nil is sent as null).
      def compact(params)
        params&.reject { |_, v| v.equal?(NOT_GIVEN) }
      end

      # An empty JSON object, for the action routes that take no body.
      def empty_body
        {}
      end

      # A path segment, escaped.
      def seg(value)
        value.to_s.b.gsub(/[^A-Za-z0-9\-._~]/n) { |c| format("%%%02X", c.ord) }
      end
    end
  end
end
