package projections

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/opentreasury/treasury/eventstore/pgtest"
)

// TestJSONBTextIsWhatPostgreSQLPrints: jsonbText writes what PostgreSQL
// prints for the same JSON as jsonb, for keys that sort by length before
// bytes, nested values, empty ones, and strings that need escaping (or,
// unlike encoding/json, do not: <, >, &, non-ASCII, U+2028).
func TestJSONBTextIsWhatPostgreSQLPrints(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := pgtest.Pool(t)
	type inner struct {
		Zeta  string            `json:"zeta"`
		A     int64             `json:"a"`
		Empty map[string]string `json:"empty"`
		None  []string          `json:"none"`
		Nil   *string           `json:"nil"`
	}
	cases := []any{
		map[string]any{"object": map[string]any{"id": "pay_1", "amount": int64(-150), "ok": true, "bb": false, "b": nil}},
		inner{Zeta: "z", A: 9007199254740993, Empty: map[string]string{}, None: []string{}},
		[]any{"a", int64(0), []any{}, map[string]any{}, json.Number("123456789012345678901234567890"), json.Number("-1.50")},
		map[string]string{"memo": "a \"quoted\" \\ back\\slash\nnew\tline\rret\bbs\fff \x01\x1f <b>&amp;</b> é 漢字 \u2028 \u2029 emoji 😀"},
		map[string]string{"é": "1", "z": "2", "aa": "3", "<": "4", "\u2028": "5"},
		map[string]string{strings.Repeat("k", 300): strings.Repeat("v", 5000)},
		map[string]string{"\xff": "first", "\xc3": "second", "a": "b"}, // both keys become U+FFFD
		[]any{json.Number("-0.5"), json.Number("-10.25")},
	}
	for i, v := range cases {
		got, err := jsonbText(v)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		raw, _ := json.Marshal(v)
		var want string
		if err := pool.QueryRow(ctx, `SELECT $1::jsonb::text`, string(raw)).Scan(&want); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if got != want {
			t.Errorf("case %d:\n got  %s\n want %s", i, got, want)
		}
	}
	for _, n := range []any{1.5e300, json.Number("-0"), json.Number("1e2")} {
		if _, err := jsonbText(map[string]any{"x": n}); err == nil {
			t.Errorf("%v was written, though jsonb prints it another way", n)
		}
	}
}
