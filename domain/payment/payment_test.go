package payment_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/domain/rails"
)

// ---- Request.Validate ---------------------------------------------------------

func request(mod func(*payment.Request)) payment.Request {
	r := payment.Request{
		VirtualAccountID: "va_01jx0000000000000000000000",
		Amount:           1000,
		Rail:             "ach_standard",
		Destination:      payment.Destination{AccountNumber: "123456789", RoutingNumber: "021000021", Name: "Acme Supplies"},
		Description:      "Invoice 42",
		Metadata:         map[string]string{"order": "42"},
	}
	if mod != nil {
		mod(&r)
	}
	return r
}

func manyKeys(n int) map[string]string {
	m := make(map[string]string, n)
	for i := 0; i < n; i++ {
		m[fmt.Sprintf("k%02d", i)] = "v"
	}
	return m
}

type validateCase struct {
	name  string
	mod   func(*payment.Request)
	code  domain.Code // "" = valid
	param string
}

func TestValidate(t *testing.T) {
	long40 := strings.Repeat("k", 40)
	long41 := strings.Repeat("k", 41)
	cases := []validateCase{
		{"valid", nil, "", ""},

		// amount ≥ 1
		{"amount 1", func(r *payment.Request) { r.Amount = 1 }, "", ""},
		{"amount 0", func(r *payment.Request) { r.Amount = 0 }, domain.CodeInvalidRequest, "amount"},
		{"amount -1", func(r *payment.Request) { r.Amount = -1 }, domain.CodeInvalidRequest, "amount"},

		// rail one of four
		{"rail empty", func(r *payment.Request) { r.Rail = "" }, domain.CodeInvalidRequest, "rail"},
		{"rail upper case", func(r *payment.Request) { r.Rail = "RTP" }, domain.CodeInvalidRequest, "rail"},
		{"rail wire", func(r *payment.Request) { r.Rail = "wire" }, domain.CodeInvalidRequest, "rail"},
		{"rail ach", func(r *payment.Request) { r.Rail = "ach" }, domain.CodeInvalidRequest, "rail"},

		// routing number: 9 digits, ABA checksum
		{"routing 011000015", func(r *payment.Request) { r.Destination.RoutingNumber = "011000015" }, "", ""},
		{"routing 110000000", func(r *payment.Request) { r.Destination.RoutingNumber = "110000000" }, "", ""},
		{"routing bad checksum", func(r *payment.Request) { r.Destination.RoutingNumber = "021000022" }, domain.CodeInvalidRequest, "destination.routing_number"},
		{"routing 8 digits", func(r *payment.Request) { r.Destination.RoutingNumber = "02100002" }, domain.CodeInvalidRequest, "destination.routing_number"},
		{"routing 10 digits", func(r *payment.Request) { r.Destination.RoutingNumber = "0210000210" }, domain.CodeInvalidRequest, "destination.routing_number"},
		{"routing letters", func(r *payment.Request) { r.Destination.RoutingNumber = "02100002a" }, domain.CodeInvalidRequest, "destination.routing_number"},
		{"routing empty", func(r *payment.Request) { r.Destination.RoutingNumber = "" }, domain.CodeInvalidRequest, "destination.routing_number"},

		// account number: 4..17 digits
		{"account 4 digits", func(r *payment.Request) { r.Destination.AccountNumber = "1234" }, "", ""},
		{"account 17 digits", func(r *payment.Request) { r.Destination.AccountNumber = "12345678901234567" }, "", ""},
		{"account 3 digits", func(r *payment.Request) { r.Destination.AccountNumber = "123" }, domain.CodeInvalidRequest, "destination.account_number"},
		{"account 18 digits", func(r *payment.Request) { r.Destination.AccountNumber = "123456789012345678" }, domain.CodeInvalidRequest, "destination.account_number"},
		{"account letters", func(r *payment.Request) { r.Destination.AccountNumber = "12a45" }, domain.CodeInvalidRequest, "destination.account_number"},
		{"account dash", func(r *payment.Request) { r.Destination.AccountNumber = "1234-5678" }, domain.CodeInvalidRequest, "destination.account_number"},
		{"account space", func(r *payment.Request) { r.Destination.AccountNumber = " 12345" }, domain.CodeInvalidRequest, "destination.account_number"},
		{"account empty", func(r *payment.Request) { r.Destination.AccountNumber = "" }, domain.CodeInvalidRequest, "destination.account_number"},

		// name: 1..80 characters
		{"name 1 char", func(r *payment.Request) { r.Destination.Name = "A" }, "", ""},
		{"name 80 chars", func(r *payment.Request) { r.Destination.Name = strings.Repeat("a", 80) }, "", ""},
		{"name 80 multibyte chars", func(r *payment.Request) { r.Destination.Name = strings.Repeat("é", 80) }, "", ""},
		{"name empty", func(r *payment.Request) { r.Destination.Name = "" }, domain.CodeInvalidRequest, "destination.name"},
		{"name 81 chars", func(r *payment.Request) { r.Destination.Name = strings.Repeat("a", 81) }, domain.CodeInvalidRequest, "destination.name"},
		{"name 81 multibyte chars", func(r *payment.Request) { r.Destination.Name = strings.Repeat("é", 81) }, domain.CodeInvalidRequest, "destination.name"},

		// description ≤ 140
		{"description empty", func(r *payment.Request) { r.Description = "" }, "", ""},
		{"description 140", func(r *payment.Request) { r.Description = strings.Repeat("d", 140) }, "", ""},
		{"description 140 multibyte", func(r *payment.Request) { r.Description = strings.Repeat("ü", 140) }, "", ""},
		{"description 141", func(r *payment.Request) { r.Description = strings.Repeat("d", 141) }, domain.CodeInvalidRequest, "description"},

		// metadata: ≤ 50 keys, key 1..40, value ≤ 500
		{"metadata nil", func(r *payment.Request) { r.Metadata = nil }, "", ""},
		{"metadata 50 keys", func(r *payment.Request) { r.Metadata = manyKeys(50) }, "", ""},
		{"metadata 51 keys", func(r *payment.Request) { r.Metadata = manyKeys(51) }, domain.CodeInvalidRequest, "metadata"},
		{"metadata key 40", func(r *payment.Request) { r.Metadata = map[string]string{long40: "v"} }, "", ""},
		{"metadata key 41", func(r *payment.Request) { r.Metadata = map[string]string{long41: "v"} }, domain.CodeInvalidRequest, "metadata." + long41},
		{"metadata empty key", func(r *payment.Request) { r.Metadata = map[string]string{"": "v"} }, domain.CodeInvalidRequest, "metadata"},
		{"metadata value 500", func(r *payment.Request) { r.Metadata = map[string]string{"k": strings.Repeat("v", 500)} }, "", ""},
		{"metadata value 501", func(r *payment.Request) { r.Metadata = map[string]string{"k": strings.Repeat("v", 501)} }, domain.CodeInvalidRequest, "metadata.k"},
	}

	// amount_exceeds_rail_limit, per rail, at the limit and one cent over.
	limits := []struct {
		rail  string
		limit int64
	}{
		{"ach_same_day", 100000000},
		{"rtp", 1000000000},
		{"fednow", 1000000000},
		{"ach_standard", 9999999999},
	}
	for _, l := range limits {
		cases = append(cases,
			validateCase{l.rail + " at limit", func(r *payment.Request) { r.Rail, r.Amount = l.rail, l.limit }, "", ""},
			validateCase{l.rail + " over limit", func(r *payment.Request) { r.Rail, r.Amount = l.rail, l.limit+1 }, domain.CodeAmountExceedsRailLimit, "amount"},
		)
	}

	for _, c := range cases {
		req := request(c.mod)
		rail, err := req.Validate()
		if c.code == "" {
			if err != nil {
				t.Errorf("%s: unexpected error %v", c.name, err)
			} else if rail.String() != req.Rail {
				t.Errorf("%s: rail = %q, want %q", c.name, rail, req.Rail)
			}
			continue
		}
		var de *domain.Error
		if !errors.As(err, &de) {
			t.Errorf("%s: err = %v, want %s (%s)", c.name, err, c.code, c.param)
			continue
		}
		if de.Code != c.code || de.Param != c.param || de.Message == "" {
			t.Errorf("%s: err = %s (param %q, message %q), want %s (param %q)", c.name, de.Code, de.Param, de.Message, c.code, c.param)
		}
	}
}

