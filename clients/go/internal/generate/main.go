// Command generate regenerates the Go client's generated code from the API's
// OpenAPI document (http/openapi.json at the repository root). It is run by
// `go generate ./...` from the module root (clients/go):
//
//   - api/api.gen.go: the models and the low-level client, written by
//     oapi-codegen v2 (github.com/oapi-codegen/oapi-codegen/v2) from a prepared,
//     temporary copy of the document (see prepare);
//   - types.gen.go: the package treasury's aliases of every model type and
//     enum constant of package api, so that callers need one import;
//   - schemas_gen_test.go: the map from each component schema of the document
//     to its Go type, used by the tests that check the models against the
//     document.
//
// The output is deterministic: the client's generated_test.go runs this
// command with -out into a temporary directory and fails when the committed
// files differ, so a change to the document fails the client's tests until
// `go generate ./...` is run again.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/oapi-codegen/oapi-codegen/v2/pkg/codegen"
)

// OapiCodegenVersion is the version of oapi-codegen that go.mod pins; it is
// written into the generated files' headers.
const OapiCodegenVersion = "v2.8.2"

// SpecPath is the OpenAPI document, relative to the module root.
const SpecPath = "../../http/openapi.json"

func main() {
	root := flag.String("root", ".", "the client module's root directory (clients/go)")
	out := flag.String("out", "", "where to write the files (default: -root)")
	flag.Parse()
	if *out == "" {
		out = root
	}
	files, err := Generate(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := filepath.Join(*out, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "generate:", err)
			os.Exit(1)
		}
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "generate:", err)
			os.Exit(1)
		}
	}
}

// Generate reads the OpenAPI document relative to root and returns the
// generated files, keyed by their slash-separated path relative to root.
func Generate(root string) (map[string][]byte, error) {
	raw, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(SpecPath)))
	if err != nil {
		return nil, err
	}
	prepared, err := Prepare(raw)
	if err != nil {
		return nil, fmt.Errorf("prepare the document: %w", err)
	}
	apiCode, err := generateAPI(prepared)
	if err != nil {
		return nil, err
	}
	aliases, schemaMap, err := generateRoot(apiCode, raw)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		"api/api.gen.go":      apiCode,
		"types.gen.go":        aliases,
		"schemas_gen_test.go": schemaMap,
	}, nil
}

