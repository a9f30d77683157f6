package kyb_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/kyb"
)

const (
	v1 = "kyb_01JAAAAAAAAAAAAAAAAAAAAAA1" // the verification of the given events
	v2 = "kyb_01JAAAAAAAAAAAAAAAAAAAAAA2" // the one a Submit files
)

var (
	t0 = time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC) // the first submission
	t1 = t0.Add(time.Minute)                         // its first decision
	t2 = t0.Add(time.Hour)                           // the command under test
)

// submitted is the Submitted event of v1, masked by hand (not by Mask).
func submitted() kyb.Submitted {
	return kyb.Submitted{VerificationID: v1, PlatformID: "plt_1", Environment: domain.Sandbox, EntityRef: "biz_1",
		VirtualAccountID: "va_1", EINLast4: "6789", At: t0,
		Business: kyb.MaskedBusiness{LegalName: "Acme Widgets LLC", DBA: ptr("Acme"), EIN: "**-***6789", EntityType: "llc",
			FormationDate: "2015-03-01", FormationState: "DE",
			Address: kyb.Address{Line1: "100 Main Street", Line2: ptr("Suite 200"), City: "Wilmington", State: "DE", PostalCode: "19801", Country: "US"},
			Website: ptr("https://acme.example.com"), NAICSCode: ptr("522110"), Phone: ptr("+13025550100")},
		BeneficialOwners: []kyb.MaskedOwner{
			{FirstName: "Jane", LastName: "Doe", DateOfBirth: "1980-01-31", SSNLast4: "****", OwnershipPercentage: "60",
				IsControlPerson: true, Title: ptr("CEO"), Address: street("1 Elm Street")},
			{FirstName: "John", LastName: "Roe", DateOfBirth: "1975-07-04", SSNLast4: "****", OwnershipPercentage: "40",
				Address: street("2 Oak Avenue")},
		}}
}

// submittedV2 is what a clean Submit of validSubmission (as v2, at t2) records.
func submittedV2(sub kyb.Submission) kyb.Submitted {
	e := submitted()
	e.VerificationID, e.At = v2, t2
	e.Business.LegalName, e.Business.DBA = sub.Business.LegalName, sub.Business.DBA
	e.BeneficialOwners[0].FirstName, e.BeneficialOwners[0].LastName = sub.BeneficialOwner[0].FirstName, sub.BeneficialOwner[0].LastName
	e.BeneficialOwners[1].FirstName, e.BeneficialOwners[1].LastName = sub.BeneficialOwner[1].FirstName, sub.BeneficialOwner[1].LastName
	return e
}

func submit(sub kyb.Submission) kyb.Submit {
	return kyb.Submit{VerificationID: v2, PlatformID: "plt_1", Environment: domain.Sandbox, EntityRef: "biz_1",
		VirtualAccountID: "va_1", Submission: sub, At: t2}
}

var einMismatch = []kyb.Reason{{Code: "ein_mismatch", Field: "business.ein", Message: "the EIN does not match the legal name"}}

// The states a business can be in, as the events that lead there.
var givens = map[string][]domain.Event{
	kyb.StatusNotStarted:    nil,
	kyb.StatusPending:       {submitted()},
	kyb.StatusPendingReview: {submitted(), kyb.ReviewRequested{VerificationID: v1, ETA: t1.Add(kyb.ReviewETA), At: t1}},
	kyb.StatusApproved:      {submitted(), kyb.Approved{VerificationID: v1, Method: kyb.MethodAutomatic, Reasons: []kyb.Reason{}, At: t1}},
	kyb.StatusRejected:      {submitted(), kyb.Rejected{VerificationID: v1, Method: kyb.MethodAutomatic, Reasons: einMismatch, At: t1}},
}

var stateOrder = []string{kyb.StatusNotStarted, kyb.StatusPending, kyb.StatusPendingReview, kyb.StatusApproved, kyb.StatusRejected}

func fold(events []domain.Event) kyb.State {
	var s kyb.State
	for _, e := range events {
		s = kyb.Evolve(s, e)
	}
	return s
}