func TestValidateReturnsRail(t *testing.T) {
	for _, r := range rails.All {
		got, err := request(func(q *payment.Request) { q.Rail = r.String() }).Validate()
		if err != nil || got != r {
			t.Errorf("Validate(rail %s) = %v, %v", r, got, err)
		}
	}
}

// ---- events -------------------------------------------------------------------

var (
	t0 = time.Date(2026, 1, 13, 14, 0, 0, 0, time.UTC) // created
	t1 = t0.Add(time.Minute)                           // submitted / canceled
	t2 = t0.Add(2 * time.Minute)                       // completed / failed
	t3 = t0.Add(3 * time.Minute)                       // the command under test
)

const payID = "pay_01jx0000000000000000000000"

var created = payment.Created{
	PaymentID: payID, PlatformID: "plt_x", Environment: domain.Sandbox,
	VirtualAccountID: "va_01jx0000000000000000000000", Amount: 1000, Fee: 25, Rail: "ach_standard",
	Destination:    payment.Destination{AccountNumber: "4000000002", RoutingNumber: "021000021", Name: "Acme"},
	IdempotencyKey: "key-1", Description: "Invoice 42", Metadata: map[string]string{"order": "42"},
	JournalEntryID: "je_hold", ExpectedSettlementAt: time.Date(2026, 1, 14, 13, 30, 0, 0, time.UTC), At: t0,
}

