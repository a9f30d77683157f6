package account_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/account"
)

// Fixed times: commands carry their time, so the expected events are exact.
var (
	t0 = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC) // opened
	t1 = t0.Add(time.Hour)                           // frozen
	t2 = t0.Add(2 * time.Hour)                       // unfrozen / closed
	t3 = t0.Add(3 * time.Hour)                       // the command under test
)

const vaID = "va_01jx0000000000000000000000"

func open(mod func(*account.Open)) account.Open {
	c := account.Open{
		VirtualAccountID: vaID, PlatformID: "plt_x", Environment: domain.Sandbox,
		EntityRef: "biz_42", Type: "checking", AccountNumber: "123456789012", RoutingNumber: "110000000",
		LedgerAccountID: "la_01jx0000000000000000000000", Metadata: map[string]string{"k": "v"}, At: t0,
	}
	if mod != nil {
		mod(&c)
	}
	return c
}

func opened(mod func(*account.Opened)) account.Opened {
	e := account.Opened{
		VirtualAccountID: vaID, PlatformID: "plt_x", Environment: domain.Sandbox,
		EntityRef: "biz_42", Type: account.Checking, AccountNumber: "123456789012", RoutingNumber: "110000000",
		LedgerAccountID: "la_01jx0000000000000000000000", Metadata: map[string]string{"k": "v"}, At: t0,
	}
	if mod != nil {
		mod(&e)
	}
	return e
}

// Histories the tables start from.
var (
	none         []domain.Event
	active       = []domain.Event{opened(nil)}
	frozen       = []domain.Event{opened(nil), account.Frozen{At: t1}}
	unfrozen     = []domain.Event{opened(nil), account.Frozen{At: t1}, account.Unfrozen{At: t2}}
	closed       = []domain.Event{opened(nil), account.Closed{At: t2}}
	zeroBalance  = account.Close{At: t3}
	histories    = map[string][]domain.Event{"none": none, "active": active, "frozen": frozen, "unfrozen": unfrozen, "closed": closed}
	historyOrder = []string{"none", "active", "frozen", "unfrozen", "closed"}
)

func fold(history []domain.Event) account.State {
	s := account.State{ID: vaID}
	for _, e := range history {
		s = account.Evolve(s, e)
	}
	return s
}

type outcome struct {
	events []domain.Event
	code   domain.Code // expected error code, if any
	param  string      // expected error param, if any
}

func ok(events ...domain.Event) outcome { return outcome{events: events} }
func fails(code domain.Code) outcome    { return outcome{code: code} }
func invalid(param string) outcome      { return outcome{code: domain.CodeInvalidRequest, param: param} }

func check(t *testing.T, given []domain.Event, when any, then outcome) {
	t.Helper()
	before := fold(given)
	got, err := account.Decide(before, when)
	if then.code != "" {
		var de *domain.Error
		if !errors.As(err, &de) {
			t.Fatalf("got events %v, err %v; want error %s", got, err, then.code)
		}
		if de.Code != then.code || (then.param != "" && de.Param != then.param) {
			t.Fatalf("got error %s (param %q): %v; want %s (param %q)", de.Code, de.Param, err, then.code, then.param)
		}
		if got != nil {
			t.Errorf("an error must come with no events, got %v", got)
		}
		return
	}
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	if !reflect.DeepEqual(got, then.events) {
		t.Fatalf("events:\n got %#v\nwant %#v", got, then.events)
	}
	// Deciding is pure: the state it was given is unchanged.
	if !reflect.DeepEqual(before, fold(given)) {
		t.Errorf("Decide changed its input state")
	}
}

