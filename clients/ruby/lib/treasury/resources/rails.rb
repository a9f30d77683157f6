# frozen_string_literal: true

module Treasury
  module Resources
    # Live mode's sponsor-bank connector (`/operator/rails`). Operator key only.
    class LiveRails < Base
      # @return [ACHFiles]
      def ach_files
        @ach_files ||= ACHFiles.new(@client)
      end
    end

    # The outbound NACHA files (`/operator/rails/ach/files`).
    class ACHFiles < Base
      # `GET /operator/rails/ach/files`
      # @param limit [Integer]
      # @param cursor [String]
      # @return [Page<Models::ACHFile>]
      def list(limit: NOT_GIVEN, cursor: NOT_GIVEN)
        paged("/operator/rails/ach/files", Models::ACHFile, limit: limit, cursor: cursor)
      end

      # Cuts the pending live ACH payments into a file now.
      # `POST /operator/rails/ach/files`
      # @param idempotency_key [String, nil]
      # @return [Page<Models::ACHFile>] the files written (one page)
      def cut(idempotency_key: nil)
        body = call(:post, "/operator/rails/ach/files", body: empty_body, idempotency_key: idempotency_key)
        Page.new(body, Models::ACHFile)
      end
    end
  end
end
