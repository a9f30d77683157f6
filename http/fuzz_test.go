package http

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/booktransfer"
	"github.com/opentreasury/treasury/domain/inbound"
	"github.com/opentreasury/treasury/domain/kyb"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/domain/platform"
)

// bodyRoute is what a route does with its body before any command runs:
// the type its handler binds into, then (for some) the pure checks the
// handler or the domain run on the decoded value, none of which touches
// the database. valid is a body the route accepts.
type bodyRoute struct {
	decodeInto func() any
	then       func(c echo.Context, v any, body []byte) error
	valid      string
}

// empty is the body of the routes that take none: only {} (or nothing).
var empty = bodyRoute{decodeInto: func() any { return &struct{}{} }, valid: `{}`}

// bodyRoutes lists every route that reads a body. TestBodyRoutesMatchRouter
// checks it against the router, so a new POST or PATCH route fails until
// it is listed here (and so fuzzed).
var bodyRoutes = map[string]bodyRoute{
	"POST /v1/platforms": {
		decodeInto: func() any { return &createPlatformRequest{} },
		then: func(c echo.Context, v any, body []byte) error {
			if err := checkedIdempotency(c, body, ""); err != nil {
				return err
			}
			return domain.ValidateMetadata("metadata", v.(*createPlatformRequest).Metadata)
		},
		valid: `{"name":"Acme Payroll","contact_email":"ops@example.com","metadata":{"tier":"gold"}}`,
	},
	"PATCH /v1/operator/platforms/:id": {
		decodeInto: func() any { return &platform.ConfigPatch{} },
		then: func(_ echo.Context, v any, _ []byte) error {
			_, err := platform.DefaultConfig().Apply(*v.(*platform.ConfigPatch))
			return err
		},
		valid: `{"revenue_share_rate":"0.30","interest_rate":"0.045","fee_schedule":{"rtp":40},"rate_limit":{"per_second":10,"burst":20}}`,
	},
	"POST /v1/operator/platforms/:id/approve":     empty,
	"POST /v1/operator/platforms/:id/enable-live": empty,
	"POST /v1/operator/rails/ach/files":           empty,
	"POST /v1/operator/platforms/:id/fund": {
		decodeInto: func() any { return &fundPlatformRequest{} },
		valid:      `{"amount":500,"environment":"sandbox","description":"Wire 42"}`,
	},
	"POST /v1/operator/kyb/:id/decision": {
		decodeInto: func() any { return &kybDecisionRequest{} },
		then:       decideKYB,
		valid:      `{"outcome":"rejected","reasons":[{"code":"ein_mismatch","message":"EIN does not match","field":"business.ein"}]}`,
	},
	"PATCH /v1/platform/settings": {
		decodeInto: func() any { return &platform.SettingsPatch{} },
		then: func(_ echo.Context, v any, _ []byte) error {
			_, err := platform.DefaultSettings(domain.Sandbox).Apply(domain.Sandbox, *v.(*platform.SettingsPatch))
			return err
		},
		valid: `{"webhook_retry_policy":{"max_attempts":5},"payment_approval_threshold":null,"daily_payment_limit":500000,"sandbox":{"auto_settle":false}}`,
	},
	"POST /v1/platform/api-keys": {
		decodeInto: func() any { return &createAPIKeyRequest{} },
		valid:      `{"name":"ci","environment":"sandbox"}`,
	},
	"POST /v1/platform/api-keys/:id/roll": {
		decodeInto: func() any { return &rollAPIKeyRequest{} },
		valid:      `{"grace_seconds":3600}`,
	},
	"POST /v1/virtual-accounts": {
		decodeInto: func() any { return &openAccountRequest{} },
		then: func(_ echo.Context, v any, _ []byte) error {
			return domain.ValidateMetadata("metadata", v.(*openAccountRequest).Metadata)
		},
		valid: `{"platform_id":"plt_01J0000000000000000000000","entity_ref":"emp_1","type":"checking","metadata":{"a":"b"}}`,
	},
	"POST /v1/virtual-accounts/:id/freeze":   empty,
	"POST /v1/virtual-accounts/:id/unfreeze": empty,
	"POST /v1/virtual-accounts/:id/close":    empty,
	"POST /v1/ledger/entries": {
		decodeInto: func() any { return &journalEntryRequest{} },
		then: func(c echo.Context, v any, body []byte) error {
			return checkedIdempotency(c, body, v.(*journalEntryRequest).IdempotencyKey)
		},
		valid: `{"type":"adjustment","description":"fix","lines":[{"virtual_account_id":"va_1","direction":"credit","amount":100},{"ledger_account_id":"la_1","direction":"debit","amount":100}],"effective_at":"2024-01-02T03:04:05Z","idempotency_key":"k1","metadata":{}}`,
	},
	"POST /v1/payments": {
		decodeInto: func() any { return &paymentRequest{} },
		then: func(c echo.Context, v any, body []byte) error {
			req := v.(*paymentRequest)
			if err := checkedIdempotency(c, body, req.IdempotencyKey); err != nil {
				return err
			}
			_, err := payment.Request{VirtualAccountID: req.VirtualAccountID, Amount: req.Amount, Rail: req.Rail,
				Destination: req.Destination, Description: req.Description, Metadata: req.Metadata}.Validate()
			return err
		},
		valid: `{"virtual_account_id":"va_1","amount":1500,"rail":"rtp","destination":{"account_number":"123456789","routing_number":"021000021","name":"Jane Doe"},"idempotency_key":"pay-1","description":"rent","metadata":{"k":"v"}}`,
	},
	"POST /v1/payments/:id/cancel":  empty,
	"POST /v1/payments/:id/approve": empty,
	"POST /v1/payments/:id/deny": {
		decodeInto: func() any { return &denyRequest{} },
		valid:      `{"reason":"duplicate"}`,
	},
	"POST /v1/book-transfers": {
		decodeInto: func() any { return &bookTransferRequest{} },
		then: func(c echo.Context, v any, body []byte) error {
			req := v.(*bookTransferRequest)
			if err := checkedIdempotency(c, body, req.IdempotencyKey); err != nil {
				return err
			}
			return booktransfer.Request{FromVirtualAccountID: req.FromVirtualAccountID, ToVirtualAccountID: req.ToVirtualAccountID,
				Amount: req.Amount, Description: req.Description, Metadata: req.Metadata}.Validate()
		},
		valid: `{"from_virtual_account_id":"va_01jx00000000000000000000aa","to_virtual_account_id":"va_01jx00000000000000000000bb","amount":1500,"idempotency_key":"bt-1","description":"rent","metadata":{"k":"v"}}`,
	},
	"POST /v1/counterparties": {
		decodeInto: func() any { return &counterpartyRequest{} },
		then: func(_ echo.Context, v any, _ []byte) error {
			return v.(*counterpartyRequest).request().Validate()
		},
		valid: `{"name":"Initech LLC","account_number":"987654321","routing_number":"021000021","account_type":"checking","metadata":{"k":"v"}}`,
	},
	"POST /v1/counterparties/:id/verify": {
		decodeInto: func() any { return &verifyRequest{} },
		valid:      `{"method":"prenote"}`,
	},
	"POST /v1/kyb": {
		decodeInto: func() any { return &kybRequest{} },
		then: func(_ echo.Context, v any, _ []byte) error {
			req := v.(*kybRequest)
			return kyb.Submission{Business: req.Business, BeneficialOwner: req.BeneficialOwners}.Validate(time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC))
		},
		valid: `{"virtual_account_id":"va_1","business":{"legal_name":"Acme LLC","ein":"12-3456789","entity_type":"llc","formation_date":"2015-03-01","formation_state":"DE",` +
			`"address":{"line1":"1 Main St","city":"Wilmington","state":"DE","postal_code":"19801","country":"US"}},` +
			`"beneficial_owners":[{"first_name":"Jane","last_name":"Doe","date_of_birth":"1980-01-01","ssn_last4":"1234","ownership_percentage":"60","is_control_person":true,` +
			`"address":{"line1":"2 Main St","city":"Wilmington","state":"DE","postal_code":"19801","country":"US"}}]}`,
	},
	"POST /v1/webhooks": {
		decodeInto: func() any { return &webhookRequest{} },
		valid:      `{"url":"https://example.com/hook","events":["payment.completed"],"description":"ops","retry_policy":{"max_attempts":3}}`,
	},
	"PATCH /v1/webhooks/:id": {
		decodeInto: func() any { return &webhookRequest{} },
		valid:      `{"status":"disabled","description":null}`,
	},
	"POST /v1/webhooks/:id/rotate-secret": empty,
	"POST /v1/webhooks/:id/test":          empty,
	"POST /v1/webhooks/:id/replay": {
		decodeInto: func() any { return &webhookReplayRequest{} },
		then: func(_ echo.Context, v any, _ []byte) error {
			_, err := v.(*webhookReplayRequest).request()
			return err
		},
		valid: `{"created_after":"2026-03-02T15:00:00Z","created_before":"2026-03-02T16:00:00Z","types":["payment.completed"]}`,
	},
	"POST /v1/webhooks/:id/deliveries/:delivery_id/retry": empty,
	"POST /v1/simulations/payments/:id/complete":          empty,
	"POST /v1/simulations/payments/:id/release":           empty,
	"POST /v1/simulations/kyb/:id/decision": {
		decodeInto: func() any { return &kybDecisionRequest{} },
		then:       decideKYB,
		valid:      `{"outcome":"approved"}`,
	},
	"POST /v1/simulations/payments/:id/fail": {
		decodeInto: func() any { return &failRequest{} },
		valid:      `{"network_code":"R02"}`,
	},
	"POST /v1/simulations/inbound-transfers": {
		decodeInto: func() any { return &inboundTransferRequest{} },
		then: func(_ echo.Context, v any, _ []byte) error {
			req := v.(*inboundTransferRequest)
			_, err := inbound.Validate(req.Amount, req.Rail, req.Originator, req.Description)
			return err
		},
		valid: `{"virtual_account_id":"va_1","amount":10000,"rail":"ach_standard","originator":{"name":"Globex","account_number":"123456789","routing_number":"021000021"},"description":"payroll"}`,
	},
}

