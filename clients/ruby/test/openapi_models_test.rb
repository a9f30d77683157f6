# frozen_string_literal: true

require_relative "test_helper"

# The models against the OpenAPI document: every object schema a response can carry (named, or
# inline as `Parent.property`) has a model with exactly its properties, nested objects typed with
# their models; every list schema has the fields of Treasury::Page. A field added to (or removed
# from) the API fails here until the client follows.
class OpenAPIModelsTest < Minitest::Test
  def setup
    flunk "#{OPENAPI_PATH} is missing" unless File.exist?(OPENAPI_PATH)
    @doc = JSON.parse(File.read(OPENAPI_PATH))
    @schemas = @doc.dig("components", "schemas")
    @objects = {} # schema id => {"props" => {name => schema}, ...}
    @lists = {}
    walk_responses
  end

  def models
    Treasury::Models.constants.map { |c| Treasury::Models.const_get(c) }
                    .select { |k| k.is_a?(Class) && k < Treasury::Model && k.schema }
  end

  def model_for(id)
    models.find { |m| m.schema == id }
  end

  def test_the_document_has_response_schemas
    assert_operator @objects.size, :>=, 40
    assert_operator @lists.size, :>=, 10
  end

  def test_every_response_object_has_a_model_with_its_fields
    missing = []
    mismatched = []
    @objects.each do |id, props|
      model = model_for(id)
      if model.nil?
        missing << id
        next
      end
      ours = model.fields.keys.map(&:to_s).sort
      theirs = props.keys.sort
      next if ours == theirs

      mismatched << "#{model.name} (#{id}): the API has #{(theirs - ours).inspect} that the model lacks, " \
                    "the model has #{(ours - theirs).inspect} that the API lacks"
    end
    problems = missing.map { |id| "no model for the response schema #{id}" } + mismatched
    assert_empty problems, problems.join("\n")
  end

  def test_nested_objects_are_typed_with_their_models
    wrong = []
    @objects.each do |id, props|
      model = model_for(id) or next
      props.each do |name, schema|
        target = nested_object_id(id, name, schema)
        next unless target

        expected_model = model_for(target[:id])
        expected = target[:array] ? [expected_model] : expected_model
        actual = model.fields[name.to_sym]
        wrong << "#{model.name}##{name}: #{actual.inspect}, want #{expected.inspect}" unless actual == expected
      end
    end
    assert_empty wrong, wrong.join("\n")
  end

  def test_every_model_mirrors_a_response_schema
    stale = models.reject { |m| @objects.key?(m.schema) }.map { |m| "#{m.name} (#{m.schema})" }
    assert_empty stale, "models whose schema no response carries"
  end

  def test_every_list_schema_has_the_fields_of_a_page
    @lists.each do |id, props|
      assert_equal Treasury::Page::FIELDS.map(&:to_s).sort, props.keys.sort, "#{id} is not a list like Treasury::Page"
    end
  end

  private

  def resolve(schema)
    return schema unless schema.is_a?(Hash) && schema["$ref"]

    @schemas.fetch(schema["$ref"].split("/").last)
  end

  def ref_name(schema)
    schema.is_a?(Hash) && schema["$ref"] ? schema["$ref"].split("/").last : nil
  end

  # The non-null branch of `anyOf: [X, {type: null}]`, or the schema itself.
  def non_null(schema)
    branches = schema["anyOf"] || schema["oneOf"]
    return schema unless branches

    real = branches.reject { |b| b["type"] == "null" }
    real.size == 1 ? real.first : schema
  end

  # All the properties of a schema, its allOf parts' included.
  def properties_of(schema)
    schema = resolve(schema)
    props = {}
    (schema["allOf"] || []).each { |part| props.merge!(properties_of(part)) }
    props.merge!(schema["properties"] || {})
    props
  end

  def list_schema?(props)
    props.key?("data") && props.key?("has_more")
  end

  # The object schema a property holds (itself or as array items): {id:, array:}, or nil for a
  # plain value or a free-form object.
  def nested_object_id(parent_id, name, schema)
    schema = non_null(schema)
    array = false
    if schema["type"] == "array" || schema["items"]
      array = true
      schema = non_null(schema["items"] || {})
    end
    id = ref_name(schema) || "#{parent_id}.#{name}"
    props = properties_of(schema)
    return nil if props.empty?

    { id: id, array: array }
  end

  def walk_responses
    responses = @doc.dig("components", "responses") || {}
    @doc["paths"].each do |path, item|
      next if path == "/openapi.json"

      item.each do |method, op|
        next unless %w[get post put patch delete].include?(method)

        op["responses"].each do |status, response|
          next unless status.start_with?("2")

          response = responses.fetch(response["$ref"].split("/").last) if response["$ref"]
          (response["content"] || {}).each_value do |media|
            walk_anonymous(media["schema"]) if media["schema"]
          end
        end
      end
    end
  end

  # A response's top schema: a $ref, or allOf [$ref, {required: ...}], or a plain string (CSV).
  def walk_anonymous(schema)
    if (name = ref_name(schema))
      walk(name, @schemas.fetch(name))
    else
      (schema["allOf"] || []).each { |part| walk_anonymous(part) }
      (schema["anyOf"] || schema["oneOf"] || []).each { |part| walk_anonymous(part) }
    end
  end

  def walk(id, schema)
    return if @objects.key?(id) || @lists.key?(id)

    props = properties_of(schema)
    return if props.empty?

    if list_schema?(props)
      @lists[id] = props
      items = non_null(props["data"])["items"]
      walk(ref_name(items) || "#{id}.data", resolve(items)) if items
      return
    end
    @objects[id] = props
    props.each do |name, prop|
      target = nested_object_id(id, name, prop)
      next unless target

      inner = non_null(prop)
      inner = non_null(inner["items"]) if inner["type"] == "array" || inner["items"]
      walk(target[:id], resolve(inner))
    end
  end
end