var (
	returned = rails.FailureFor(rails.ACHStandard, "R02")
	refused  = rails.FailureFor(rails.RTP, "CUST")
)

// Histories per status.
var histories = map[string][]domain.Event{
	"none":      nil,
	"pending":   {created},
	"submitted": {created, payment.Submitted{At: t1}},
	"completed": {created, payment.Submitted{At: t1}, payment.Completed{At: t2}},
	"failed":    {created, payment.Submitted{At: t1}, payment.Failed{Failure: returned, At: t2}},
	"reversed":  {created, payment.Submitted{At: t1}, payment.Completed{At: t2}, payment.Failed{Failure: returned, ReversalJournalEntryID: "je_rev0", At: t2.Add(time.Minute)}},
	"canceled":  {created, payment.Canceled{At: t1}},
	"changed":   {created, payment.Submitted{At: t1}, payment.NotificationOfChange{Code: "C01", CorrectedData: "1918171614", At: t2}},

	// Payments at or above the approval threshold.
	"awaiting":         {heldForApproval, awaiting},
	"approved":         {heldForApproval, awaiting, approved},
	"approved-settled": {heldForApproval, awaiting, approved, payment.Submitted{At: t2}, payment.Completed{At: t2}},
	"denied":           {heldForApproval, awaiting, payment.Denied{DeniedBy: "key_b", Reason: "not ours", At: t1}},
	"expired":          {heldForApproval, awaiting, payment.Canceled{Reason: payment.CancelReasonApprovalExpired, At: t1}},
}

var (
	heldForApproval = func() payment.Created { c := created; c.RequiresApproval = true; return c }()
	awaiting        = payment.ApprovalRequired{CreatedBy: "key_a", ExpiresAt: t0.Add(payment.ApprovalWindow), At: t0}
	approved        = payment.Approved{ApprovedBy: "key_b", Rail: "ach_standard", ExpectedSettlementAt: t2, At: t1}
)

func fold(h []domain.Event) payment.State {
	s := payment.State{Created: payment.Created{PaymentID: payID}}
	for _, e := range h {
		s = payment.Evolve(s, e)
	}
	return s
}

func TestEvolve(t *testing.T) {
	ts := func(t time.Time) *time.Time { return &t }
	cases := []struct {
		given                                    string
		status                                   string
		submitted, completed, failed, canceledAt *time.Time
		failure                                  *rails.Failure
		updated                                  time.Time
	}{
		{"pending", payment.StatusPending, nil, nil, nil, nil, nil, t0},
		{"submitted", payment.StatusSubmitted, ts(t1), nil, nil, nil, nil, t1},
		{"completed", payment.StatusCompleted, ts(t1), ts(t2), nil, nil, nil, t2},
		{"failed", payment.StatusFailed, ts(t1), nil, ts(t2), nil, &returned, t2},
		{"reversed", payment.StatusFailed, ts(t1), ts(t2), ts(t2.Add(time.Minute)), nil, &returned, t2.Add(time.Minute)},
		{"canceled", payment.StatusCanceled, nil, nil, nil, ts(t1), nil, t1},
	}
	for _, c := range cases {
		s := fold(histories[c.given])
		if s.Status != c.status || !reflect.DeepEqual(s.SubmittedAt, c.submitted) || !reflect.DeepEqual(s.CompletedAt, c.completed) ||
			!reflect.DeepEqual(s.FailedAt, c.failed) || !reflect.DeepEqual(s.CanceledAt, c.canceledAt) ||
			!reflect.DeepEqual(s.Failure, c.failure) || !s.UpdatedAt.Equal(c.updated) {
			t.Errorf("%s: state = %+v", c.given, s)
		}
		if !reflect.DeepEqual(s.Created, created) {
			t.Errorf("%s: Created = %+v, want %+v", c.given, s.Created, created)
		}
	}
}

