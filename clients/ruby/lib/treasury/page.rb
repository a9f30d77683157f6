# frozen_string_literal: true

module Treasury
  # One page of a list, and the way to walk all of them.
  #
  # A list method fetches the first page at once. {#each} (and so every Enumerable method:
  # `map`, `select`, `first(n)`, `to_a`, `lazy`, ...) walks every item of every page, fetching the
  # next page (the `cursor` parameter set to the page's `next_cursor`) only when the items before
  # it are used up.
  #
  # @example Every payment, page after page
  #   client.payments.list(limit: 100).each { |payment| puts payment.id }
  # @example Just this page
  #   page = client.payments.list(limit: 10)
  #   page.data       # => [#<Treasury::Models::Payment ...>, ...]
  #   page.has_more   # => true
  #   page.next_page  # => the next Treasury::Page, or nil
  class Page
    include Enumerable

    # The fields of a list object, `{"object":"list","data":[...],"has_more":bool,"next_cursor":...}`.
    FIELDS = %i[object data has_more next_cursor].freeze

    # @return [String] always "list"
    attr_reader :object
    # @return [Array<Model>] the items of this page
    attr_reader :data
    # @return [Boolean] whether another page follows
    attr_reader :has_more
    # @return [String, nil] the cursor of the next page
    attr_reader :next_cursor
    # @return [Class] the model of the items
    attr_reader :item_class

    # @param body [Hash] the list object as parsed JSON
    # @param item_class [Class] the model of the items
    # @param fetch [Proc, nil] given a cursor, returns the next page (nil: a list that is not paged)
    def initialize(body, item_class, fetch = nil)
      @object = body["object"]
      @data = (body["data"] || []).map { |item| item_class.construct(item) }.freeze
      @has_more = body["has_more"] ? true : false
      @next_cursor = body["next_cursor"]
      @item_class = item_class
      @fetch = fetch
    end

    # @return [Boolean] whether another page follows
    def has_more?
      @has_more && !@next_cursor.nil? && !@fetch.nil?
    end
    alias next_page? has_more?

    # Fetches the next page.
    # @return [Page, nil] nil after the last page
    # @raise [APIError]
    def next_page
      return nil unless has_more?

      @fetch.call(@next_cursor)
    end

    # Yields this page and every page after it.
    # @yieldparam page [Page]
    # @return [Enumerator, void]
    def each_page
      return enum_for(:each_page) unless block_given?

      page = self
      while page
        yield page
        page = page.next_page
      end
    end

    # Yields every item of this page and of every page after it.
    # @yieldparam item [Model]
    # @return [Enumerator, void]
    def each(&block)
      return enum_for(:each) unless block

      each_page { |page| page.data.each(&block) }
    end
    alias auto_paging_each each

    def inspect
      "#<#{self.class.name} of #{@item_class.name}: #{@data.size} items, has_more=#{@has_more}>"
    end
  end
end