// Prepare rewrites a copy of the OpenAPI 3.1 document into what oapi-codegen
// turns into a usable client. It never changes what goes over the wire:
//
//  1. Error responses (4xx and 5xx) are dropped from the operations: the
//     hand-written layer decodes every error body, whatever the status, into
//     an *APIError, so per-status error types would only be dead weight.
//  2. A response or request schema `allOf: [{$ref: X}, {required: [...]}]`
//     (X with some optional fields made required) becomes `$ref: X`, so the
//     operation returns the named model X rather than an anonymous copy.
//  3. An inline enum property whose generated type name (schema name + the
//     property's name) is the name of a component schema gets the type name
//     `<that name>Value` (x-go-type-name), since Go type names must differ.
//  4. A null member of an enum whose type array already holds "null"
//     (`type: [string, null], enum: [prenote, null]`) is dropped from the
//     enum: the field is a pointer, nil for null, and oapi-codegen would
//     otherwise write a constant of the string "<nil>".
//
// oapi-codegen v2.8.2 reads the OpenAPI 3.1 constructs the document uses
// (type arrays with "null", anyOf with {type: null}, const, examples arrays)
// itself, so they are kept as they are.
func Prepare(raw []byte) ([]byte, error) {
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	paths, _ := doc["paths"].(map[string]any)
	for _, item := range paths {
		ops, _ := item.(map[string]any)
		for method, op := range ops {
			o, ok := op.(map[string]any)
			if !ok || method == "parameters" {
				continue
			}
			if responses, ok := o["responses"].(map[string]any); ok {
				for status := range responses {
					if strings.HasPrefix(status, "4") || strings.HasPrefix(status, "5") {
						delete(responses, status)
					}
				}
			}
		}
	}
	collapseRequiredAllOf(doc)
	dropNullEnumMembers(doc)

	components, _ := doc["components"].(map[string]any)
	schemas, _ := components["schemas"].(map[string]any)
	typeNames := map[string]bool{}
	for name := range schemas {
		typeNames[codegen.SchemaNameToTypeName(name)] = true
	}
	for name, s := range schemas {
		schema, _ := s.(map[string]any)
		props, _ := schema["properties"].(map[string]any)
		for prop, p := range props {
			ps, _ := p.(map[string]any)
			if ps == nil {
				continue
			}
			if _, isEnum := ps["enum"]; !isEnum {
				continue
			}
			candidate := codegen.SchemaNameToTypeName(name) + codegen.ToCamelCase(prop)
			if typeNames[candidate] {
				ps["x-go-type-name"] = candidate + "Value"
			}
		}
	}
	delete(components, "responses") // only the dropped error responses used them
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// dropNullEnumMembers removes null from every enum of a schema whose type
// array holds "null" (the nullability stays in the type).
func dropNullEnumMembers(node any) {
	switch n := node.(type) {
	case map[string]any:
		if enum, ok := n["enum"].([]any); ok && typeAllowsNull(n["type"]) {
			kept := make([]any, 0, len(enum))
			for _, v := range enum {
				if v != nil {
					kept = append(kept, v)
				}
			}
			n["enum"] = kept
		}
		for _, v := range n {
			dropNullEnumMembers(v)
		}
	case []any:
		for _, v := range n {
			dropNullEnumMembers(v)
		}
	}
}

func typeAllowsNull(t any) bool {
	types, _ := t.([]any)
	for _, v := range types {
		if v == "null" {
			return true
		}
	}
	return false
}

// collapseRequiredAllOf replaces every {allOf: [{$ref}, {required: [...]}]}
// (and nothing else but a description) by the $ref.
func collapseRequiredAllOf(node any) {
	switch n := node.(type) {
	case map[string]any:
		for k, v := range n {
			if m, ok := v.(map[string]any); ok {
				if ref, ok := refOfRequiredAllOf(m); ok {
					n[k] = map[string]any{"$ref": ref}
					continue
				}
			}
			collapseRequiredAllOf(v)
		}
	case []any:
		for _, v := range n {
			collapseRequiredAllOf(v)
		}
	}
}

func refOfRequiredAllOf(m map[string]any) (string, bool) {
	all, ok := m["allOf"].([]any)
	if !ok || len(all) != 2 {
		return "", false
	}
	for k := range m {
		if k != "allOf" && k != "description" {
			return "", false
		}
	}
	first, _ := all[0].(map[string]any)
	second, _ := all[1].(map[string]any)
	ref, _ := first["$ref"].(string)
	if ref == "" || len(first) != 1 || len(second) != 1 {
		return "", false
	}
	if _, ok := second["required"]; !ok {
		return "", false
	}
	return ref, true
}

func generateAPI(prepared []byte) ([]byte, error) {
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = false
	swagger, err := loader.LoadFromData(prepared)
	if err != nil {
		return nil, fmt.Errorf("load the prepared document: %w", err)
	}
	version := OapiCodegenVersion
	cfg := codegen.Configuration{
		PackageName: "api",
		Generate: codegen.GenerateOptions{
			Models: true,
			Client: true,
		},
		Compatibility: codegen.CompatibilityOptions{
			// Enum constants always carry their type's name
			// (GetStatementParamsFormatCsv, not Csv).
			AlwaysPrefixEnumValues: true,
		},
		OutputOptions: codegen.OutputOptions{
			GenerateTypesForAnonymousSchemas: true,
			SkipResponseBodyGetters:          true,
			ExcludeOperationIDs:              []string{"getOpenAPIDocument"},
		},
		NoVCSVersionOverride: &version,
	}
	cfg = cfg.UpdateDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	code, err := codegen.Generate(swagger, cfg)
	if err != nil {
		return nil, fmt.Errorf("oapi-codegen: %w", err)
	}
	header := regexp.MustCompile(`(?m)^// Code generated by .* DO NOT EDIT\.$`)
	if !header.MatchString(code) {
		return nil, fmt.Errorf("oapi-codegen's output has no generated-code header")
	}
	code = header.ReplaceAllLiteralString(code,
		"// Code generated by clients/go/internal/generate from http/openapi.json with oapi-codegen "+
			OapiCodegenVersion+". DO NOT EDIT.")
	return []byte(code), nil
}

// clientMachinery are the generated names that belong to package api's
// low-level client rather than to the models; package treasury does not alias
// them (it has its own Client).
var clientMachinery = map[string]bool{
	"Client": true, "ClientInterface": true, "ClientOption": true,
	"ClientWithResponses": true, "ClientWithResponsesInterface": true,
	"HttpRequestDoer": true, "RequestEditorFn": true,
}

// generateRoot writes package treasury's aliases of package api's model types
// and constants, and the schema → type map for the tests.
func generateRoot(apiCode, rawSpec []byte) ([]byte, []byte, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "api.gen.go", apiCode, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("parse the generated code: %w", err)
	}
	var types, consts []string
	for _, decl := range file.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, spec := range gd.Specs {
			switch s := spec.(type) {
			case *ast.TypeSpec:
				name := s.Name.Name
				if !ast.IsExported(name) || clientMachinery[name] || isResponseWrapper(s) {
					continue
				}
				types = append(types, name)
			case *ast.ValueSpec:
				if gd.Tok != token.CONST {
					continue
				}
				for _, n := range s.Names {
					if ast.IsExported(n.Name) {
						consts = append(consts, n.Name)
					}
				}
			}
		}
	}
	sort.Strings(types)
	sort.Strings(consts)

	var b bytes.Buffer
	b.WriteString("// Code generated by clients/go/internal/generate from http/openapi.json. DO NOT EDIT.\n\n")
	b.WriteString("package treasury\n\nimport \"github.com/opentreasury/treasury/clients/go/api\"\n\n")
	b.WriteString("// The API's models, as package api generates them from the OpenAPI document.\ntype (\n")
	for _, t := range types {
		fmt.Fprintf(&b, "\t%s = api.%s\n", t, t)
	}
	b.WriteString(")\n\n// The API's enum values.\nconst (\n")
	for _, c := range consts {
		fmt.Fprintf(&b, "\t%s = api.%s\n", c, c)
	}
	b.WriteString(")\n")
	aliases, err := format.Source(b.Bytes())
	if err != nil {
		return nil, nil, fmt.Errorf("format types.gen.go: %w", err)
	}

	var doc struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(rawSpec, &doc); err != nil {
		return nil, nil, err
	}
	declared := map[string]bool{}
	for _, t := range types {
		declared[t] = true
	}
	schemaNames := make([]string, 0, len(doc.Components.Schemas))
	for name := range doc.Components.Schemas {
		schemaNames = append(schemaNames, name)
	}
	sort.Strings(schemaNames)
	b.Reset()
	b.WriteString("// Code generated by clients/go/internal/generate from http/openapi.json. DO NOT EDIT.\n\n")
	b.WriteString("package treasury\n\nimport \"reflect\"\n\n")
	b.WriteString("// schemaTypes maps each component schema of the OpenAPI document to its Go type.\n")
	b.WriteString("var schemaTypes = map[string]reflect.Type{\n")
	var unused []string
	for _, name := range schemaNames {
		t := codegen.SchemaNameToTypeName(name)
		if !declared[t] {
			unused = append(unused, name)
			continue
		}
		fmt.Fprintf(&b, "\t%q: reflect.TypeFor[%s](),\n", name, t)
	}
	b.WriteString("}\n\n")
	b.WriteString("// unusedSchemas are the component schemas that no generated operation uses\n")
	b.WriteString("// (the error body, which *APIError carries, and the like), so no model is generated.\n")
	b.WriteString("var unusedSchemas = []string{\n")
	for _, name := range unused {
		fmt.Fprintf(&b, "\t%q,\n", name)
	}
	b.WriteString("}\n")
	schemaMap, err := format.Source(b.Bytes())
	if err != nil {
		return nil, nil, fmt.Errorf("format schemas_gen_test.go: %w", err)
	}
	return aliases, schemaMap, nil
}

// isResponseWrapper tells the generated XxxResponse structs (Body, HTTPResponse,
// JSON200…) of the low-level client.
func isResponseWrapper(s *ast.TypeSpec) bool {
	st, ok := s.Type.(*ast.StructType)
	if !ok {
		return false
	}
	for _, f := range st.Fields.List {
		for _, n := range f.Names {
			if n.Name == "HTTPResponse" {
				return true
			}
		}
	}
	return false
}