// Every command in every state: the lifecycle table.
func TestDecideLifecycle(t *testing.T) {
	cases := []struct {
		given string
		when  any
		then  outcome
	}{
		{"none", open(nil), ok(opened(nil))},
		{"active", open(nil), fails(domain.CodeInvalidState)},
		{"frozen", open(nil), fails(domain.CodeInvalidState)},
		{"closed", open(nil), fails(domain.CodeInvalidState)},

		{"none", account.Freeze{At: t3}, fails(domain.CodeNotFound)},
		{"active", account.Freeze{At: t3}, ok(account.Frozen{At: t3})},
		{"frozen", account.Freeze{At: t3}, fails(domain.CodeInvalidState)},
		{"unfrozen", account.Freeze{At: t3}, ok(account.Frozen{At: t3})},
		{"closed", account.Freeze{At: t3}, fails(domain.CodeInvalidState)},

		{"none", account.Unfreeze{At: t3}, fails(domain.CodeNotFound)},
		{"active", account.Unfreeze{At: t3}, fails(domain.CodeInvalidState)},
		{"frozen", account.Unfreeze{At: t3}, ok(account.Unfrozen{At: t3})},
		{"unfrozen", account.Unfreeze{At: t3}, fails(domain.CodeInvalidState)},
		{"closed", account.Unfreeze{At: t3}, fails(domain.CodeInvalidState)},

		{"none", zeroBalance, fails(domain.CodeNotFound)},
		{"active", zeroBalance, ok(account.Closed{At: t3})},
		{"unfrozen", zeroBalance, ok(account.Closed{At: t3})},
		{"frozen", zeroBalance, fails(domain.CodeInvalidState)},
		{"closed", zeroBalance, fails(domain.CodeInvalidState)},

		// Close only at zero posted and nothing pending, either way.
		{"active", account.Close{Posted: 1, At: t3}, fails(domain.CodeInvalidState)},
		{"active", account.Close{Posted: -1, At: t3}, fails(domain.CodeInvalidState)},
		{"active", account.Close{PendingInbound: 5, At: t3}, fails(domain.CodeInvalidState)},
		{"active", account.Close{PendingOutbound: 5, At: t3}, fails(domain.CodeInvalidState)},
		{"active", account.Close{Posted: 5, PendingOutbound: 5, At: t3}, fails(domain.CodeInvalidState)},

		// Unknown commands are refused, never silently accepted.
		{"active", struct{}{}, fails(domain.CodeInternal)},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%T%+v", c.given, c.when, c.when), func(t *testing.T) {
			check(t, histories[c.given], c.when, c.then)
		})
	}
}

// Every (state, command) pair is in the table above: no command is left
// untested in some state.
func TestDecideCoversEveryStateAndCommand(t *testing.T) {
	commands := []any{open(nil), account.Freeze{At: t3}, account.Unfreeze{At: t3}, zeroBalance}
	for _, h := range historyOrder {
		for _, cmd := range commands {
			// Decide must answer (events or a typed error) and never panic.
			evs, err := account.Decide(fold(histories[h]), cmd)
			if err == nil && len(evs) == 0 {
				t.Errorf("%s/%T: no events and no error", h, cmd)
			}
			if err != nil && domain.CodeOf(err) == "" {
				t.Errorf("%s/%T: untyped error %v", h, cmd, err)
			}
		}
	}
}

func TestDecideOpenValidation(t *testing.T) {
	longKey := strings.Repeat("k", domain.MaxMetadataKeyLen+1)
	tooMany := map[string]string{}
	for i := 0; i <= domain.MaxMetadataKeys; i++ {
		tooMany[fmt.Sprintf("k%d", i)] = "v"
	}
	fifty := map[string]string{}
	for i := 0; i < domain.MaxMetadataKeys; i++ {
		fifty[fmt.Sprintf("k%d", i)] = strings.Repeat("v", domain.MaxMetadataValueLen)
	}
	ref128 := strings.Repeat("a", account.MaxEntityRefLen)
	// 128 characters of two bytes each: the bound counts characters.
	ref128Runes := strings.Repeat("é", account.MaxEntityRefLen)
	cases := []struct {
		name string
		cmd  account.Open
		then outcome
	}{
		{"entity_ref 1 char", open(func(c *account.Open) { c.EntityRef = "x" }),
			ok(opened(func(e *account.Opened) { e.EntityRef = "x" }))},
		{"entity_ref 128 chars", open(func(c *account.Open) { c.EntityRef = ref128 }),
			ok(opened(func(e *account.Opened) { e.EntityRef = ref128 }))},
		{"entity_ref 128 multibyte chars", open(func(c *account.Open) { c.EntityRef = ref128Runes }),
			ok(opened(func(e *account.Opened) { e.EntityRef = ref128Runes }))},
		{"entity_ref empty", open(func(c *account.Open) { c.EntityRef = "" }), invalid("entity_ref")},
		{"entity_ref blank", open(func(c *account.Open) { c.EntityRef = " \t " }), invalid("entity_ref")},
		{"entity_ref 129 chars", open(func(c *account.Open) { c.EntityRef = ref128 + "a" }), invalid("entity_ref")},
		{"entity_ref 129 multibyte chars", open(func(c *account.Open) { c.EntityRef = ref128Runes + "é" }), invalid("entity_ref")},

		{"type savings", open(func(c *account.Open) { c.Type = "savings" }),
			ok(opened(func(e *account.Opened) { e.Type = account.Savings }))},
		{"type empty", open(func(c *account.Open) { c.Type = "" }), invalid("type")},
		{"type unknown", open(func(c *account.Open) { c.Type = "business" }), invalid("type")},
		{"type wrong case", open(func(c *account.Open) { c.Type = "Checking" }), invalid("type")},

		{"metadata nil becomes empty", open(func(c *account.Open) { c.Metadata = nil }),
			ok(opened(func(e *account.Opened) { e.Metadata = map[string]string{} }))},
		{"metadata at the limits", open(func(c *account.Open) { c.Metadata = fifty }),
			ok(opened(func(e *account.Opened) { e.Metadata = fifty }))},
		{"metadata 51 keys", open(func(c *account.Open) { c.Metadata = tooMany }), invalid("metadata")},
		{"metadata key too long", open(func(c *account.Open) { c.Metadata = map[string]string{longKey: "v"} }),
			invalid("metadata." + longKey)},
		{"metadata empty key", open(func(c *account.Open) { c.Metadata = map[string]string{"": "v"} }), invalid("metadata")},
		{"metadata value too long", open(func(c *account.Open) {
			c.Metadata = map[string]string{"k": strings.Repeat("v", domain.MaxMetadataValueLen+1)}
		}), invalid("metadata.k")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { check(t, none, c.cmd, c.then) })
	}
}