// checkedIdempotency runs the handlers' idempotency and reports (as an
// internal error, which the fuzzer flags) a key PostgreSQL would refuse.
func checkedIdempotency(c echo.Context, body []byte, bodyKey string) error {
	idem, err := idempotency(c, "plt_x", "sandbox", "fuzz", body, bodyKey)
	if err != nil || idem == nil {
		return err
	}
	if !utf8.ValidString(idem.Key) || strings.ContainsRune(idem.Key, 0) {
		return domain.Errorf(domain.CodeInternal, "idempotency key %q accepted", idem.Key)
	}
	return nil
}

func decideKYB(_ echo.Context, v any, _ []byte) error {
	_, err := v.(*kybDecisionRequest).decide("kyb_1")
	return err
}

// fuzzServer is a Server without a database: errorBody needs only its log.
func fuzzServer() *Server {
	return New(app.New(nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil))), Config{})
}

// bodyMethods are the methods whose routes read a body.
var bodyMethods = []string{http.MethodPost, http.MethodPatch}

// TestBodyRoutesMatchRouter: bodyRoutes lists exactly the router's POST and
// PATCH routes.
func TestBodyRoutesMatchRouter(t *testing.T) {
	var missing, extra []string
	seen := map[string]bool{}
	for _, r := range fuzzServer().Routes() {
		if !slices.Contains(bodyMethods, r.Method) {
			continue
		}
		name := r.Method + " " + r.Path
		seen[name] = true
		if _, ok := bodyRoutes[name]; !ok {
			missing = append(missing, name)
		}
	}
	for name := range bodyRoutes {
		if !seen[name] {
			extra = append(extra, name)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Fatalf("bodyRoutes is out of date with the router:\n  routes with no fuzz entry: %v\n  entries with no route: %v", missing, extra)
	}
}

// TestBodyRoutesValidBodies: each route's valid body decodes and passes its
// checks, so the fuzzer starts from bodies that reach past the decoder.
func TestBodyRoutesValidBodies(t *testing.T) {
	s := fuzzServer()
	for name, r := range bodyRoutes {
		if err := decodeBody(s, r, []byte(r.valid)); err != nil {
			t.Errorf("%s: valid body %s refused: %v", name, r.valid, err)
		}
	}
}

// decodeBody runs body through what a handler does with it: the body
// limit of limitBody, bind, then the route's pure checks.
func decodeBody(s *Server, r bodyRoute, body []byte) error {
	_, err := decodeBodyIn(s, r, body, "")
	return err
}

// decodeBodyIn is decodeBody with an Idempotency-Key header ("" for none),
// returning the request's context for errorBody.
func decodeBodyIn(s *Server, r bodyRoute, body []byte, idemKey string) (echo.Context, error) {
	req := httptest.NewRequest(http.MethodPost, "/v1/fuzz", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	rec := httptest.NewRecorder()
	c := s.echo.NewContext(req, rec)
	req.Body = http.MaxBytesReader(rec, req.Body, MaxBodyBytes)
	v := r.decodeInto()
	raw, err := bind(c, v)
	if err != nil {
		return c, err
	}
	if !bytes.Equal(raw, body) {
		return c, domain.Errorf(domain.CodeInternal, "bind returned other bytes than the body")
	}
	if err := acceptedStrings(reflect.ValueOf(v), ""); err != nil {
		return c, err
	}
	if r.then != nil {
		return c, r.then(c, v, raw)
	}
	return c, nil
}

// acceptedStrings reports (as an internal error, which the fuzzer flags) a
// decoded string PostgreSQL would refuse: invalid UTF-8 or a NUL.
func acceptedStrings(v reflect.Value, path string) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return acceptedStrings(v.Elem(), path)
		}
	case reflect.String:
		if s := v.String(); !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
			return domain.Errorf(domain.CodeInternal, "decoded %s holds %q", path, s)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				if err := acceptedStrings(v.Field(i), path+"."+v.Type().Field(i).Name); err != nil {
					return err
				}
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			if err := acceptedStrings(v.Index(i), path+"[]"); err != nil {
				return err
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			if err := acceptedStrings(iter.Key(), path+"{key}"); err != nil {
				return err
			}
			if err := acceptedStrings(iter.Value(), path+"{}"); err != nil {
				return err
			}
		}
	}
	return nil
}

