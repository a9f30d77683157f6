# frozen_string_literal: true

module Treasury
  # Base class of every resource the API returns.
  #
  # A model is a read-only view of one JSON object. Each field the API documents has a reader
  # (`payment.status`); nested objects are models too (`payment.destination.name`), arrays of
  # objects are arrays of models, and free-form objects (`metadata`, an event's `data.object`)
  # stay Hashes with String keys. Fields the client does not know yet (a newer server) are kept
  # and readable with {#[]}.
  #
  # The list of fields of each model is checked against the OpenAPI document by the test suite.
  #
  # @example
  #   payment = client.payments.retrieve("pay_...")
  #   payment.status          # => "completed"
  #   payment[:status]        # => "completed"
  #   payment.to_h            # => {id: "pay_...", object: "payment", ...}
  class Model
    class << self
      # Sets (with an argument) or returns the name of the OpenAPI schema this model mirrors.
      # Inline schemas are named `Parent.property`.
      # @param name [String, nil]
      # @return [String, nil]
      def schema(name = nil)
        @schema = name if name
        @schema
      end

      # The fields of this model (its own and its superclass's), by name: the model class of a
      # nested object, `[ModelClass]` for an array of objects, or nil for a plain value.
      # @return [Hash{Symbol=>Class, Array<Class>, nil}]
      def fields
        inherited = superclass.respond_to?(:fields) ? superclass.fields : {}
        inherited.merge(own_fields)
      end

      # Builds a model from a parsed JSON object (String or Symbol keys).
      # @param attributes [Hash]
      # @return [Model]
      def construct(attributes)
        new(attributes)
      end

      # @api private
      # Converts a JSON value to the field's declared type.
      def coerce(type, value)
        case type
        when Array
          value.is_a?(Array) ? value.map { |v| coerce(type.first, v) } : value
        when Class
          value.is_a?(Hash) ? type.construct(value) : value
        else
          value
        end
      end

      private

      def own_fields
        @own_fields ||= {}
      end

      # Declares a field and its reader.
      # @param name [Symbol]
      # @param type [Class, Array<Class>, nil]
      def field(name, type = nil)
        name = name.to_sym
        own_fields[name] = type
        if Object.method_defined?(name) || Object.private_method_defined?(name)
          # A field named like an Object method (KYBDecision#method): the reader answers with no
          # arguments and defers to Object's method otherwise.
          define_method(name) { |*args, &blk| args.empty? && blk.nil? ? @attributes[name] : super(*args, &blk) }
        else
          define_method(name) { @attributes[name] }
        end
      end
    end

    # @param attributes [Hash] a parsed JSON object
    def initialize(attributes = {})
      fields = self.class.fields
      @attributes = {}
      (attributes || {}).each do |key, value|
        sym = key.to_sym
        @attributes[sym] = Model.coerce(fields[sym], value)
      end
      @attributes.freeze
    end

    # The value of a field by name, including fields this version of the client does not know.
    # @param key [String, Symbol]
    # @return [Object, nil]
    def [](key)
      @attributes[key.to_sym]
    end

    # Whether the server sent this field.
    # @param key [String, Symbol]
    # @return [Boolean]
    def key?(key)
      @attributes.key?(key.to_sym)
    end

    # Digs into nested fields, like Hash#dig.
    # @return [Object, nil]
    def dig(key, *rest)
      value = self[key]
      return value if rest.empty? || value.nil?

      value.dig(*rest)
    end

    # The field names the server sent.
    # @return [Array<Symbol>]
    def keys
      @attributes.keys
    end

    # A deep Hash of the model with Symbol keys (free-form objects keep their String keys).
    # @return [Hash{Symbol=>Object}]
    def to_h
      @attributes.transform_values { |v| Model.unwrap(v) }
    end
    alias to_hash to_h

    # @api private
    def self.unwrap(value)
      case value
      when Model then value.to_h
      when Array then value.map { |v| unwrap(v) }
      else value
      end
    end

    # @return [String] the model as JSON
    def to_json(*args)
      to_h.to_json(*args)
    end

    def ==(other)
      other.class == self.class && other.to_h == to_h
    end
    alias eql? ==

    def hash
      [self.class, to_h].hash
    end

    def inspect
      shown = @attributes.map { |k, v| "#{k}=#{v.inspect}" }.join(", ")
      "#<#{self.class.name} #{shown}>"
    end
    alias to_s inspect
  end
end
