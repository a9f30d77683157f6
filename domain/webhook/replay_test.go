package webhook_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/webhook"
)

// ---- DecideReplay: given an endpoint / when replaying a window / then the event or the rule broken --

var (
	t0 = time.Date(2026, 3, 2, 15, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Hour)
)

func endpoint(mod func(*webhook.State)) webhook.State {
	s := webhook.State{ID: "wh_1", PlatformID: "plt_x", Environment: domain.Sandbox,
		Config: webhook.Config{URL: "https://example.com/h", Events: []string{"*"}, Status: webhook.StatusEnabled}}
	if mod != nil {
		mod(&s)
	}
	return s
}

func TestDecideReplayRefusals(t *testing.T) {
	for _, tc := range []struct {
		given string
		s     webhook.State
		r     webhook.ReplayRequest
		found int
		code  domain.Code
		param string
	}{
		{"no created_after", endpoint(nil), webhook.ReplayRequest{CreatedBefore: t1}, 0, domain.CodeInvalidRequest, "created_after"},
		{"no created_before", endpoint(nil), webhook.ReplayRequest{CreatedAfter: t0}, 0, domain.CodeInvalidRequest, "created_before"},
		{"an empty window", endpoint(nil), webhook.ReplayRequest{CreatedAfter: t0, CreatedBefore: t0}, 0, domain.CodeInvalidRequest, "created_before"},
		{"a window backwards", endpoint(nil), webhook.ReplayRequest{CreatedAfter: t1, CreatedBefore: t0}, 0, domain.CodeInvalidRequest, "created_before"},
		{"an unknown type", endpoint(nil), webhook.ReplayRequest{CreatedAfter: t0, CreatedBefore: t1, Types: []string{"payment.created", "payment.exploded"}}, 0, domain.CodeInvalidRequest, "types[1]"},
		{"webhook.test (never an event of the log)", endpoint(nil), webhook.ReplayRequest{CreatedAfter: t0, CreatedBefore: t1, Types: []string{"webhook.test"}}, 0, domain.CodeInvalidRequest, "types[0]"},
		{"\"*\" as a type", endpoint(nil), webhook.ReplayRequest{CreatedAfter: t0, CreatedBefore: t1, Types: []string{"*"}}, 0, domain.CodeInvalidRequest, "types[0]"},
		{"an empty types list", endpoint(nil), webhook.ReplayRequest{CreatedAfter: t0, CreatedBefore: t1, Types: []string{}}, 0, domain.CodeInvalidRequest, "types"},
		{"a disabled endpoint", endpoint(func(s *webhook.State) { s.Config.Status = webhook.StatusDisabled }), webhook.ReplayRequest{CreatedAfter: t0, CreatedBefore: t1}, 0, domain.CodeInvalidState, ""},
		{"a deleted endpoint", endpoint(func(s *webhook.State) { s.Deleted = true }), webhook.ReplayRequest{CreatedAfter: t0, CreatedBefore: t1}, 0, domain.CodeNotFound, ""},
		{"one event too many", endpoint(nil), webhook.ReplayRequest{CreatedAfter: t0, CreatedBefore: t1}, webhook.MaxReplayEvents + 1, domain.CodeReplayTooLarge, "created_before"},
	} {
		t.Run(tc.given, func(t *testing.T) {
			events, err := webhook.DecideReplay(tc.s, tc.r, "rpl_1", tc.found, t1)
			var de *domain.Error
			if !errors.As(err, &de) || de.Code != tc.code || de.Param != tc.param {
				t.Fatalf("got %v, %v; want %s (%s)", events, err, tc.code, tc.param)
			}
			if events != nil {
				t.Errorf("a refusal returned events: %v", events)
			}
		})
	}
}

func TestDecideReplayRecordsTheWindow(t *testing.T) {
	for _, tc := range []struct {
		given string
		r     webhook.ReplayRequest
		found int
	}{
		{"every subscribed type, exactly the limit", webhook.ReplayRequest{CreatedAfter: t0, CreatedBefore: t1}, webhook.MaxReplayEvents},
		{"some types, nothing found (a future window)", webhook.ReplayRequest{CreatedAfter: t1, CreatedBefore: t1.Add(time.Hour), Types: []string{"payment.completed"}}, 0},
	} {
		t.Run(tc.given, func(t *testing.T) {
			events, err := webhook.DecideReplay(endpoint(nil), tc.r, "rpl_1", tc.found, t1)
			if err != nil {
				t.Fatal(err)
			}
			want := []domain.Event{webhook.ReplayRequested{ReplayID: "rpl_1", CreatedAfter: tc.r.CreatedAfter, CreatedBefore: tc.r.CreatedBefore,
				Types: tc.r.Types, Count: tc.found, At: t1}}
			if !reflect.DeepEqual(events, want) {
				t.Errorf("got %#v\nwant %#v", events, want)
			}
		})
	}
}

func TestReplaySelects(t *testing.T) {
	some := webhook.Config{Events: []string{"payment.created"}}
	all := webhook.Config{Events: []string{"*"}}
	for _, tc := range []struct {
		c     webhook.Config
		types []string
		typ   string
		want  bool
	}{
		{some, nil, "payment.created", true},
		{some, nil, "payment.failed", false},                       // absent types: what the endpoint subscribes to
		{all, nil, "kyb.approved", true},                           //
		{some, []string{"payment.failed"}, "payment.failed", true}, // named types: sent even if not subscribed
		{some, []string{"payment.failed"}, "payment.created", false},
	} {
		if got := (webhook.ReplayRequest{Types: tc.types}).Selects(tc.c, tc.typ); got != tc.want {
			t.Errorf("endpoint %v, types %v, %s: got %v, want %v", tc.c.Events, tc.types, tc.typ, got, tc.want)
		}
	}
}
