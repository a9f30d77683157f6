package payment_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/domain/rails"
)

// ---- Scheduling: given inputs / when creating with scheduled_for / then Created, nothing held --

// createdAt is Monday 2026-01-12, 09:00 ET: "today" for the schedule.
func scheduledFor(date string) func(*payment.CreateInputs) {
	return func(in *payment.CreateInputs) { in.Request.ScheduledFor, in.CreatedBy = date, "key_maker" }
}

// wantScheduled is createInputs(nil) scheduled for date: no journal entry,
// released at 06:00 ET on date, its next-day ACH settling the next
// business day at 08:30 ET.
func wantScheduled(date string, settles time.Time) []domain.Event {
	c := wantCreated(1000, 25)
	release := payment.ReleaseAt(date)
	c.JournalEntryID, c.ScheduledFor, c.ReleaseAt, c.CreatedBy, c.ExpectedSettlementAt = "", date, &release, "key_maker", settles
	return []domain.Event{c}
}

func TestDecideSchedule(t *testing.T) {
	tuesday := time.Date(2026, 1, 14, 13, 30, 0, 0, time.UTC) // Wednesday 08:30 ET: after Tuesday's release
	cases := []createCase{
		{"tomorrow", scheduledFor("2026-01-13"), wantScheduled("2026-01-13", tuesday), nil},
		{"365 days ahead", scheduledFor("2027-01-12"), wantScheduled("2027-01-12", time.Date(2027, 1, 13, 13, 30, 0, 0, time.UTC)), nil},
		{"nothing is held: no funds needed today", all(scheduledFor("2026-01-13"), poor), wantScheduled("2026-01-13", tuesday), nil},
		{"the daily limit is the release's", all(scheduledFor("2026-01-13"), spentToLimit), wantScheduled("2026-01-13", tuesday), nil},
		{"no approval before the release", all(scheduledFor("2026-01-13"), func(in *payment.CreateInputs) { in.Settings.PaymentApprovalThreshold = limit(1) }),
			wantScheduled("2026-01-13", tuesday), nil},

		{"today (Eastern)", scheduledFor("2026-01-12"), nil, invalid("scheduled_for")},
		{"yesterday", scheduledFor("2026-01-11"), nil, invalid("scheduled_for")},
		{"366 days ahead", scheduledFor("2027-01-13"), nil, invalid("scheduled_for")},
		{"not a date", scheduledFor("2026-13-01"), nil, invalid("scheduled_for")},
		{"a time, not a date", scheduledFor("2026-01-13T06:00:00Z"), nil, invalid("scheduled_for")},
		{"late in the UTC day is still today in the East", all(scheduledFor("2026-01-13"), func(in *payment.CreateInputs) {
			in.Now = time.Date(2026, 1, 13, 3, 0, 0, 0, time.UTC) // 22:00 ET on the 12th
		}), nil, nil},
		{"after midnight Eastern, tomorrow is today", all(scheduledFor("2026-01-13"), func(in *payment.CreateInputs) {
			in.Now = time.Date(2026, 1, 13, 5, 1, 0, 0, time.UTC) // 00:01 ET on the 13th
		}), nil, invalid("scheduled_for")},

		// The parties' rules run at once: an account that cannot send today cannot schedule.
		{"closed account", all(scheduledFor("2026-01-13"), closed), nil, notActive("closed")},
		{"KYB pending", all(scheduledFor("2026-01-13"), kybPending), nil, notApproved("pending_review")},
		{"screening hit", all(scheduledFor("2026-01-13"), ofacName), nil, screened},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := payment.DecideCreate(createInputs(c.given))
			if c.err != nil {
				checkRefusal(t, got, err, *c.err)
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if c.events != nil && !reflect.DeepEqual(got, c.events) {
				t.Fatalf("events:\n got %#v\nwant %#v", got, c.events)
			}
			if len(got) != 1 || got[0].(payment.Created).JournalEntryID != "" {
				t.Fatalf("a scheduled payment records one event and no entry: %#v", got)
			}
			s := payment.Evolve(payment.State{}, got[0])
			if s.Status != payment.StatusScheduled {
				t.Fatalf("status %q", s.Status)
			}
		})
	}
}

func TestReleaseAtIsSixEastern(t *testing.T) {
	for date, want := range map[string]time.Time{
		"2026-01-13": time.Date(2026, 1, 13, 11, 0, 0, 0, time.UTC), // EST
		"2026-07-01": time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC),  // EDT
		"2026-03-08": time.Date(2026, 3, 8, 10, 0, 0, 0, time.UTC),  // the spring change happens at 02:00
	} {
		if got := payment.ReleaseAt(date); !got.Equal(want) {
			t.Errorf("ReleaseAt(%s) = %s, want %s", date, got, want)
		}
	}
}

// ---- Release: given a scheduled payment and today's inputs / when released / then held or failed --

// scheduled is the payment of wantScheduled, folded.
func scheduled() payment.State {
	return payment.Evolve(payment.State{}, wantScheduled("2026-01-13", time.Time{})[0])
}