// outcome is what a command must do: events, or an error.
type outcome struct {
	events     []domain.Event
	code       domain.Code
	param      string
	resourceID string
}

func events(e ...domain.Event) outcome { return outcome{events: e} }
func fails(code domain.Code) outcome   { return outcome{code: code} }
func invalid(param string) outcome     { return outcome{code: domain.CodeInvalidRequest, param: param} }
func inProgress() outcome              { return outcome{code: domain.CodeKYBInProgress, resourceID: v1} }
func alreadyApproved() outcome         { return outcome{code: domain.CodeKYBAlreadyApproved, resourceID: v1} }
func nothing() outcome                 { return outcome{events: nil} }

func TestGivensFoldToTheirStatus(t *testing.T) {
	for _, st := range stateOrder {
		if got := fold(givens[st]).Status(); got != st {
			t.Errorf("given %s: Status() = %s", st, got)
		}
	}
}

// TestDecideCommand runs every command against every state.
func TestDecideCommand(t *testing.T) {
	clean := validSubmission()
	hitName := validSubmission()
	hitName.Business.LegalName = "Ofac Test Holdings LLC"
	hitDBA := validSubmission()
	hitDBA.Business.DBA = ptr("the OFAC TEST shop")
	hitOwner := validSubmission()
	hitOwner.BeneficialOwner[1].FirstName, hitOwner.BeneficialOwner[1].LastName = "Ofac", "Test"
	hitTwo := validSubmission()
	hitTwo.Business.LegalName = "OFAC TEST Inc"
	hitTwo.BeneficialOwner[0].LastName = "ofac test"

	screened := func(sub kyb.Submission, fields ...string) outcome {
		reasons := make([]kyb.Reason, len(fields))
		for i, f := range fields {
			reasons[i] = kyb.Reason{Code: "screening_match", Field: f, Message: "the name is on the screening list"}
		}
		return events(submittedV2(sub), kyb.Rejected{VerificationID: v2, Method: kyb.MethodAutomatic, Reasons: reasons, At: t2})
	}
	// A Submit is refused in pending, pending_review and approved whatever
	// it holds; it is filed in not_started and after a rejection.
	submitRow := func(o outcome) map[string]outcome {
		return map[string]outcome{
			kyb.StatusNotStarted: o, kyb.StatusPending: inProgress(), kyb.StatusPendingReview: inProgress(),
			kyb.StatusApproved: alreadyApproved(), kyb.StatusRejected: o,
		}
	}
	eta := t2.Add(kyb.ReviewETA)
	auto := func(outcome string, reasons []kyb.Reason) kyb.Decide {
		return kyb.Decide{VerificationID: v1, Outcome: outcome, Method: kyb.MethodAutomatic, Reasons: reasons, ETA: eta, At: t2}
	}
	manual := func(outcome string, reasons []kyb.Reason) kyb.Decide {
		return kyb.Decide{VerificationID: v1, Outcome: outcome, Method: kyb.MethodManual, Reasons: reasons, At: t2}
	}
	// Automatic decisions act on pending only; elsewhere they change nothing
	// (the decider may repeat itself), and a business with no verification
	// has nothing to decide.
	autoRow := func(o outcome) map[string]outcome {
		return map[string]outcome{
			kyb.StatusNotStarted: fails(domain.CodeNotFound), kyb.StatusPending: o, kyb.StatusPendingReview: nothing(),
			kyb.StatusApproved: nothing(), kyb.StatusRejected: nothing(),
		}
	}
	// Manual decisions act on pending_review only.
	manualRow := func(o outcome) map[string]outcome {
		return map[string]outcome{
			kyb.StatusNotStarted: fails(domain.CodeNotFound), kyb.StatusPending: fails(domain.CodeInvalidState),
			kyb.StatusPendingReview: o, kyb.StatusApproved: fails(domain.CodeInvalidState), kyb.StatusRejected: fails(domain.CodeInvalidState),
		}
	}
	officer := []kyb.Reason{{Code: "documents_verified", Message: "articles of organization checked"}}

	table := []struct {
		name string
		cmd  any
		want map[string]outcome
	}{
		{"submit clean", submit(clean), submitRow(events(submittedV2(clean)))},
		{"submit screening hit on legal name", submit(hitName), submitRow(screened(hitName, "business.legal_name"))},
		{"submit screening hit on dba", submit(hitDBA), submitRow(screened(hitDBA, "business.dba"))},
		{"submit screening hit on owner", submit(hitOwner), submitRow(screened(hitOwner, "beneficial_owners[1]"))},
		{"submit screening hits on two names", submit(hitTwo), submitRow(screened(hitTwo, "business.legal_name", "beneficial_owners[0]"))},

		{"automatic approved", auto(kyb.StatusApproved, nil),
			autoRow(events(kyb.Approved{VerificationID: v1, Method: kyb.MethodAutomatic, Reasons: []kyb.Reason{}, At: t2}))},
		{"automatic rejected", auto(kyb.StatusRejected, einMismatch),
			autoRow(events(kyb.Rejected{VerificationID: v1, Method: kyb.MethodAutomatic, Reasons: einMismatch, At: t2}))},
		{"automatic pending_review", auto(kyb.StatusPendingReview, nil),
			autoRow(events(kyb.ReviewRequested{VerificationID: v1, ETA: eta, At: t2}))},
		{"automatic invalid outcome", auto("maybe", nil), autoRow(invalid("outcome"))},

		{"manual approved", manual(kyb.StatusApproved, nil),
			manualRow(events(kyb.Approved{VerificationID: v1, Method: kyb.MethodManual, Reasons: []kyb.Reason{}, At: t2}))},
		{"manual approved with reasons", manual(kyb.StatusApproved, officer),
			manualRow(events(kyb.Approved{VerificationID: v1, Method: kyb.MethodManual, Reasons: officer, At: t2}))},
		{"manual rejected", manual(kyb.StatusRejected, einMismatch),
			manualRow(events(kyb.Rejected{VerificationID: v1, Method: kyb.MethodManual, Reasons: einMismatch, At: t2}))},
		{"manual rejected without reasons", manual(kyb.StatusRejected, nil),
			manualRow(events(kyb.Rejected{VerificationID: v1, Method: kyb.MethodManual, Reasons: []kyb.Reason{}, At: t2}))},
		{"manual pending_review is not an outcome", manual(kyb.StatusPendingReview, nil), manualRow(invalid("outcome"))},
		{"manual invalid outcome", manual("approve", nil), manualRow(invalid("outcome"))},
		{"manual empty outcome", manual("", nil), manualRow(invalid("outcome"))},
	}
	for _, row := range table {
		for _, st := range stateOrder {
			want, ok := row.want[st]
			if !ok {
				t.Fatalf("%s: no expectation for %s", row.name, st)
			}
			t.Run(row.name+"/given "+st, func(t *testing.T) {
				got, err := kyb.DecideCommand(fold(givens[st]), row.cmd)
				checkOutcome(t, got, err, want)
			})
		}
	}
}

