# frozen_string_literal: true

require "socket"

# A tiny HTTP/1.1 server on 127.0.0.1 for the tests: a webhook receiver, and a stand-in API for
# what a real server cannot be made to answer (a 500, a 503 then a success). Standard library
# only (TCPServer): one connection per request, closed after the answer.
class StubServer
  Request = Struct.new(:method, :path, :headers, :body, :received_at, keyword_init: true) do
    # @return [String, nil] a header, by case-insensitive name
    def [](name)
      headers[name.downcase]
    end
  end

  attr_reader :port

  # @yieldparam request [Request]
  # @yieldparam index [Integer] 0 for the first request, 1 for the second, ...
  # @yieldreturn [Array(Integer, Hash, String)] status, headers, body
  def initialize(&handler)
    @handler = handler || ->(_req, _i) { [200, { "Content-Type" => "application/json" }, "{}"] }
    @server = TCPServer.new("127.0.0.1", 0)
    @port = @server.addr[1]
    @requests = []
    @lock = Mutex.new
    @arrived = ConditionVariable.new
    @thread = Thread.new { accept_loop }
  end

  # @return [String] the server's URL with path
  def url(path = "")
    "http://127.0.0.1:#{@port}#{path}"
  end

  # @return [Array<Request>] the requests received so far
  def requests
    @lock.synchronize { @requests.dup }
  end

  # Waits for a request that satisfies the block.
  # @return [Request, nil] nil after timeout seconds
  def wait_for(timeout: 10)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    @lock.synchronize do
      loop do
        found = @requests.find { |r| yield r }
        return found if found

        left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
        return nil if left <= 0

        @arrived.wait(@lock, left)
      end
    end
  end

  def close
    @thread.kill
    @server.close
  rescue IOError
    nil
  end

  private

  def accept_loop
    loop do
      socket = @server.accept
      Thread.new(socket) { |s| serve(s) }
    end
  rescue IOError, Errno::EBADF
    nil
  end

  def serve(socket)
    request = read_request(socket)
    return unless request

    index = @lock.synchronize do
      @requests << request
      @arrived.broadcast
      @requests.size - 1
    end
    status, headers, body = @handler.call(request, index)
    write_response(socket, status, headers || {}, body.to_s)
  rescue StandardError => e
    warn "stub server: #{e.class}: #{e.message}"
  ensure
    socket.close unless socket.closed?
  end

  def read_request(socket)
    line = socket.gets("\r\n")
    return nil if line.nil?

    method, path, = line.split(" ", 3)
    headers = {}
    while (header = socket.gets("\r\n")) && header != "\r\n"
      name, value = header.split(":", 2)
      headers[name.strip.downcase] = value.to_s.strip
    end
    body = if headers["transfer-encoding"].to_s.downcase.include?("chunked")
             read_chunked(socket)
           else
             socket.read(headers["content-length"].to_i).to_s
           end
    Request.new(method: method, path: path, headers: headers, body: body.b,
                received_at: Process.clock_gettime(Process::CLOCK_MONOTONIC))
  end

  def read_chunked(socket)
    body = +""
    loop do
      size = socket.gets("\r\n").to_s.strip.split(";").first.to_i(16)
      break if size.zero?

      body << socket.read(size)
      socket.read(2)
    end
    socket.gets("\r\n") # the trailer's end
    body
  end

  def write_response(socket, status, headers, body)
    head = +"HTTP/1.1 #{status} Stub\r\n"
    headers.merge("Content-Length" => body.bytesize.to_s, "Connection" => "close").each do |k, v|
      head << "#{k}: #{v}\r\n"
    end
    socket.write(head, "\r\n", body)
  end
end