// releaseInputs are createInputs on the release day, the request rebuilt
// from the payment (no date, no key).
func releaseInputs(mod func(*payment.CreateInputs)) payment.CreateInputs {
	return createInputs(func(in *payment.CreateInputs) {
		in.Request = payment.ReleaseRequest(scheduled())
		in.IDs.Payment = "pay_other" // the release names the scheduled payment, whatever the caller drew
		in.Now = payment.ReleaseAt("2026-01-13")
		if mod != nil {
			mod(in)
		}
	})
}

func TestDecideRelease(t *testing.T) {
	at := payment.ReleaseAt("2026-01-13")
	hold := wantHold(1000, 25)
	hold.EffectiveAt, hold.At = at, at
	settles := rails.ExpectedSettlement(rails.ACHStandard, at)
	released := payment.Released{JournalEntryID: "je_hold", Fee: 25, Rail: "ach_standard", ExpectedSettlementAt: settles, At: at}
	failed := func(code domain.Code, action string) []domain.Event {
		return []domain.Event{payment.Failed{Failure: rails.Failure{Code: string(code), Advice: rails.RetryAdvice{Action: action}}, At: at}}
	}
	cases := []struct {
		name   string
		state  payment.State
		given  func(*payment.CreateInputs)
		events []domain.Event
	}{
		{"every rule passes: held now", scheduled(), nil, []domain.Event{released, hold}},
		{"the fee of the day of release", scheduled(), func(in *payment.CreateInputs) { in.FeeSchedule = map[string]int64{"ach_standard": 0} },
			func() []domain.Event {
				r, h := released, wantHold(1000, 0)
				r.Fee, h.EffectiveAt, h.At = 0, at, at
				return []domain.Event{r, h}
			}()},
		{"at the approval threshold: held, waiting for a key other than the scheduler's", scheduled(),
			func(in *payment.CreateInputs) { in.Settings.PaymentApprovalThreshold = limit(1000) },
			func() []domain.Event {
				r := released
				r.RequiresApproval = true
				return []domain.Event{r, hold, payment.ApprovalRequired{CreatedBy: "key_maker", ExpiresAt: at.Add(payment.ApprovalWindow), At: at}}
			}()},
		{"no funds on the day", scheduled(), poor, failed(domain.CodeInsufficientFunds, rails.ActionRetryLater)},
		{"over the day's limit", scheduled(), spentToLimit, failed(domain.CodeLimitExceeded, rails.ActionRetryLater)},
		{"account frozen since", scheduled(), frozen, failed(domain.CodeAccountNotActive, rails.ActionDoNotRetry)},
		{"KYB no longer approved", scheduled(), kybPending, failed(domain.CodeKYBNotApproved, rails.ActionDoNotRetry)},
		{"released already: nothing (a release run twice holds once)", payment.Evolve(scheduled(), released), nil, nil},
		{"canceled: nothing", payment.Evolve(scheduled(), payment.Canceled{At: at}), nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := payment.DecideRelease(c.state, releaseInputs(c.given))
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			for i, e := range got { // a rule's reason is its message: checked for presence only
				if f, ok := e.(payment.Failed); ok {
					if f.Failure.Reason == "" {
						t.Errorf("failure without a reason")
					}
					f.Failure.Reason = ""
					got[i] = f
				}
			}
			if !reflect.DeepEqual(got, c.events) {
				t.Fatalf("events:\n got %#v\nwant %#v", got, c.events)
			}
			if len(got) > 1 {
				if err := ledger.ValidateLines(got[1].(ledger.Recorded).Lines); err != nil {
					t.Errorf("the hold is not a balanced entry: %v", err)
				}
				s := c.state
				for _, e := range got {
					s = payment.Evolve(s, e)
				}
				if s.JournalEntryID != "je_hold" || s.ReleasedAt == nil || (s.Status != payment.StatusPending && s.Status != payment.StatusRequiresApproval) {
					t.Errorf("released state: %+v", s)
				}
			}
		})
	}
}

// A scheduled payment cancels (nothing to release); a rule's failure has no network code, written null.
func TestScheduledCancelsAndRuleFailureHasNoNetworkCode(t *testing.T) {
	events, err := payment.Decide(scheduled(), payment.Cancel{At: createdAt})
	if err != nil || len(events) != 1 {
		t.Fatalf("cancel: %v %v", events, err)
	}
	if _, err := payment.Decide(scheduled(), payment.Complete{At: createdAt}); err == nil {
		t.Fatal("a scheduled payment completed")
	}
	if events, err := payment.Decide(scheduled(), payment.Submit{At: createdAt}); err != nil || events != nil {
		t.Fatalf("a rail took a scheduled payment: %v %v", events, err)
	}
	b, _ := json.Marshal(payment.RuleFailure(&domain.Error{Code: domain.CodeInsufficientFunds, Message: "low"}))
	if !strings.Contains(string(b), `"network_code":null`) {
		t.Fatalf("rule failure: %s", b)
	}
	b, _ = json.Marshal(rails.FailureFor(rails.ACHStandard, "R01"))
	if !strings.HasPrefix(string(b), `{"code":"insufficient_funds","network_code":"R01",`) {
		t.Fatalf("network failure: %s", b)
	}
}