func checkOutcome(t *testing.T, got []domain.Event, err error, want outcome) {
	t.Helper()
	if want.code != "" {
		var de *domain.Error
		if !errors.As(err, &de) {
			t.Fatalf("got events %s, err %v; want %s", asJSON(got), err, want.code)
		}
		if de.Code != want.code || de.Param != want.param || de.ResourceID != want.resourceID {
			t.Fatalf("got %s param %q resource_id %q (%v); want %s param %q resource_id %q",
				de.Code, de.Param, de.ResourceID, err, want.code, want.param, want.resourceID)
		}
		if got != nil {
			t.Fatalf("error %v came with events %s", err, asJSON(got))
		}
		return
	}
	if err != nil {
		t.Fatalf("err = %v, want events %s", err, asJSON(want.events))
	}
	if len(got) != len(want.events) || (len(got) > 0 && !reflect.DeepEqual(got, want.events)) {
		t.Fatalf("events:\n got %s\nwant %s", asJSON(got), asJSON(want.events))
	}
}

func asJSON(events []domain.Event) string {
	var b strings.Builder
	for _, e := range events {
		j, _ := json.Marshal(e)
		fmt.Fprintf(&b, "\n  %s %s", e.EventType(), j)
	}
	return b.String()
}

// A decision names its verification: an unknown one is not found, and an
// older one of the business cannot be decided again.
func TestDecideTargetsTheNamedVerification(t *testing.T) {
	s := fold(givens[kyb.StatusPending])
	_, err := kyb.DecideCommand(s, kyb.Decide{VerificationID: "kyb_unknown", Outcome: kyb.StatusApproved, Method: kyb.MethodAutomatic, At: t2})
	checkOutcome(t, nil, err, fails(domain.CodeNotFound))

	// v1 rejected, v2 filed after it and pending.
	s = fold(append(append([]domain.Event{}, givens[kyb.StatusRejected]...), submittedV2(validSubmission())))
	if s.Status() != kyb.StatusPending {
		t.Fatalf("status after resubmission = %s", s.Status())
	}
	got, err := kyb.DecideCommand(s, kyb.Decide{VerificationID: v1, Outcome: kyb.StatusApproved, Method: kyb.MethodAutomatic, At: t2})
	checkOutcome(t, got, err, nothing())
	got, err = kyb.DecideCommand(s, kyb.Decide{VerificationID: v1, Outcome: kyb.StatusApproved, Method: kyb.MethodManual, At: t2})
	checkOutcome(t, got, err, fails(domain.CodeInvalidState))
	got, err = kyb.DecideCommand(s, kyb.Decide{VerificationID: v2, Outcome: kyb.StatusApproved, Method: kyb.MethodAutomatic, At: t2})
	checkOutcome(t, got, err, events(kyb.Approved{VerificationID: v2, Method: kyb.MethodAutomatic, Reasons: []kyb.Reason{}, At: t2}))

	// kyb_in_progress names the latest verification, not the first.
	_, err = kyb.DecideCommand(s, kyb.Submit{VerificationID: "kyb_3", Submission: validSubmission(), At: t2})
	checkOutcome(t, nil, err, outcome{code: domain.CodeKYBInProgress, resourceID: v2})
}