// FuzzDecodeBody feeds every body, with an Idempotency-Key header or
// none, to every route that reads one: no panic, and either success or an
// error that the error table maps to a 4xx with a code and a message
// (never a 500).
func FuzzDecodeBody(f *testing.F) {
	for _, r := range bodyRoutes {
		f.Add([]byte(r.valid), "")
	}
	for _, seed := range generatedSeeds() {
		f.Add(seed, "")
	}
	s := fuzzServer()
	f.Fuzz(func(t *testing.T, body []byte, idemKey string) {
		idemKey = strings.Trim(idemKey, " \t") // as net/http delivers it
		if !headerValue(idemKey) {
			return // net/http refuses the request before any handler
		}
		checkEveryRoute(t, s, body, idemKey)
	})
}

// headerValue reports whether net/http lets v through as a header value:
// no control characters but tab (bytes above 0x7f pass).
func headerValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; (b < ' ' && b != '\t') || b == 0x7f {
			return false
		}
	}
	return true
}

// checkEveryRoute is the fuzz property, for one body on every route.
func checkEveryRoute(t *testing.T, s *Server, body []byte, idemKey string) {
	t.Helper()
	for name, r := range bodyRoutes {
		c, err := decodeBodyIn(s, r, body, idemKey)
		if err == nil {
			continue
		}
		eb, status := s.errorBody(err, c)
		if status < 400 || status >= 500 || eb.Code == "" || eb.Message == "" || statusOf[eb.Code] != status {
			t.Fatalf("%s: body %.200q, Idempotency-Key %q: error %v answers %d %+v", name, body, idemKey, err, status, eb)
		}
	}
}

