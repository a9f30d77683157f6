package domain_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/opentreasury/treasury/domain"
)

// ---- errors -----------------------------------------------------------------

func TestErrors(t *testing.T) {
	inv := domain.Invalid("amount", "must be %d to %d", 1, 5)
	if inv.Code != domain.CodeInvalidRequest || inv.Param != "amount" || inv.Message != "must be 1 to 5" {
		t.Errorf("Invalid = %+v", inv)
	}
	if got := inv.Error(); got != "invalid_request: must be 1 to 5 (amount)" {
		t.Errorf("Error() = %q", got)
	}
	nf := domain.NotFound("payment", "pay_1")
	if nf.Code != domain.CodeNotFound || nf.Param != "" || nf.Error() != `not_found: no such payment: "pay_1"` {
		t.Errorf("NotFound = %+v, %q", nf, nf.Error())
	}
	st := domain.Errorf(domain.CodeInvalidState, "key %s is %s", "k", "gone")
	if st.Code != domain.CodeInvalidState || st.Message != "key k is gone" || st.Param != "" {
		t.Errorf("Errorf = %+v", st)
	}

	wrapped := fmt.Errorf("deciding: %w", inv)
	cases := []struct {
		name string
		err  error
		code domain.Code
		is   error
		want bool
	}{
		{"same code", inv, domain.CodeInvalidRequest, &domain.Error{Code: domain.CodeInvalidRequest}, true},
		{"other param, same code", inv, domain.CodeInvalidRequest, domain.Invalid("other", "x"), true},
		{"other code", inv, domain.CodeInvalidRequest, &domain.Error{Code: domain.CodeNotFound}, false},
		{"wrapped", wrapped, domain.CodeInvalidRequest, &domain.Error{Code: domain.CodeInvalidRequest}, true},
		{"wrapped target", inv, domain.CodeInvalidRequest, fmt.Errorf("w: %w", &domain.Error{Code: domain.CodeInvalidRequest}), true},
		{"plain error", errors.New("boom"), "", &domain.Error{Code: domain.CodeInvalidRequest}, false},
		{"nil", nil, "", &domain.Error{Code: domain.CodeInvalidRequest}, false},
		{"against a plain error", nf, domain.CodeNotFound, errors.New("not_found"), false},
	}
	for _, c := range cases {
		if got := errors.Is(c.err, c.is); got != c.want {
			t.Errorf("%s: errors.Is = %v, want %v", c.name, got, c.want)
		}
		if got := domain.CodeOf(c.err); got != c.code {
			t.Errorf("%s: CodeOf = %q, want %q", c.name, got, c.code)
		}
	}
}