func TestDecideUnknownCommand(t *testing.T) {
	got, err := kyb.DecideCommand(kyb.State{}, "approve everything")
	if err == nil || domain.CodeOf(err) != domain.CodeInternal || got != nil {
		t.Fatalf("unknown command: %v, %v", got, err)
	}
}

func TestEvolveKeepsEveryVerification(t *testing.T) {
	rej := givens[kyb.StatusRejected]
	s := fold(append(append([]domain.Event{}, rej...), submittedV2(validSubmission()),
		kyb.ReviewRequested{VerificationID: v2, ETA: t2.Add(kyb.ReviewETA), At: t2},
		kyb.Approved{VerificationID: v2, Method: kyb.MethodManual, Reasons: []kyb.Reason{}, At: t2.Add(time.Hour)},
		kyb.Approved{VerificationID: "kyb_unknown", Method: kyb.MethodManual, At: t2})) // ignored
	if s.Status() != kyb.StatusApproved || !reflect.DeepEqual(s.Order, []string{v1, v2}) || len(s.Verifications) != 2 {
		t.Fatalf("state: status %s order %v", s.Status(), s.Order)
	}
	first, second := s.Verifications[v1], s.Verifications[v2]
	if first.Status != kyb.StatusRejected || first.Decision == nil || first.Decision.Outcome != kyb.StatusRejected ||
		!reflect.DeepEqual(first.Decision.Reasons, einMismatch) || !first.UpdatedAt.Equal(t1) || first.ReviewETA != nil {
		t.Fatalf("first verification: %+v %+v", first, first.Decision)
	}
	if second.Status != kyb.StatusApproved || second.Decision == nil || second.Decision.Method != kyb.MethodManual ||
		!second.Decision.DecidedAt.Equal(t2.Add(time.Hour)) || second.ReviewETA == nil || !second.ReviewETA.Equal(t2.Add(kyb.ReviewETA)) {
		t.Fatalf("second verification: %+v %+v", second, second.Decision)
	}
}