func TestEventTypesAndJSON(t *testing.T) {
	events := []domain.Event{
		created,
		payment.Submitted{At: t1},
		payment.Completed{At: t2},
		payment.Failed{Failure: returned, ReversalJournalEntryID: "je_rev", At: t2},
		payment.Failed{Failure: refused, At: t2},
		payment.Canceled{At: t1},
		heldForApproval,
		awaiting,
		approved,
		payment.Denied{DeniedBy: "key_b", Reason: "no", At: t1},
		payment.Canceled{Reason: payment.CancelReasonApprovalExpired, At: t1},
	}
	wantTypes := []string{"payment.created", "payment.submitted", "payment.completed", "payment.failed", "payment.failed", "payment.canceled",
		"payment.created", "payment.requires_approval", "payment.approved", "payment.denied", "payment.canceled"}
	for i, e := range events {
		if e.EventType() != wantTypes[i] {
			t.Errorf("%T.EventType() = %q, want %q", e, e.EventType(), wantTypes[i])
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		back, err := domain.DecodeEvent(e.EventType(), b)
		if err != nil {
			t.Fatalf("DecodeEvent(%s): %v", e.EventType(), err)
		}
		if !reflect.DeepEqual(back, e) {
			t.Errorf("round trip of %s:\n got %#v\nwant %#v", e.EventType(), back, e)
		}
	}
}

// ---- Decide: given events / when command / then events ---------------------------

type outcome struct {
	events []domain.Event
	code   domain.Code
}

func ok(events ...domain.Event) outcome { return outcome{events: events} }
func noop() outcome                     { return outcome{} }
func fails(code domain.Code) outcome    { return outcome{code: code} }

func TestDecide(t *testing.T) {
	submit := payment.Submit{At: t3}
	complete := payment.Complete{At: t3}
	fail := payment.Fail{Failure: refused, At: t3}
	failRev := payment.Fail{Failure: refused, ReversalJournalEntryID: "je_rev", At: t3}
	cancel := payment.Cancel{At: t3}
	noc := payment.NoteChange{Code: "C01", CorrectedData: "1918171614", At: t3}
	approveB := payment.Approve{By: "key_b", ExpectedSettlementAt: t3, At: t3}
	denyA := payment.Deny{By: "key_a", Reason: "duplicate", At: t3}
	expireEarly := payment.Expire{At: t0.Add(payment.ApprovalWindow - time.Second)}
	expireLate := payment.Expire{At: t0.Add(payment.ApprovalWindow)}

	failed := payment.Failed{Failure: refused, At: t3}
	failedRev := payment.Failed{Failure: refused, ReversalJournalEntryID: "je_rev", At: t3}

	cases := []struct {
		given string
		when  any
		then  outcome
	}{
		// No payment.
		{"none", submit, fails(domain.CodeNotFound)},
		{"none", complete, fails(domain.CodeNotFound)},
		{"none", fail, fails(domain.CodeNotFound)},
		{"none", failRev, fails(domain.CodeNotFound)},
		{"none", cancel, fails(domain.CodeNotFound)},

		// pending: everything moves it.
		{"pending", submit, ok(payment.Submitted{At: t3})},
		{"pending", payment.Submit{TraceNumber: "021000020000001", ACHFileID: "achf_1", SettlesAt: &t2, At: t3},
			ok(payment.Submitted{TraceNumber: "021000020000001", ACHFileID: "achf_1", SettlesAt: &t2, At: t3})}, // a live ACH file
		{"pending", complete, ok(payment.Submitted{At: t3}, payment.Completed{At: t3})},
		{"pending", fail, ok(failed)},
		{"pending", failRev, ok(failed)}, // nothing posted: no reversal to record
		{"pending", cancel, ok(payment.Canceled{At: t3})},

		// submitted
		{"submitted", submit, noop()}, // a repeated rail event
		{"submitted", complete, ok(payment.Completed{At: t3})},
		{"submitted", fail, ok(failed)},
		{"submitted", failRev, ok(failed)},
		{"submitted", cancel, fails(domain.CodePaymentNotCancelable)},

		// completed
		{"completed", submit, noop()},
		{"completed", complete, noop()}, // a repeated rail event
		{"completed", fail, fails(domain.CodeInternal)},
		{"completed", failRev, ok(failedRev)}, // a return after settlement: reversed
		{"completed", cancel, fails(domain.CodePaymentNotCancelable)},

		// failed
		{"failed", submit, noop()},
		{"failed", complete, fails(domain.CodeInvalidState)},
		{"failed", fail, noop()}, // a repeated rail event
		{"failed", failRev, noop()},
		{"failed", cancel, fails(domain.CodePaymentNotCancelable)},

		// failed after a reversal
		{"reversed", submit, noop()},
		{"reversed", complete, fails(domain.CodeInvalidState)},
		{"reversed", fail, noop()},
		{"reversed", failRev, noop()},
		{"reversed", cancel, fails(domain.CodePaymentNotCancelable)},

		// canceled
		{"canceled", submit, noop()},
		{"canceled", complete, fails(domain.CodeInvalidState)},
		{"canceled", fail, fails(domain.CodeInvalidState)},
		{"canceled", failRev, fails(domain.CodeInvalidState)},
		{"canceled", cancel, fails(domain.CodePaymentNotCancelable)},

		// A notification of change (live ACH, addenda 98): kept on a payment
		// that went out, whatever became of it; the same notice again is
		// nothing new.
		{"pending", noc, fails(domain.CodeInvalidState)},
		{"submitted", noc, ok(payment.NotificationOfChange{Code: "C01", CorrectedData: "1918171614", At: t3})},
		{"completed", noc, ok(payment.NotificationOfChange{Code: "C01", CorrectedData: "1918171614", At: t3})},
		{"failed", noc, ok(payment.NotificationOfChange{Code: "C01", CorrectedData: "1918171614", At: t3})},
		{"canceled", noc, fails(domain.CodeInvalidState)},
		{"changed", noc, noop()},
		{"changed", payment.NoteChange{Code: "C02", CorrectedData: "011000015", At: t3},
			ok(payment.NotificationOfChange{Code: "C02", CorrectedData: "011000015", At: t3})},
		{"changed", complete, ok(payment.Completed{At: t3})},

		// Approvals (API.md §12): only a payment awaiting one is approved or
		// denied, never approved by the key that created it; its own rail
		// events do not move it; it can be canceled, and expires once its
		// window has passed.
		{"awaiting", approveB, ok(payment.Approved{ApprovedBy: "key_b", Rail: "ach_standard", ExpectedSettlementAt: t3, At: t3})},
		{"awaiting", payment.Approve{By: "key_a", ExpectedSettlementAt: t3, At: t3}, fails(domain.CodeForbidden)},
		{"awaiting", denyA, ok(payment.Denied{DeniedBy: "key_a", Reason: "duplicate", At: t3})}, // its creator may withdraw it
		{"awaiting", payment.Deny{By: "key_b", At: t3}, ok(payment.Denied{DeniedBy: "key_b", At: t3})},
		{"awaiting", cancel, ok(payment.Canceled{At: t3})},
		{"awaiting", submit, noop()},
		{"awaiting", complete, fails(domain.CodeInvalidState)},
		{"awaiting", fail, fails(domain.CodeInvalidState)},
		{"awaiting", noc, fails(domain.CodeInvalidState)},
		{"awaiting", payment.Settle{At: t3}, noop()},
		{"awaiting", expireEarly, noop()},
		{"awaiting", expireLate, ok(payment.Canceled{Reason: payment.CancelReasonApprovalExpired, At: t0.Add(payment.ApprovalWindow)})},
		{"approved", approveB, fails(domain.CodeInvalidState)},
		{"approved", denyA, fails(domain.CodeInvalidState)},
		{"approved", expireLate, noop()},
		{"approved", submit, ok(payment.Submitted{At: t3})},
		{"approved", cancel, ok(payment.Canceled{At: t3})},
		{"approved-settled", approveB, fails(domain.CodeInvalidState)},
		{"approved-settled", cancel, fails(domain.CodePaymentNotCancelable)},
		{"denied", approveB, fails(domain.CodeInvalidState)},
		{"denied", denyA, fails(domain.CodeInvalidState)},
		{"denied", cancel, fails(domain.CodePaymentNotCancelable)},
		{"denied", submit, noop()},
		{"denied", complete, fails(domain.CodeInvalidState)},
		{"denied", expireLate, noop()},
		{"expired", approveB, fails(domain.CodeInvalidState)},
		{"expired", expireLate, noop()},
		{"pending", approveB, fails(domain.CodeInvalidState)},
		{"pending", denyA, fails(domain.CodeInvalidState)},
		{"pending", expireLate, noop()},
		{"canceled", approveB, fails(domain.CodeInvalidState)},

		// Not a payment command.
		{"pending", struct{}{}, fails(domain.CodeInternal)},
		{"pending", "cancel", fails(domain.CodeInternal)},
	}
	for _, c := range cases {
		name := fmt.Sprintf("given %s, when %T", c.given, c.when)
		if f, isFail := c.when.(payment.Fail); isFail && f.ReversalJournalEntryID != "" {
			name += " (with reversal)"
		}
		t.Run(name, func(t *testing.T) {
			h, found := histories[c.given]
			if !found {
				t.Fatalf("no history %q", c.given)
			}
			before := fold(h)
			got, err := payment.Decide(before, c.when)
			if c.then.code != "" {
				var de *domain.Error
				if !errors.As(err, &de) || de.Code != c.then.code {
					t.Fatalf("got events %v, err %v; want error %s", got, err, c.then.code)
				}
				if got != nil {
					t.Errorf("an error must come with no events, got %v", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if len(got) != len(c.then.events) || (len(got) > 0 && !reflect.DeepEqual(got, c.then.events)) {
				t.Fatalf("events:\n got %#v\nwant %#v", got, c.then.events)
			}
			if !reflect.DeepEqual(before, fold(h)) {
				t.Errorf("Decide changed its input state")
			}
		})
	}
}

// After a decision, the folded state is the one API.md describes.
func TestDecideThenEvolve(t *testing.T) {
	cases := []struct {
		given string
		when  any
		want  string
	}{
		{"pending", payment.Submit{At: t3}, payment.StatusSubmitted},
		{"pending", payment.Complete{At: t3}, payment.StatusCompleted},
		{"pending", payment.Fail{Failure: refused, At: t3}, payment.StatusFailed},
		{"pending", payment.Cancel{At: t3}, payment.StatusCanceled},
		{"submitted", payment.Complete{At: t3}, payment.StatusCompleted},
		{"awaiting", payment.Approve{By: "key_b", ExpectedSettlementAt: t3, At: t3}, payment.StatusPending},
		{"awaiting", payment.Deny{By: "key_b", At: t3}, payment.StatusDenied},
		{"awaiting", payment.Cancel{At: t3}, payment.StatusCanceled},
		{"completed", payment.Fail{Failure: refused, ReversalJournalEntryID: "je_rev", At: t3}, payment.StatusFailed},
	}
	for _, c := range cases {
		s := fold(histories[c.given])
		events, err := payment.Decide(s, c.when)
		if err != nil {
			t.Fatalf("%s %T: %v", c.given, c.when, err)
		}
		for _, e := range events {
			s = payment.Evolve(s, e)
		}
		if s.Status != c.want || !s.UpdatedAt.Equal(t3) {
			t.Errorf("%s %T: status %s at %s, want %s at %s", c.given, c.when, s.Status, s.UpdatedAt, c.want, t3)
		}
	}
	// pending + Complete records both times.
	s := fold(histories["pending"])
	events, _ := payment.Decide(s, payment.Complete{At: t3})
	for _, e := range events {
		s = payment.Evolve(s, e)
	}
	if s.SubmittedAt == nil || !s.SubmittedAt.Equal(t3) || s.CompletedAt == nil || !s.CompletedAt.Equal(t3) {
		t.Errorf("pending + Complete: submitted %v, completed %v", s.SubmittedAt, s.CompletedAt)
	}
	// A failure carries the failure object.
	s = fold(histories["submitted"])
	events, _ = payment.Decide(s, payment.Fail{Failure: refused, At: t3})
	for _, e := range events {
		s = payment.Evolve(s, e)
	}
	if s.Failure == nil || *s.Failure != refused || s.FailedAt == nil || !s.FailedAt.Equal(t3) {
		t.Errorf("submitted + Fail: failure %+v at %v", s.Failure, s.FailedAt)
	}
}
