package projections

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/opentreasury/treasury/projections/queries"
)

// The public views, filled with random values many times: the encoder
// writes exactly what the rewrite of encoding/json's output writes (whose
// bytes TestJSONBTextIsWhatPostgreSQLPrints checks against PostgreSQL). A
// field added to a view is covered without touching this test.
func TestJSONBEncoderMatchesTheRewrite(t *testing.T) {
	views := []any{queries.PaymentView{}, queries.KYBView{}, queries.VirtualAccountView{},
		queries.LedgerEntryView{}, queries.InboundTransferView{}, queries.TransactionView{},
		queries.JournalEntryView{}, queries.PlatformView{}, queries.WebhookView{}}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, view := range views {
		typ := reflect.TypeOf(view)
		for i := range 300 {
			v := reflect.New(typ).Elem()
			fillRandom(rng, v, 0)
			value := eventData{Object: v.Interface()}
			assertSameAsRewrite(t, fmt.Sprintf("%s #%d", typ.Name(), i), value)
		}
	}
}

// Values where encoding/json has rules of its own: the encoder must come
// out the same, or fail the same way.
func TestJSONBEncoderFollowsEncodingJSONRules(t *testing.T) {
	type named string
	type inner struct {
		B string `json:"b"`
	}
	type embedded struct {
		inner
		A string `json:"a"`
	}
	type tagged struct {
		Quoted   int64             `json:"quoted,string"`
		Skipped  string            `json:"-"`
		Dash     string            `json:"-,"`
		NoTag    string            // the Go name
		BadTag   string            `json:"a\"b"`
		Unicode  string            `json:"ключ"`
		private  string            //nolint:unused // unexported: never written
		Empty    string            `json:"empty,omitempty"`
		EmptyMap map[string]string `json:"empty_map,omitempty"`
		EmptyPtr *string           `json:"empty_ptr,omitempty"`
		ZeroInt  int               `json:"zero_int,omitempty"`
		ZeroF    float64           `json:"zero_f,omitempty"`
		False    bool              `json:"false,omitempty"`
		NilIface any               `json:"nil_iface,omitempty"`
		Struct   inner             `json:"struct,omitempty"`
	}
	type conflict struct { // two fields named X: encoding/json writes neither
		X string
		Y string `json:"X"`
	}
	s := "s"
	cases := []any{
		nil,
		tagged{Quoted: 42, Skipped: "no", Dash: "yes", NoTag: "n", BadTag: "bad", Unicode: "u", private: "p"},
		tagged{Empty: "e", EmptyMap: map[string]string{"k": "v"}, EmptyPtr: &s, ZeroInt: 1, ZeroF: 0.5, False: true, NilIface: 0},
		embedded{inner{"inner"}, "outer"},
		conflict{"1", "2"},
		map[named]string{"b": "1", "aa": "2"},
		map[string]named{"b": "1", "aa": "2"},
		map[int]string{10: "a", 9: "b"},
		[]byte("bytes"),
		[2]any{json.Number("12"), json.Number("1e3")},
		[]any{1.5, float32(2.25), uint8(7), int8(-3), true, nil, []string(nil), map[string]int(nil)},
		map[string]any{"\xff": 1, "\xfe": 2},
		"bad \xff utf-8 \xc3",
		&pointerMarshaler{v: "ptr"},
		pointerMarshaler{v: "value"},
		[]pointerMarshaler{{v: "addressable"}},
		struct{ P pointerMarshaler }{pointerMarshaler{v: "field"}},
		&struct{ P pointerMarshaler }{pointerMarshaler{v: "field via pointer"}},
		map[string]pointerMarshaler{"m": {v: "map value"}},
		textOnly{"text"},
		&textOnly{"text ptr"},
		spacedMarshaler{},
		queries.NewTime(time.Date(2026, 11, 27, 7, 0, 0, 123456789, time.FixedZone("x", 3600))),
		queries.NewTimePtr(nil),
		failingMarshaler{},
		map[string]any{"f": func() {}},
		make(chan int),
	}
	for i, v := range cases {
		assertSameAsRewrite(t, fmt.Sprintf("case %d", i), v)
	}
}

type pointerMarshaler struct{ v string }

func (p *pointerMarshaler) MarshalJSON() ([]byte, error) { return json.Marshal("marshaled " + p.v) }

type textOnly struct{ v string }

func (t textOnly) MarshalText() ([]byte, error) { return []byte("text <" + t.v + ">"), nil }

type spacedMarshaler struct{}

func (spacedMarshaler) MarshalJSON() ([]byte, error) {
	return []byte(` { "b" : 1 , "a" : [ 1 , 2 ] } `), nil
}

type failingMarshaler struct{}

func (failingMarshaler) MarshalJSON() ([]byte, error) { return nil, errors.New("no") }

func assertSameAsRewrite(t *testing.T, name string, v any) {
	t.Helper()
	want, wantErr := jsonbRewrite(v)
	got, err := jsonbText(v)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%s: error %v, the rewrite's %v", name, err, wantErr)
	}
	if err == nil && got != want {
		t.Fatalf("%s:\n got  %s\n want %s", name, got, want)
	}
}

var randomStrings = []string{"", "a", "pay_01JABCDEF", "é 漢字 😀", "quote \" back \\ slash", "new\nline\ttab\x01\x1f",
	"<b>&amp;</b>", "\u2028\u2029", "bad \xff utf-8", strings.Repeat("long ", 50)}

// fillRandom gives v random contents: strings from randomStrings, nil or
// set pointers, maps and slices, numbers of every sign.
func fillRandom(rng *rand.Rand, v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(randomStrings[rng.IntN(len(randomStrings))])
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(rng.Int64N(1<<40) - 1<<39)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(rng.Uint64N(1 << 40))
	case reflect.Pointer:
		if rng.IntN(3) > 0 && depth < 4 {
			p := reflect.New(v.Type().Elem())
			fillRandom(rng, p.Elem(), depth+1)
			v.Set(p)
		}
	case reflect.Map:
		if rng.IntN(4) == 0 {
			return // nil
		}
		m := reflect.MakeMap(v.Type())
		for range rng.IntN(4) {
			k := reflect.New(v.Type().Key()).Elem()
			e := reflect.New(v.Type().Elem()).Elem()
			fillRandom(rng, k, depth+1)
			fillRandom(rng, e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Slice:
		if rng.IntN(4) == 0 {
			return // nil
		}
		s := reflect.MakeSlice(v.Type(), rng.IntN(3), 3)
		for i := range s.Len() {
			fillRandom(rng, s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Unix(rng.Int64N(4e9), rng.Int64N(1e9))))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillRandom(rng, v.Field(i), depth+1)
			}
		}
	case reflect.Interface:
		if rng.IntN(2) == 0 && v.NumMethod() == 0 {
			v.Set(reflect.ValueOf(randomStrings[rng.IntN(len(randomStrings))]))
		}
	}
}