// Events survive their JSON round trip (they are stored as JSON).
func TestEventsRoundTrip(t *testing.T) {
	for _, e := range []domain.Event{submitted(), givens[kyb.StatusPendingReview][1], givens[kyb.StatusApproved][1], givens[kyb.StatusRejected][1]} {
		data, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		back, err := domain.DecodeEvent(e.EventType(), data)
		if err != nil {
			t.Fatalf("decode %s: %v", e.EventType(), err)
		}
		if !reflect.DeepEqual(back, e) {
			t.Fatalf("%s round trip:\n got %#v\nwant %#v", e.EventType(), back, e)
		}
	}
}

// ---- masking ----------------------------------------------------------------

func TestMaskKeepsOnlyTheEINLast4AndNoSSN(t *testing.T) {
	for _, ein := range []string{"73-8462951", "738462951"} {
		s := validSubmission()
		s.Business.EIN = ein
		s.BeneficialOwner[0].SSNLast4 = "9876"
		s.BeneficialOwner[1].SSNLast4 = "5432"
		mb, mo := s.Mask()
		if mb.EIN != "**-***2951" {
			t.Errorf("%s: masked ein = %q", ein, mb.EIN)
		}
		for i, o := range mo {
			if o.SSNLast4 != "****" {
				t.Errorf("%s: owner %d ssn_last4 = %q", ein, i, o.SSNLast4)
			}
		}
		if mo[0].OwnershipPercentage != "60" || mo[0].FirstName != "Jane" || mo[1].DateOfBirth != "1975-07-04" || !mo[0].IsControlPerson {
			t.Errorf("%s: masked owners lost their fields: %+v", ein, mo)
		}
		if mb.LegalName != s.Business.LegalName || mb.Address != s.Business.Address || *mb.Website != *s.Business.Website {
			t.Errorf("%s: masked business lost its fields: %+v", ein, mb)
		}

		// The masked form, and the event a submission records, carry none
		// of the hidden digits.
		evs, err := kyb.DecideCommand(kyb.State{}, kyb.Submit{VerificationID: v2, PlatformID: "plt_1", Environment: domain.Sandbox,
			EntityRef: "biz_1", VirtualAccountID: "va_1", Submission: s, At: t2})
		if err != nil || len(evs) != 1 {
			t.Fatalf("submit: %v %v", evs, err)
		}
		for what, v := range map[string]any{"masked business": mb, "masked owners": mo, "submitted event": evs[0]} {
			j, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			for _, secret := range []string{"738462951", "73-8462951", "73846", "9876", "5432"} {
				if strings.Contains(string(j), secret) {
					t.Errorf("%s of EIN %s contains %q: %s", what, ein, secret, j)
				}
			}
		}
		if sub := evs[0].(kyb.Submitted); sub.EINLast4 != "2951" || sub.Business.EIN != "**-***2951" {
			t.Errorf("submitted: ein_last4 %q ein %q", sub.EINLast4, sub.Business.EIN)
		}
	}
}

// The check above must be able to fail: the unmasked submission does
// contain the digits.
func TestUnmaskedSubmissionWouldBeCaught(t *testing.T) {
	s := validSubmission()
	s.Business.EIN = "73-8462951"
	s.BeneficialOwner[0].SSNLast4 = "9876"
	j, _ := json.Marshal(s)
	if !strings.Contains(string(j), "73-8462951") || !strings.Contains(string(j), "9876") {
		t.Fatalf("the raw submission should show its digits: %s", j)
	}
}

// ---- verifiers --------------------------------------------------------------

