package http

import (
	"bytes"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
	"github.com/shopspring/decimal"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/projections/queries"
)

// readBody reads the whole (size-limited) body.
func readBody(c echo.Context) ([]byte, error) {
	b, err := io.ReadAll(c.Request().Body)
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, &domain.Error{Code: domain.CodeRequestTooLarge, Message: "request bodies are limited to 1 MiB"}
	}
	if err != nil {
		return nil, domain.Invalid("", "could not read the request body")
	}
	return b, nil
}

// decodeStrict decodes a JSON object into v, refusing unknown fields,
// trailing data and invalid UTF-8, with errors that name the field.
func decodeStrict(body []byte, v any) error {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		body = []byte("{}")
	}
	if !utf8.Valid(body) {
		return domain.Invalid("", "the request body is not valid UTF-8")
	}
	if body[0] != '{' {
		return domain.Invalid("", "the request body must be a JSON object")
	}
	// PostgreSQL stores no NUL character (in text or jsonb): refuse it here
	// rather than fail later.
	if bytes.Contains(body, []byte(`\u0000`)) {
		return domain.Invalid("", "strings must not contain the NUL character (\\u0000)")
	}
	// First the shape: every key must be a field of v, spelled exactly
	// (encoding/json would match case-insensitively and cannot name the
	// path of an unknown field nested in an Optional).
	var generic any
	if err := json.Unmarshal(body, &generic); err != nil {
		return jsonError(err)
	}
	if path, what := shapeError(generic, reflect.TypeOf(v), ""); path != "" {
		if what == "" {
			return domain.Invalid(path, "unknown field %q", path)
		}
		return domain.Invalid(path, "%s must be %s", path, what)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if len(bytes.TrimSpace(body[dec.InputOffset():])) > 0 {
		return domain.Invalid("", "the request body has data after the JSON object")
	}
	return nil
}

// shapeError returns the path of the first place where data does not fit
// t — a key t does not declare, or a value of the wrong JSON type — and
// what is wrong there, or "" when it fits. Maps are free-form in their
// keys; Optional[T] is seen through. It names array elements by index
// (beneficial_owners[1].is_control_person), which encoding/json does not.
func shapeError(data any, t reflect.Type, path string) (string, string) {
	if data == nil {
		return "", "" // null: absent, or explicitly empty; the rules decide
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == decimalType {
		switch d := data.(type) {
		case float64:
			return "", ""
		case string:
			if _, err := decimal.NewFromString(d); err == nil {
				return "", ""
			}
		}
		return path, "a decimal number"
	}
	if t.Kind() == reflect.Struct {
		if inner, ok := optionalValueType(t); ok {
			return shapeError(data, inner, path)
		}
	}
	if t.Implements(textUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		if _, ok := data.(string); !ok {
			return path, "a string"
		}
		return "", ""
	}
	switch t.Kind() {
	case reflect.String:
		if _, ok := data.(string); !ok {
			return path, "a string"
		}
	case reflect.Bool:
		if _, ok := data.(bool); !ok {
			return path, "a boolean"
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if f, ok := data.(float64); !ok || f != math.Trunc(f) {
			return path, "an integer"
		}
	case reflect.Float32, reflect.Float64:
		if _, ok := data.(float64); !ok {
			return path, "a number"
		}
	case reflect.Map:
		m, ok := data.(map[string]any)
		if !ok {
			return path, "an object"
		}
		for key, val := range m {
			if p, what := shapeError(val, t.Elem(), join(path, key)); p != "" {
				return p, what
			}
		}
	case reflect.Slice, reflect.Array:
		arr, ok := data.([]any)
		if !ok {
			return path, "an array"
		}
		for i, val := range arr {
			if p, what := shapeError(val, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p, what
			}
		}
	case reflect.Struct:
		m, ok := data.(map[string]any)
		if !ok {
			return path, "an object"
		}
		fields := jsonFields(t)
		for key, val := range m {
			ft, ok := fields[key]
			if !ok {
				return join(path, key), ""
			}
			if p, what := shapeError(val, ft, join(path, key)); p != "" {
				return p, what
			}
		}
	}
	return "", ""
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var (
	decimalType     = reflect.TypeOf(decimal.Decimal{})
	textUnmarshaler = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
)

// optionalValueType sees through domain.Optional[T] to T.
func optionalValueType(t reflect.Type) (reflect.Type, bool) {
	if t.NumField() != 2 || t.Field(0).Name != "Set" || t.Field(1).Name != "Value" || !strings.HasPrefix(t.Name(), "Optional[") {
		return nil, false
	}
	return t.Field(1).Type.Elem(), true
}

// jsonFields maps the JSON names of a struct's fields (embedded structs
// flattened) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					out[k] = v
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func jsonError(err error) error {
	var de *domain.Error
	if errors.As(err, &de) {
		return de
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		field := typeErr.Field
		if field == "" {
			return domain.Invalid("", "the request body has a value of the wrong type")
		}
		return domain.Invalid(field, "%s must be %s, not %s", field, describeType(typeErr.Type.Kind().String()), typeErr.Value)
	}
	var syntaxErr *json.SyntaxError
	if errors.As(err, &syntaxErr) {
		return domain.Invalid("", "the request body is not valid JSON (at byte %d)", syntaxErr.Offset)
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		field, _ := strconv.Unquote(f)
		return domain.Invalid(field, "unknown field %s", f)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return domain.Invalid("", "the request body is not valid JSON (it ends early)")
	}
	return domain.Invalid("", "the request body is not valid JSON")
}

func describeType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "int", "int64", "int32", "uint", "uint64":
		return "an integer"
	case "float64":
		return "a number"
	case "bool":
		return "a boolean"
	case "map", "struct":
		return "an object"
	case "slice", "array":
		return "an array"
	}
	return "of another type"
}

// bind reads and strictly decodes the body into v.
func bind(c echo.Context, v any) ([]byte, error) {
	body, err := readBody(c)
	if err != nil {
		return nil, err
	}
	return body, decodeStrict(body, v)
}

// requestHash is the SHA-256 of the body in canonical form (keys sorted,
// white space removed, the idempotency_key field left out: it may come in
// the header instead), so that key order and spacing do not matter.
func requestHash(body []byte) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	canonical := body
	if err := dec.Decode(&v); err == nil {
		if m, ok := v.(map[string]any); ok {
			delete(m, "idempotency_key")
		}
		if b, err := json.Marshal(v); err == nil {
			canonical = b
		}
	}
	h := sha256.Sum256(canonical)
	return hex.EncodeToString(h[:])
}