// The codes are part of the public API (API.md §2): they must not drift.
func TestErrorCodes(t *testing.T) {
	codes := []domain.Code{
		domain.CodeInvalidRequest, domain.CodeUnbalancedEntry, domain.CodeAmountExceedsRailLimit,
		domain.CodeUnauthorized, domain.CodeForbidden, domain.CodeNotFound, domain.CodeIdempotencyConflict,
		domain.CodeIdempotencyInProgress, domain.CodePaymentNotCancelable, domain.CodeKYBInProgress,
		domain.CodeKYBAlreadyApproved, domain.CodeInvalidState, domain.CodeRequestTooLarge,
		domain.CodeKYBNotApproved, domain.CodeComplianceRejected, domain.CodeInsufficientFunds,
		domain.CodeAccountNotActive, domain.CodeLimitExceeded, domain.CodeLiveNotEnabled,
		domain.CodeRateLimited, domain.CodeInternal, domain.CodeUnavailable, domain.CodeReplayTooLarge,
	}
	want := "invalid_request unbalanced_entry amount_exceeds_rail_limit unauthorized forbidden not_found " +
		"idempotency_conflict idempotency_in_progress payment_not_cancelable kyb_in_progress " +
		"kyb_already_approved invalid_state request_too_large kyb_not_approved compliance_rejected " +
		"insufficient_funds account_not_active limit_exceeded live_not_enabled rate_limited internal_error unavailable replay_too_large"
	var got []string
	for _, c := range codes {
		got = append(got, string(c))
	}
	if strings.Join(got, " ") != want {
		t.Errorf("codes\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

// ---- Optional ---------------------------------------------------------------

func TestOptional(t *testing.T) {
	type patch struct {
		N domain.Optional[int]               `json:"n"`
		S domain.Optional[string]            `json:"s"`
		M domain.Optional[map[string]string] `json:"m"`
	}
	cases := []struct {
		body string
		want patch
	}{
		{`{}`, patch{}},
		{`{"n":null,"s":null,"m":null}`, patch{N: domain.Optional[int]{Set: true}, S: domain.Optional[string]{Set: true}, M: domain.Optional[map[string]string]{Set: true}}},
		{`{"n":0,"s":""}`, patch{N: domain.Some(0), S: domain.Some("")}},
		{`{"n":7,"m":{"a":"b"}}`, patch{N: domain.Some(7), M: domain.Some(map[string]string{"a": "b"})}},
	}
	for _, c := range cases {
		var got patch
		if err := json.Unmarshal([]byte(c.body), &got); err != nil {
			t.Errorf("%s: %v", c.body, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.body, got, c.want)
		}
	}
	for _, bad := range []string{`{"n":"7"}`, `{"n":1.5}`, `{"s":3}`, `{"m":[]}`} {
		var p patch
		if err := json.Unmarshal([]byte(bad), &p); err == nil {
			t.Errorf("%s: decoded %+v, want an error", bad, p)
		}
	}
	if s := domain.Some(3); !s.Set || s.Value == nil || *s.Value != 3 {
		t.Errorf("Some(3) = %+v", s)
	}
	v := 1
	s := domain.Some(v)
	v = 2
	if *s.Value != 1 {
		t.Errorf("Some keeps a reference to its argument")
	}
}

// ---- metadata ---------------------------------------------------------------

func TestValidateMetadata(t *testing.T) {
	many := func(n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("key%d", i)] = "v"
		}
		return m
	}
	r := strings.Repeat
	cases := []struct {
		name  string
		m     map[string]string
		param string // "" when valid
	}{
		{"nil", nil, ""},
		{"empty", map[string]string{}, ""},
		{"50 keys", many(50), ""},
		{"key of 40 characters, multibyte", map[string]string{r("ü", 40): "v"}, ""},
		{"value of 500 characters, multibyte", map[string]string{"k": r("€", 500)}, ""},
		{"empty value", map[string]string{"k": ""}, ""},
		{"51 keys", many(51), "md"},
		{"empty key", map[string]string{"": "v"}, "md"},
		{"key of 41 characters", map[string]string{r("ü", 41): "v"}, "md." + r("ü", 41)},
		{"value of 501 characters", map[string]string{"k": r("a", 501)}, "md.k"},
	}
	for _, c := range cases {
		err := domain.ValidateMetadata("md", c.m)
		if c.param == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		var de *domain.Error
		if !errors.As(err, &de) || de.Code != domain.CodeInvalidRequest || de.Param != c.param {
			t.Errorf("%s: got %v, want invalid_request on %q", c.name, err, c.param)
		}
	}
	if domain.MaxMetadataKeys != 50 || domain.MaxMetadataKeyLen != 40 || domain.MaxMetadataValueLen != 500 {
		t.Errorf("metadata limits differ from API.md §1")
	}
}

// ---- ids --------------------------------------------------------------------

func TestIDs(t *testing.T) {
	prefixes := []string{
		domain.PrefixPlatform, domain.PrefixAPIKey, domain.PrefixVirtualAccount, domain.PrefixTransaction,
		domain.PrefixPayment, domain.PrefixInbound, domain.PrefixKYB, domain.PrefixLedgerAccount,
		domain.PrefixJournalEntry, domain.PrefixLedgerEntry, domain.PrefixWebhook, domain.PrefixEvent, domain.PrefixDelivery,
	}
	if got := strings.Join(prefixes, " "); got != "plt_ key_ va_ txn_ pay_ itx_ kyb_ la_ je_ le_ wh_ evt_ msg_" {
		t.Errorf("prefixes = %s", got)
	}
	for _, p := range prefixes {
		id := domain.NewID(p)
		if !domain.HasPrefix(id, p) {
			t.Errorf("HasPrefix(%q, %q) = false", id, p)
		}
		if len(id) != len(p)+26 || id != strings.ToLower(id) {
			t.Errorf("NewID(%q) = %q, want the prefix and 26 lower-case characters", p, id)
		}
	}

	// Many ids made at once are distinct and sort in creation order.
	ids := make([]string, 2000)
	for i := range ids {
		ids[i] = domain.NewID(domain.PrefixEvent)
	}
	if !sort.StringsAreSorted(ids) {
		t.Errorf("ids made in sequence do not sort in creation order")
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
	}

	valid := domain.NewID(domain.PrefixPayment)
	cases := []struct {
		id, prefix string
		want       bool
	}{
		{valid, domain.PrefixPayment, true},
		{valid, domain.PrefixPlatform, false},
		{"pay_01arz3ndektsv4rrffq69g5fav", domain.PrefixPayment, true},
		{"pay_", domain.PrefixPayment, false},
		{"pay_01arz3ndektsv4rrffq69g5fa", domain.PrefixPayment, false},   // 25 characters
		{"pay_01arz3ndektsv4rrffq69g5favx", domain.PrefixPayment, false}, // 27 characters
		{"pay_01arz3ndektsv4rrffq69g5fau", domain.PrefixPayment, false},  // u is not Crockford base32
		{"pay_81arz3ndektsv4rrffq69g5fav", domain.PrefixPayment, false},  // overflows 128 bits
		{"01arz3ndektsv4rrffq69g5fav", domain.PrefixPayment, false},
		{"", domain.PrefixPayment, false},
	}
	for _, c := range cases {
		if got := domain.HasPrefix(c.id, c.prefix); got != c.want {
			t.Errorf("HasPrefix(%q, %q) = %v, want %v", c.id, c.prefix, got, c.want)
		}
	}
}

func TestNewIDConcurrent(t *testing.T) {
	const workers, each = 16, 500
	out := make(chan string, workers*each)
	done := make(chan struct{})
	for range workers {
		go func() {
			for range each {
				out <- domain.NewID(domain.PrefixEvent)
			}
			done <- struct{}{}
		}()
	}
	for range workers {
		<-done
	}
	close(out)
	seen := map[string]bool{}
	for id := range out {
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
	}
}

// ---- environment ------------------------------------------------------------

func TestEnvironment(t *testing.T) {
	for _, c := range []struct {
		s    string
		want domain.Environment
		ok   bool
	}{
		{"sandbox", domain.Sandbox, true},
		{"live", domain.Live, true},
		{"Live", domain.Environment{}, false},
		{"", domain.Environment{}, false},
		{"production", domain.Environment{}, false},
	} {
		got, ok := domain.ParseEnvironment(c.s)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseEnvironment(%q) = %v, %v", c.s, got, ok)
		}
	}
	if domain.Sandbox.String() != "sandbox" || domain.Live.String() != "live" || domain.Sandbox == domain.Live {
		t.Errorf("environment names")
	}
	if !(domain.Environment{}).IsZero() || domain.Live.IsZero() {
		t.Errorf("IsZero")
	}

	type doc struct {
		Env  domain.Environment                  `json:"env"`
		ByEn map[domain.Environment]int          `json:"by_env"`
		Ptr  *domain.Environment                 `json:"ptr"`
		Opt  domain.Optional[domain.Environment] `json:"opt"`
	}
	in := doc{Env: domain.Live, ByEn: map[domain.Environment]int{domain.Sandbox: 1, domain.Live: 2}, Ptr: &domain.Sandbox, Opt: domain.Some(domain.Live)}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"env":"live"`) || !strings.Contains(string(b), `"by_env":{"live":2,"sandbox":1}`) {
		t.Errorf("json = %s", b)
	}
	var out doc
	if err := json.Unmarshal([]byte(`{"env":"live","by_env":{"live":2,"sandbox":1},"ptr":"sandbox","opt":"live"}`), &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Errorf("decoded %+v, want %+v", out, in)
	}
	for _, bad := range []string{`{"env":"staging"}`, `{"env":""}`, `{"env":"LIVE"}`, `{"by_env":{"test":1}}`} {
		var d doc
		err := json.Unmarshal([]byte(bad), &d)
		if err == nil {
			t.Errorf("%s: decoded %+v, want an error", bad, d)
			continue
		}
		if domain.CodeOf(err) != domain.CodeInvalidRequest {
			t.Errorf("%s: error %v is not invalid_request", bad, err)
		}
	}
}

// ---- events -----------------------------------------------------------------

type testThing struct {
	ID     string             `json:"id"`
	Env    domain.Environment `json:"env"`
	Amount int64              `json:"amount"`
	At     time.Time          `json:"at"`
	Tags   []string           `json:"tags"`
}

func (testThing) EventType() string { return "domain_test.thing" }

type testOther struct {
	N int `json:"n"`
}

func (testOther) EventType() string { return "domain_test.other" }

func TestDecodeEvent(t *testing.T) {
	domain.RegisterEvent[testThing]()
	domain.RegisterEvent[testOther]()

	in := testThing{ID: "x", Env: domain.Sandbox, Amount: -5, At: time.Date(2025, 1, 2, 3, 4, 5, 6_000_000, time.UTC), Tags: []string{"a"}}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := domain.DecodeEvent(in.EventType(), data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, domain.Event(in)) {
		t.Errorf("round trip: %#v, want %#v", got, in)
	}
	if _, ok := got.(testThing); !ok {
		t.Errorf("decoded a %T, want a value testThing", got)
	}
	if o, err := domain.DecodeEvent("domain_test.other", []byte(`{"n":3}`)); err != nil || o != domain.Event(testOther{N: 3}) {
		t.Errorf("other: %#v, %v", o, err)
	}

	for _, c := range []struct{ typ, data string }{
		{"domain_test.unknown", `{}`},
		{"", `{}`},
		{"domain_test.thing", `not json`},
		{"domain_test.thing", `{"env":"staging"}`},
		{"domain_test.thing", `{"amount":"5"}`},
	} {
		if e, err := domain.DecodeEvent(c.typ, []byte(c.data)); err == nil {
			t.Errorf("DecodeEvent(%q, %s) = %#v, want an error", c.typ, c.data, e)
		}
	}
	// The type name is in the error, so a log line says which event failed.
	if _, err := domain.DecodeEvent("domain_test.thing", []byte(`[`)); err == nil || !strings.Contains(err.Error(), "domain_test.thing") {
		t.Errorf("error %v does not name the event type", err)
	}
}

func TestDecodeEventConcurrent(t *testing.T) {
	domain.RegisterEvent[testOther]()
	errs := make(chan error, 32)
	for i := range 32 {
		go func() {
			if i%4 == 0 {
				domain.RegisterEvent[testOther]()
			}
			e, err := domain.DecodeEvent("domain_test.other", []byte(fmt.Sprintf(`{"n":%d}`, i)))
			if err == nil && e != domain.Event(testOther{N: i}) {
				err = fmt.Errorf("got %#v", e)
			}
			errs <- err
		}()
	}
	for range 32 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestOptionalRefusesUnknownNestedFields(t *testing.T) {
	var v struct {
		Inner domain.Optional[struct {
			A int `json:"a"`
		}] `json:"inner"`
	}
	if err := json.Unmarshal([]byte(`{"inner":{"a":1,"bogus":2}}`), &v); err == nil {
		t.Fatal("an unknown field inside an Optional object was accepted")
	}
	if err := json.Unmarshal([]byte(`{"inner":{"a":1}}`), &v); err != nil || v.Inner.Value.A != 1 {
		t.Fatalf("a known nested field: %v %+v", err, v.Inner)
	}
}

func TestIDFor(t *testing.T) {
	day := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	a := domain.IDFor(domain.PrefixInbound, day, "011000010000001|2026-11-27|123456789012|5000")
	if again := domain.IDFor(domain.PrefixInbound, day, "011000010000001|2026-11-27|123456789012|5000"); again != a {
		t.Errorf("the same key gave %s and %s", a, again)
	}
	if other := domain.IDFor(domain.PrefixInbound, day, "011000010000002|2026-11-27|123456789012|5000"); other == a {
		t.Error("two keys gave one id")
	}
	if !domain.HasPrefix(a, domain.PrefixInbound) {
		t.Errorf("%s is not a well-formed id", a)
	}
	later := domain.IDFor(domain.PrefixInbound, day.Add(24*time.Hour), "000")
	if later <= a {
		t.Errorf("ids do not sort by time: %s ≤ %s", later, a)
	}
}