func TestSandboxVerifier(t *testing.T) {
	now := time.Date(2025, 6, 15, 10, 30, 0, 0, time.UTC)
	for _, c := range []struct {
		last4 string
		want  kyb.Decide
	}{
		{"0000", kyb.Decide{VerificationID: v1, Outcome: kyb.StatusRejected, Method: kyb.MethodAutomatic, Reasons: einMismatch, At: now}},
		{"1111", kyb.Decide{VerificationID: v1, Outcome: kyb.StatusPendingReview, Method: kyb.MethodAutomatic, ETA: now.Add(24 * time.Hour), At: now}},
		{"6789", kyb.Decide{VerificationID: v1, Outcome: kyb.StatusApproved, Method: kyb.MethodAutomatic, At: now}},
		{"0001", kyb.Decide{VerificationID: v1, Outcome: kyb.StatusApproved, Method: kyb.MethodAutomatic, At: now}},
		{"1110", kyb.Decide{VerificationID: v1, Outcome: kyb.StatusApproved, Method: kyb.MethodAutomatic, At: now}},
		{"2222", kyb.Decide{VerificationID: v1, Outcome: kyb.StatusApproved, Method: kyb.MethodAutomatic, At: now}},
	} {
		sub := submitted()
		sub.EINLast4 = c.last4
		got := kyb.SandboxVerifier{}.Verify(sub, now)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("sandbox %s: got %+v, want %+v", c.last4, got, c.want)
		}
		// What the verifier decides is what DecideCommand records on a
		// pending verification.
		evs, err := kyb.DecideCommand(fold([]domain.Event{sub}), got)
		if err != nil || len(evs) != 1 {
			t.Fatalf("sandbox %s: decide: %v %v", c.last4, evs, err)
		}
		wantType := map[string]string{kyb.StatusApproved: "kyb.approved", kyb.StatusRejected: "kyb.rejected",
			kyb.StatusPendingReview: "kyb.review_requested"}[c.want.Outcome]
		if evs[0].EventType() != wantType {
			t.Errorf("sandbox %s: event %s, want %s", c.last4, evs[0].EventType(), wantType)
		}
	}
}

func TestManualReviewVerifierSendsEverythingToReview(t *testing.T) {
	now := time.Date(2025, 6, 15, 10, 30, 0, 0, time.UTC)
	for _, last4 := range []string{"0000", "1111", "6789"} {
		sub := submitted()
		sub.EINLast4, sub.Environment = last4, domain.Live
		got := kyb.ManualReviewVerifier{}.Verify(sub, now)
		want := kyb.Decide{VerificationID: v1, Outcome: kyb.StatusPendingReview, Method: kyb.MethodAutomatic, ETA: now.Add(kyb.ReviewETA), At: now}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("live %s: got %+v, want %+v", last4, got, want)
		}
	}
	if kyb.ReviewETA != 24*time.Hour {
		t.Errorf("ReviewETA = %v, want 24h", kyb.ReviewETA)
	}
}

func TestVerifierFor(t *testing.T) {
	if _, ok := kyb.VerifierFor(domain.Sandbox).(kyb.SandboxVerifier); !ok {
		t.Errorf("sandbox verifier is %T", kyb.VerifierFor(domain.Sandbox))
	}
	if _, ok := kyb.VerifierFor(domain.Live).(kyb.ManualReviewVerifier); !ok {
		t.Errorf("live verifier is %T", kyb.VerifierFor(domain.Live))
	}
}

// One stream per (platform, environment, entity_ref).
func TestStreamID(t *testing.T) {
	base := kyb.StreamID("plt_1", domain.Sandbox, "biz_1")
	if base != kyb.StreamID("plt_1", domain.Sandbox, "biz_1") {
		t.Fatal("StreamID is not stable")
	}
	for name, other := range map[string]string{
		"platform":    kyb.StreamID("plt_2", domain.Sandbox, "biz_1"),
		"environment": kyb.StreamID("plt_1", domain.Live, "biz_1"),
		"entity_ref":  kyb.StreamID("plt_1", domain.Sandbox, "biz_2"),
	} {
		if other == base {
			t.Errorf("another %s shares the stream %s", name, base)
		}
	}
	if !strings.HasPrefix(base, kyb.StreamType+"-") || strings.Contains(base, "biz_1") {
		t.Errorf("stream id %q", base)
	}
}
