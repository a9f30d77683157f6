package http

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/projections"
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
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return domain.Invalid("", "the request body has data after the JSON object")
	}
	return nil
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
// white space removed), so that key order and spacing do not matter.
func requestHash(body []byte) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	canonical := body
	if err := dec.Decode(&v); err == nil {
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
func page(c echo.Context) (projections.Page, error) {
	p := projections.Page{Limit: DefaultPageSize}
	if s := c.QueryParam("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxPageSize {
			return p, domain.Invalid("limit", "limit must be an integer from 1 to %d", MaxPageSize)
		}
		p.Limit = n
	}
	if s := c.QueryParam("cursor"); s != "" {
		after, err := projections.DecodeCursor(s)
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
