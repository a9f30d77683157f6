package http

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"
)

//go:embed openapi.json
var openAPIDoc []byte

// OpenAPIDocument is the API's OpenAPI 3.1 description.
func OpenAPIDocument() []byte { return openAPIDoc }

// GET /v1/openapi.json
func (s *Server) openAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/json", openAPIDoc)
}
