# frozen_string_literal: true

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
$LOAD_PATH.unshift(__dir__)

require "minitest/autorun"
require "json"
require "securerandom"
require "treasury"
require "support/stub_server"

# The OpenAPI document the client is checked against.
OPENAPI_PATH = File.expand_path("../../../http/openapi.json", __dir__)

# Every HTTP attempt the client makes during the run (each retry is one), for the tests that look
# at what went over the wire: the Idempotency-Key of each attempt, a 429 before a success, and
# which routes of the real server the suite called.
module Recorder
  Call = Struct.new(:method, :uri, :headers, :body, :status, :at, keyword_init: true)

  @calls = []
  @lock = Mutex.new

  class << self
    def record(call)
      @lock.synchronize { @calls << call }
    end

    # @return [Array<Call>]
    def calls
      @lock.synchronize { @calls.dup }
    end
  end

  # Prepended to Treasury::Transport: records each attempt.
  module Hook
    private

    def perform(method, uri, headers, payload)
      response = super
      Recorder.record(Recorder::Call.new(method: method, uri: uri, headers: headers.dup, body: payload,
                                         status: response.code.to_i,
                                         at: Process.clock_gettime(Process::CLOCK_MONOTONIC)))
      response
    rescue StandardError
      Recorder.record(Recorder::Call.new(method: method, uri: uri, headers: headers.dup, body: payload, status: nil,
                                         at: Process.clock_gettime(Process::CLOCK_MONOTONIC)))
      raise
    end
  end
end
Treasury::Transport.prepend(Recorder::Hook)

module TestHelpers
  def monotonic
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  # Calls the block until it returns a truthy value; fails after timeout seconds.
  def wait_until(what, timeout: 15, interval: 0.1)
    deadline = monotonic + timeout
    loop do
      value = yield
      return value if value

      flunk("timed out after #{timeout}s waiting for #{what}") if monotonic > deadline
      sleep interval
    end
  end

  # Asserts that the block raises error_class and returns the error.
  def assert_api_error(error_class, code: nil, status: nil, &block)
    error = assert_raises(error_class, &block)
    assert_kind_of Treasury::APIError, error
    assert_equal status, error.status if status
    assert_equal code, error.code if code
    error
  end
end