// Pagination limits of API.md §1.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// page reads limit and cursor from the query string.
func page(c echo.Context) (queries.Page, error) {
	p := queries.Page{Limit: DefaultPageSize}
	if s := c.QueryParam("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxPageSize {
			return p, domain.Invalid("limit", "limit must be an integer from 1 to %d", MaxPageSize)
		}
		p.Limit = n
	}
	if s := c.QueryParam("cursor"); s != "" {
		after, err := queries.DecodeCursor(s)
		if err != nil {
			return p, err
		}
		p.After = after
	}
	return p, nil
}

// pathID reads an id path parameter; a malformed id cannot exist: 404.
func pathID(c echo.Context, name, prefix, kind string) (string, error) {
	id := c.Param(name)
	if !domain.HasPrefix(id, prefix) {
		return "", domain.NotFound(kind, truncate(id, 80))
	}
	return id, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s…", s[:n])
}

// metadataQuery reads a list's metadata filter (API.md §12): every
// metadata[key]=value parameter, all of which must match. A key given
// twice, or a bare metadata parameter, is 400.
func metadataQuery(c echo.Context) (map[string]string, error) {
	var m map[string]string
	for name, values := range c.QueryParams() {
		if name == "metadata" {
			return nil, domain.Invalid("metadata", "filter on metadata with metadata[key]=value")
		}
		key, ok := strings.CutPrefix(name, "metadata[")
		if !ok {
			continue
		}
		key, ok = strings.CutSuffix(key, "]")
		if !ok || len(values) != 1 {
			return nil, domain.Invalid("metadata", "filter on metadata with metadata[key]=value, each key once")
		}
		for _, s := range []string{key, values[0]} {
			if !utf8.ValidString(s) || strings.ContainsRune(s, 0) { // jsonb refuses both
				return nil, domain.Invalid("metadata", "metadata filters are UTF-8 text without NUL")
			}
		}
		if m == nil {
			m = map[string]string{}
		}
		m[key] = values[0]
	}
	return m, domain.ValidateMetadata("metadata", m)
}
