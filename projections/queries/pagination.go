package queries

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/opentreasury/treasury/domain"
)

// Page is a request for one page of a list: items strictly after After
// (in the list's order), at most Limit of them.
type Page struct {
	After string
	Limit int
}

// List is the API's list envelope.
type List[T any] struct {
	Object     string  `json:"object"`
	Data       []T     `json:"data"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

// NewList trims the one extra row a query fetched to learn has_more.
func NewList[T any](items []T, page Page, key func(T) string) List[T] {
	l := List[T]{Object: "list", Data: items}
	if l.Data == nil {
		l.Data = []T{}
	}
	if len(items) > page.Limit {
		l.Data = items[:page.Limit]
		l.HasMore = true
		c := EncodeCursor(key(l.Data[len(l.Data)-1]))
		l.NextCursor = &c
	}
	return l
}

type cursor struct {
	After string `json:"a"`
}

// EncodeCursor makes an opaque cursor from a sort key.
func EncodeCursor(after string) string {
	b, _ := json.Marshal(cursor{After: after})
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor reads a cursor made by EncodeCursor.
func DecodeCursor(s string) (string, error) {
	bad := domain.Invalid("cursor", "cursor is not one this API returned")
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) > 512 {
		return "", bad
	}
	var c cursor
	if err := json.Unmarshal(b, &c); err != nil || c.After == "" || strings.ContainsAny(c.After, "\x00") {
		return "", bad
	}
	return c.After, nil
}
