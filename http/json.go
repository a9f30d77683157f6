package http

import (
	"encoding/json"
	"fmt"

	"github.com/labstack/echo/v4"
)

// jsonSerializer writes JSON without HTML escaping: API bodies are data,
// not markup, and "<key>" reads better than "\u003ckey\u003e".
type jsonSerializer struct{}

func (jsonSerializer) Serialize(c echo.Context, v any, indent string) error {
	enc := json.NewEncoder(c.Response())
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	return enc.Encode(v)
}

func (jsonSerializer) Deserialize(c echo.Context, v any) error {
	return fmt.Errorf("use bind: request bodies are decoded strictly")
}