// TestDecodeBodyOverLimit: bodies past 1 MiB (kept out of the fuzz corpus,
// where every mutation of them would be slow) are refused with 413.
func TestDecodeBodyOverLimit(t *testing.T) {
	s := fuzzServer()
	for _, body := range [][]byte{
		[]byte(strings.Repeat(" ", MaxBodyBytes) + "{}"),
		[]byte(`{"name":"` + strings.Repeat("a", MaxBodyBytes) + `"}`),
	} {
		checkEveryRoute(t, s, body, "")
		c, err := decodeBodyIn(s, bodyRoutes["POST /v1/platforms"], body, "")
		if _, status := s.errorBody(err, c); status != http.StatusRequestEntityTooLarge {
			t.Fatalf("a %d-byte body: %v, status %d, want 413", len(body), err, status)
		}
	}
}

// generatedSeeds are the nasty bodies too big to keep as corpus files.
func generatedSeeds() [][]byte {
	deep := func(open, close string, n int) []byte {
		return []byte(strings.Repeat(open, n) + strings.Repeat(close, n))
	}
	long := strings.Repeat("é", 20_000) // 40 KB of 2-byte runes
	return [][]byte{
		deep("[", "]", 10_000),
		deep(`{"a":`, "}", 10_000),
		deep(`{"a":`, "}", 10_001),
		[]byte(`{"metadata":` + string(deep("[", "]", 10_000)) + `}`),
		[]byte(`{"beneficial_owners":` + string(deep("[", "]", 9_999)) + `}`),
		[]byte(`{"name":"` + long + `","entity_ref":"` + long[:2000] + `"}`),
		[]byte(`{"metadata":{` + strings.Repeat(`"k":"v",`, 2_000) + `"k":"v"}}`),
		[]byte(`{"amount":1` + strings.Repeat("0", 10_000) + `}`),
		[]byte(`{"amount":0.` + strings.Repeat("0", 10_000) + `1}`),
		[]byte(`{"beneficial_owners":[{"ownership_percentage":"1e-` + strings.Repeat("9", 50) + `"}]}`),
		[]byte(`{"beneficial_owners":[{"ownership_percentage":1e-99999}]}`),
		[]byte(`{"reasons":[` + strings.Repeat(`{"code":"a"},`, 1_000) + `{"code":"a"}]}`),
		bytes.Repeat([]byte{0xff}, 1000),
	}
}