func TestEvolve(t *testing.T) {
	cases := []struct {
		given  string
		status account.Status
	}{
		{"none", account.StatusNone},
		{"active", account.StatusActive},
		{"frozen", account.StatusFrozen},
		{"unfrozen", account.StatusActive},
		{"closed", account.StatusClosed},
	}
	for _, c := range cases {
		s := fold(histories[c.given])
		if s.Status != c.status {
			t.Errorf("%s: status %q, want %q", c.given, s.Status, c.status)
		}
		if s.Exists() != (c.given != "none") {
			t.Errorf("%s: Exists = %v", c.given, s.Exists())
		}
	}
	s := fold(frozen)
	want := account.State{ID: vaID, PlatformID: "plt_x", Environment: domain.Sandbox, EntityRef: "biz_42",
		Type: account.Checking, Status: account.StatusFrozen, AccountNumber: "123456789012", RoutingNumber: "110000000",
		LedgerAccountID: "la_01jx0000000000000000000000", Metadata: map[string]string{"k": "v"}, CreatedAt: t0}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("state after open+freeze:\n got %+v\nwant %+v", s, want)
	}
}

// Events are stored as JSON and read back: what is decoded is what was decided.
func TestEventsRoundTrip(t *testing.T) {
	events := []domain.Event{opened(func(e *account.Opened) { e.Type = account.Savings }),
		account.Frozen{At: t1}, account.Unfrozen{At: t2}, account.Closed{At: t3}}
	for _, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		back, err := domain.DecodeEvent(e.EventType(), b)
		if err != nil {
			t.Fatalf("%s: %v", e.EventType(), err)
		}
		if !reflect.DeepEqual(back, e) {
			t.Errorf("%s: round trip\n got %#v\nwant %#v", e.EventType(), back, e)
		}
	}
	if got := (account.Opened{}).EventType(); got != "virtual_account.created" {
		t.Errorf("creation event type = %q, want virtual_account.created", got)
	}
	var typ account.Type
	if err := json.Unmarshal([]byte(`"business"`), &typ); domain.CodeOf(err) != domain.CodeInvalidRequest {
		t.Errorf("unknown type decoded without error: %v", err)
	}
}

func TestParse(t *testing.T) {
	for _, s := range []string{"active", "frozen", "closed"} {
		st, ok := account.ParseStatus(s)
		if !ok || st.String() != s {
			t.Errorf("ParseStatus(%q) = %v, %v", s, st, ok)
		}
	}
	if _, ok := account.ParseStatus(""); ok {
		t.Errorf("ParseStatus accepted the empty status")
	}
	for _, s := range []string{"checking", "savings"} {
		typ, ok := account.ParseType(s)
		if !ok || typ.String() != s {
			t.Errorf("ParseType(%q) = %v, %v", s, typ, ok)
		}
	}
	if got := account.StreamID("va_1"); got != "virtual_account-va_1" {
		t.Errorf("StreamID = %q", got)
	}
}
