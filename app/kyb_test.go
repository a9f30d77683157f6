package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/kyb"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
	"github.com/opentreasury/treasury/projections"
	"github.com/opentreasury/treasury/projections/queries"
)

// ---- helpers ------------------------------------------------------------------

func kybPtr[T any](v T) *T { return &v }

// kybSubmission is a valid submission with the given EIN and first owner's
// SSN last 4 digits.
func kybSubmission(ein, ssn string) kyb.Submission {
	addr := func(line1 string) kyb.Address {
		return kyb.Address{Line1: line1, City: "Wilmington", State: "DE", PostalCode: "19801", Country: "US"}
	}
	return kyb.Submission{
		Business: kyb.Business{LegalName: "Acme Widgets LLC", DBA: kybPtr("Acme"), EIN: ein, EntityType: "llc",
			FormationDate: "2015-03-01", FormationState: "DE", Address: addr("100 Main Street"),
			Website: kybPtr("https://acme.example.com"), NAICSCode: kybPtr("522110"), Phone: kybPtr("+13025550100")},
		BeneficialOwner: []kyb.Owner{
			{FirstName: "Jane", LastName: "Doe", DateOfBirth: "1980-01-31", SSNLast4: ssn,
				OwnershipPercentage: decimal.RequireFromString("75.5"), IsControlPerson: true, Title: kybPtr("CEO"), Address: addr("1 Elm Street")},
			{FirstName: "John", LastName: "Roe", DateOfBirth: "1975-07-04", SSNLast4: "5555",
				OwnershipPercentage: decimal.RequireFromString("24.5"), Address: addr("2 Oak Avenue")},
		},
	}
}

// openFor opens a checking account of entityRef for the caller.
func (e *env) openFor(c app.Caller, entityRef string) string {
	e.t.Helper()
	res, err := e.a.OpenVirtualAccount(e.ctx, app.Meta{}, nil, c, app.OpenVirtualAccount{PlatformID: c.PlatformID, EntityRef: entityRef, Type: "checking"})
	if err != nil {
		e.t.Fatalf("open virtual account of %s: %v", entityRef, err)
	}
	return res.ID
}

// live enables the live environment of a sandbox caller's platform.
func (e *env) live(c app.Caller) app.Caller {
	e.t.Helper()
	if _, err := e.a.EnableLive(e.ctx, app.Meta{}, c.PlatformID); err != nil {
		e.t.Fatalf("enable live: %v", err)
	}
	return app.Caller{PlatformID: c.PlatformID, Environment: domain.Live}
}

// submitOK files a verification that must be accepted.
func (e *env) submitOK(c app.Caller, va string, sub kyb.Submission) string {
	e.t.Helper()
	res, err := e.a.SubmitKYB(e.ctx, app.Meta{RequestID: "req_kyb"}, nil, c, va, sub)
	if err != nil {
		e.t.Fatalf("submit kyb for %s: %v", va, err)
	}
	if !domain.HasPrefix(res.ID, domain.PrefixKYB) {
		e.t.Fatalf("verification id %q", res.ID)
	}
	return res.ID
}

// decide runs the KYB decider up to the head of the log, as the server's
// subscriber does.
func (e *env) decide() {
	e.t.Helper()
	runDecider(e.t, e.ctx, e.a)
}

func runDecider(t testing.TB, ctx context.Context, a *app.App) {
	t.Helper()
	head, err := eventstore.Head(ctx, a.Pool)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := a.KYBDecider(nil).CatchUpTo(ctx, head); err != nil {
		t.Fatalf("kyb decider: %v", err)
	}
}

func (e *env) kyb(c app.Caller, id string) queries.KYBView {
	e.t.Helper()
	v, err := queries.GetKYB(e.ctx, e.pool, queries.Scope{PlatformID: c.PlatformID, Environment: c.Environment}, id)
	if err != nil {
		e.t.Fatalf("get kyb %s: %v", id, err)
	}
	// The projection shows what the log says.
	s := e.kybState(c, v.EntityRef)
	ver := s.Verifications[id]
	if ver == nil {
		e.t.Fatalf("verification %s is not in the log of %s", id, v.EntityRef)
	}
	if got, want := mustJSON(e.t, v), mustJSON(e.t, queries.NewKYBView(ver)); got != want {
		e.t.Fatalf("kyb_verifications differs from the log:\nprojection %s\nlog        %s", got, want)
	}
	return v
}

// kybState folds a business's stream.
func (e *env) kybState(c app.Caller, entityRef string) kyb.State {
	e.t.Helper()
	recs, _, err := eventstore.Load(e.ctx, e.pool, kyb.StreamID(c.PlatformID, c.Environment, entityRef))
	if err != nil {
		e.t.Fatal(err)
	}
	var s kyb.State
	for i := range recs {
		ev, err := recs[i].Decode()
		if err != nil {
			e.t.Fatal(err)
		}
		s = kyb.Evolve(s, ev)
	}
	return s
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// kybStatus is a virtual account's kyb_status as GET shows it.
func (e *env) kybStatus(c app.Caller, va string) string {
	e.t.Helper()
	v, err := queries.GetVirtualAccount(e.ctx, e.pool, queries.Scope{PlatformID: c.PlatformID, Environment: c.Environment}, va)
	if err != nil {
		e.t.Fatalf("get virtual account %s: %v", va, err)
	}
	return v.KYBStatus
}

func (e *env) wantKYBStatus(c app.Caller, want string, vas ...string) {
	e.t.Helper()
	for _, va := range vas {
		if got := e.kybStatus(c, va); got != want {
			e.t.Fatalf("kyb_status of %s = %s, want %s", va, got, want)
		}
	}
}

func (e *env) eventCount() int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM events`).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// kybEventTypes lists the event types of a business's stream.
func (e *env) kybEventTypes(c app.Caller, entityRef string) []string {
	e.t.Helper()
	recs, _, err := eventstore.Load(e.ctx, e.pool, kyb.StreamID(c.PlatformID, c.Environment, entityRef))
	if err != nil {
		e.t.Fatal(err)
	}
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Type
	}
	return out
}

func wantKYBErr(t testing.TB, err error, code domain.Code, resourceID string) {
	t.Helper()
	de := wantCode(t, err, code)
	if de.ResourceID != resourceID {
		t.Fatalf("%s: resource_id = %q, want %q", code, de.ResourceID, resourceID)
	}
}

func wantDecision(t testing.TB, v queries.KYBView, outcome, method string, reasons []kyb.Reason) {
	t.Helper()
	if v.Status != outcome || v.Decision == nil {
		t.Fatalf("%s: status %s decision %+v, want %s", v.ID, v.Status, v.Decision, outcome)
	}
	d := v.Decision
	if d.Outcome != outcome || d.Method != method || d.DecidedAt.IsZero() {
		t.Fatalf("%s: decision %+v, want %s by %s", v.ID, d, outcome, method)
	}
	if mustJSON(t, d.Reasons) != mustJSON(t, reasons) {
		t.Fatalf("%s: reasons %s, want %s", v.ID, mustJSON(t, d.Reasons), mustJSON(t, reasons))
	}
}

var (
	einMismatch = []kyb.Reason{{Code: "ein_mismatch", Message: "the EIN does not match the legal name", Field: "business.ein"}}
	noReasons   = []kyb.Reason{}
)

func manualDecision(id, outcome string, reasons ...kyb.Reason) kyb.Decide {
	return kyb.Decide{VerificationID: id, Outcome: outcome, Method: kyb.MethodManual, Reasons: reasons}
}

// publicEvents lists a platform's public event types in order, with their data.
func (e *env) publicEvents(c app.Caller) (types []string, data []json.RawMessage) {
	e.t.Helper()
	rows, err := e.pool.Query(e.ctx, `SELECT type, data FROM public_events WHERE platform_id = $1 AND environment = $2 ORDER BY seq`,
		c.PlatformID, c.Environment.String())
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var typ string
		var d json.RawMessage
		if err := rows.Scan(&typ, &d); err != nil {
			e.t.Fatal(err)
		}
		types, data = append(types, typ), append(data, d)
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return types, data
}

// ---- 4. sandbox decisions by the subscriber -----------------------------------------

func TestKYBSandboxDecisions(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Acme")
	approve, reject, review := e.openFor(c, "biz_approve"), e.openFor(c, "biz_reject"), e.openFor(c, "biz_review")

	idApprove := e.submitOK(c, approve, kybSubmission("12-3456789", "4321"))
	idReject := e.submitOK(c, reject, kybSubmission("123450000", "4321"))
	idReview := e.submitOK(c, review, kybSubmission("12-3451111", "4321"))

	// The request does not decide: all three are pending, with only their
	// submission in the log, until the decider runs.
	for ref, id := range map[string]string{"biz_approve": idApprove, "biz_reject": idReject, "biz_review": idReview} {
		v := e.kyb(c, id)
		if v.Status != kyb.StatusPending || v.Decision != nil || v.Review != nil || v.EntityRef != ref || v.Object != "kyb_verification" ||
			v.Environment != "sandbox" || v.CreatedAt.IsZero() || !v.UpdatedAt.Equal(v.CreatedAt.Time) {
			t.Fatalf("%s after submission: %s", ref, mustJSON(t, v))
		}
		if got := e.kybEventTypes(c, ref); strings.Join(got, ",") != "kyb.submitted" {
			t.Fatalf("%s: events %v before the decider ran", ref, got)
		}
	}
	e.wantKYBStatus(c, kyb.StatusPending, approve, reject, review)

	before := time.Now().Truncate(time.Microsecond)
	e.decide()
	after := time.Now()

	wantDecision(t, e.kyb(c, idApprove), kyb.StatusApproved, kyb.MethodAutomatic, noReasons)
	wantDecision(t, e.kyb(c, idReject), kyb.StatusRejected, kyb.MethodAutomatic, einMismatch)
	v := e.kyb(c, idReview)
	if v.Status != kyb.StatusPendingReview || v.Decision != nil || v.Review == nil {
		t.Fatalf("1111: %s", mustJSON(t, v))
	}
	if eta := v.Review.ETA.Time; eta.Before(before.Add(24*time.Hour)) || eta.After(after.Add(24*time.Hour)) {
		t.Fatalf("review.eta = %v, want now+24h in [%v, %v]", eta, before.Add(24*time.Hour), after.Add(24*time.Hour))
	}
	e.wantKYBStatus(c, kyb.StatusApproved, approve)
	e.wantKYBStatus(c, kyb.StatusRejected, reject)
	e.wantKYBStatus(c, kyb.StatusPendingReview, review)

	// The decisions are the decider's, caused by the submission.
	var actor, causation, submittedID string
	if err := e.pool.QueryRow(e.ctx, `SELECT d.metadata->>'actor', d.metadata->>'causation_id', s.event_id
        FROM events d JOIN events s ON s.stream_id = d.stream_id AND s.event_type = 'kyb.submitted'
        WHERE d.event_type = 'kyb.approved' AND d.stream_id = $1`, kyb.StreamID(c.PlatformID, c.Environment, "biz_approve")).
		Scan(&actor, &causation, &submittedID); err != nil {
		t.Fatal(err)
	}
	if actor != "kyb_decider" || causation != submittedID {
		t.Fatalf("decision metadata: actor %q causation %q, want kyb_decider and %q", actor, causation, submittedID)
	}

	// The sandbox simulation decides the review (the platform's own key).
	if err := e.a.DecideKYB(e.ctx, app.Meta{}, &c, manualDecision(idReview, kyb.StatusApproved)); err != nil {
		t.Fatalf("simulate decision: %v", err)
	}
	v = e.kyb(c, idReview)
	wantDecision(t, v, kyb.StatusApproved, kyb.MethodManual, noReasons)
	if v.Review == nil {
		t.Fatalf("the decided review lost its eta: %s", mustJSON(t, v))
	}
	e.wantKYBStatus(c, kyb.StatusApproved, review)

	// The public events: one per decision, with the verification as it was.
	e.sync()
	types, data := e.publicEvents(c)
	var kybTypes []string
	for i, typ := range types {
		if !strings.HasPrefix(typ, "kyb.") {
			continue
		}
		kybTypes = append(kybTypes, typ)
		var ev struct {
			Object queries.KYBView `json:"object"`
		}
		if err := json.Unmarshal(data[i], &ev); err != nil {
			t.Fatal(err)
		}
		if "kyb."+ev.Object.Status != typ {
			t.Fatalf("%s carries a verification in status %s", typ, ev.Object.Status)
		}
		if typ == "kyb.pending_review" && (ev.Object.Review == nil || ev.Object.ID != idReview) {
			t.Fatalf("kyb.pending_review without review.eta: %s", data[i])
		}
	}
	counts := map[string]int{}
	for _, typ := range kybTypes {
		counts[typ]++
	}
	if counts["kyb.approved"] != 2 || counts["kyb.rejected"] != 1 || counts["kyb.pending_review"] != 1 || len(kybTypes) != 4 {
		t.Fatalf("public kyb events %v", kybTypes)
	}
}

// In the server the decider is woken by the commit and decides without
// anyone polling it: its poll here is an hour, so only the wake-up can
// bring the decision within the bound. (API.md §6 asks for a decision within a second; the
// figure is logged here, not asserted: timing targets are measured, not
// unit-tested, and a loaded machine would make such a test flaky.)
func TestKYBDecidedByTheWokenDecider(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Acme")
	va := e.openFor(c, "biz_1")
	notifier := eventstore.NewNotifier(e.pool, e.a.Log)
	e.a.Notifier = notifier
	ctx, cancel := context.WithCancel(e.ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); notifier.Run(ctx) }()
	decider := e.a.KYBDecider(notifier.Subscribe())
	decider.PollInterval = time.Hour // only the commit's wake-up can bring the decision in time
	go func() { defer wg.Done(); decider.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })

	id := e.submitOK(c, va, kybSubmission("98-7654321", "4321"))
	start := time.Now()
	waitFor(t, "the automatic decision", 30*time.Second, func() bool {
		v, err := queries.GetKYB(e.ctx, e.pool, queries.Scope{PlatformID: c.PlatformID, Environment: c.Environment}, id)
		return err == nil && v.Status == kyb.StatusApproved
	})
	t.Logf("decided %v after the submission returned (target: within 1 s)", time.Since(start))
}

// ---- 5. live mode ---------------------------------------------------------------

func TestKYBLiveGoesToManualReview(t *testing.T) {
	e := newEnv(t)
	sandbox := e.platform("Acme")
	live := e.live(sandbox)
	vaA, vaB, vaC := e.openFor(live, "biz_a"), e.openFor(live, "biz_b"), e.openFor(live, "biz_c")

	// Endings that the sandbox would approve or reject at once: live sends
	// every submission that passes screening to the review queue.
	idA := e.submitOK(live, vaA, kybSubmission("12-3456789", "4321"))
	idB := e.submitOK(live, vaB, kybSubmission("123450000", "4321"))
	before := time.Now().Truncate(time.Microsecond)
	e.decide()
	after := time.Now()
	for _, id := range []string{idA, idB} {
		v := e.kyb(live, id)
		if v.Status != kyb.StatusPendingReview || v.Decision != nil || v.Review == nil || v.Environment != "live" {
			t.Fatalf("live %s after the decider: %s", id, mustJSON(t, v))
		}
		if eta := v.Review.ETA.Time; eta.Before(before.Add(24*time.Hour)) || eta.After(after.Add(24*time.Hour)) {
			t.Fatalf("review.eta = %v", eta)
		}
	}
	e.wantKYBStatus(live, kyb.StatusPendingReview, vaA, vaB)
	_, err := e.a.SubmitKYB(e.ctx, app.Meta{}, nil, live, vaA, kybSubmission("12-3456789", "4321"))
	wantKYBErr(t, err, domain.CodeKYBInProgress, idA)

	// The sandbox side of the platform cannot see or decide live verifications.
	wantCode(t, e.a.DecideKYB(e.ctx, app.Meta{}, &sandbox, manualDecision(idA, kyb.StatusApproved)), domain.CodeNotFound)
	if _, err := queries.GetKYB(e.ctx, e.pool, queries.Scope{PlatformID: sandbox.PlatformID, Environment: domain.Sandbox}, idA); domain.CodeOf(err) != domain.CodeNotFound {
		t.Fatalf("sandbox reads a live verification: %v", err)
	}

	// The operator decides.
	if err := e.a.DecideKYB(e.ctx, operatorMeta("req_op"), nil, manualDecision(idA, kyb.StatusApproved)); err != nil {
		t.Fatal(err)
	}
	docs := kyb.Reason{Code: "documents_missing", Message: "no articles of organization"}
	if err := e.a.DecideKYB(e.ctx, operatorMeta("req_op"), nil, manualDecision(idB, kyb.StatusRejected, docs)); err != nil {
		t.Fatal(err)
	}
	wantDecision(t, e.kyb(live, idA), kyb.StatusApproved, kyb.MethodManual, noReasons)
	wantDecision(t, e.kyb(live, idB), kyb.StatusRejected, kyb.MethodManual, []kyb.Reason{docs})
	e.wantKYBStatus(live, kyb.StatusApproved, vaA)
	e.wantKYBStatus(live, kyb.StatusRejected, vaB)
	// A decided verification cannot be decided again.
	wantCode(t, e.a.DecideKYB(e.ctx, app.Meta{}, nil, manualDecision(idA, kyb.StatusRejected)), domain.CodeInvalidState)

	// Screening applies in live mode too, at once.
	hit := kybSubmission("12-3456789", "4321")
	hit.BeneficialOwner[0].LastName = "OFAC TEST"
	res, err := e.a.SubmitKYB(e.ctx, app.Meta{}, nil, live, vaC, hit)
	wantKYBErr(t, err, domain.CodeComplianceRejected, res.ID)
	wantDecision(t, e.kyb(live, res.ID), kyb.StatusRejected, kyb.MethodAutomatic,
		[]kyb.Reason{{Code: "screening_match", Message: "the name is on the screening list", Field: "beneficial_owners[0]"}})
}

// ---- 4. screening -----------------------------------------------------------------

func TestKYBScreeningHitIsRejectedAtOnce(t *testing.T) {
	for _, c := range []struct {
		name  string
		edit  func(s *kyb.Submission)
		field string
	}{
		{"legal name", func(s *kyb.Submission) { s.Business.LegalName = "Ofac Test Holdings LLC" }, "business.legal_name"},
		{"dba", func(s *kyb.Submission) { s.Business.DBA = kybPtr("OFAC TEST Shop") }, "business.dba"},
		{"owner", func(s *kyb.Submission) { s.BeneficialOwner[1].FirstName = "ofac test" }, "beneficial_owners[1]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			p := e.platform("Acme")
			va := e.openFor(p, "biz_1")
			sub := kybSubmission("12-3456789", "4321")
			c.edit(&sub)
			res, err := e.a.SubmitKYB(e.ctx, app.Meta{}, nil, p, va, sub)
			if !domain.HasPrefix(res.ID, domain.PrefixKYB) {
				t.Fatalf("result id %q", res.ID)
			}
			wantKYBErr(t, err, domain.CodeComplianceRejected, res.ID)

			// Recorded as rejected, with the hit as the reason, before any
			// decider ran; submission and rejection commit together.
			reasons := []kyb.Reason{{Code: "screening_match", Message: "the name is on the screening list", Field: c.field}}
			wantDecision(t, e.kyb(p, res.ID), kyb.StatusRejected, kyb.MethodAutomatic, reasons)
			e.wantKYBStatus(p, kyb.StatusRejected, va)
			if got := strings.Join(e.kybEventTypes(p, "biz_1"), ","); got != "kyb.submitted,kyb.rejected" {
				t.Fatalf("events %s", got)
			}
			if n := count(t, e.ctx, e.pool, `SELECT count(DISTINCT transaction_id) FROM events WHERE stream_id = $1`,
				kyb.StreamID(p.PlatformID, p.Environment, "biz_1")); n != 1 {
				t.Fatalf("submission and rejection in %d transactions", n)
			}

			// The decider leaves it alone.
			n := e.eventCount()
			e.decide()
			if e.eventCount() != n {
				t.Fatal("the decider acted on a screened-out verification")
			}
			wantDecision(t, e.kyb(p, res.ID), kyb.StatusRejected, kyb.MethodAutomatic, reasons)

			// A clean submission is allowed afterwards and decided as usual.
			id2 := e.submitOK(p, va, kybSubmission("12-3456789", "4321"))
			if id2 == res.ID {
				t.Fatal("the resubmission reused the id")
			}
			e.wantKYBStatus(p, kyb.StatusPending, va)
			e.decide()
			wantDecision(t, e.kyb(p, id2), kyb.StatusApproved, kyb.MethodAutomatic, noReasons)
			e.wantKYBStatus(p, kyb.StatusApproved, va)
			wantDecision(t, e.kyb(p, res.ID), kyb.StatusRejected, kyb.MethodAutomatic, reasons)

			e.sync()
			types, _ := e.publicEvents(p)
			if got := strings.Join(filterPrefix(types, "kyb."), ","); got != "kyb.rejected,kyb.approved" {
				t.Fatalf("public kyb events %s", got)
			}
		})
	}
}

func filterPrefix(ss []string, prefix string) []string {
	var out []string
	for _, s := range ss {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// ---- 3. transitions ----------------------------------------------------------------

func TestKYBInProgressAndAlreadyApproved(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Acme")
	va1, va2 := e.openFor(c, "biz_1"), e.openFor(c, "biz_1")

	id := e.submitOK(c, va1, kybSubmission("12-3451111", "4321"))
	// pending: any account of the business is refused, even with a screening hit.
	hit := kybSubmission("12-3456789", "4321")
	hit.Business.LegalName = "OFAC TEST"
	for _, va := range []string{va1, va2} {
		for _, sub := range []kyb.Submission{kybSubmission("12-3456789", "4321"), hit} {
			_, err := e.a.SubmitKYB(e.ctx, app.Meta{}, nil, c, va, sub)
			wantKYBErr(t, err, domain.CodeKYBInProgress, id)
		}
	}
	// A manual decision needs pending_review.
	wantCode(t, e.a.DecideKYB(e.ctx, app.Meta{}, nil, manualDecision(id, kyb.StatusApproved)), domain.CodeInvalidState)
	wantCode(t, e.a.DecideKYB(e.ctx, app.Meta{}, &c, manualDecision(id, kyb.StatusRejected)), domain.CodeInvalidState)

	e.decide() // 1111: pending_review
	e.wantKYBStatus(c, kyb.StatusPendingReview, va1, va2)
	for _, va := range []string{va1, va2} {
		_, err := e.a.SubmitKYB(e.ctx, app.Meta{}, nil, c, va, kybSubmission("12-3456789", "4321"))
		wantKYBErr(t, err, domain.CodeKYBInProgress, id)
	}
	wantCode(t, e.a.DecideKYB(e.ctx, app.Meta{}, nil, manualDecision(id, kyb.StatusPendingReview)), domain.CodeInvalidRequest)
	wantCode(t, e.a.DecideKYB(e.ctx, app.Meta{}, nil, manualDecision(id, "accept")), domain.CodeInvalidRequest)

	if err := e.a.DecideKYB(e.ctx, operatorMeta("req_op"), nil, manualDecision(id, kyb.StatusApproved)); err != nil {
		t.Fatal(err)
	}
	e.wantKYBStatus(c, kyb.StatusApproved, va1, va2)
	for _, va := range []string{va1, va2} {
		_, err := e.a.SubmitKYB(e.ctx, app.Meta{}, nil, c, va, kybSubmission("12-3456789", "4321"))
		wantKYBErr(t, err, domain.CodeKYBAlreadyApproved, id)
		_, err = e.a.SubmitKYB(e.ctx, app.Meta{}, nil, c, va, hit)
		wantKYBErr(t, err, domain.CodeKYBAlreadyApproved, id)
	}
	wantCode(t, e.a.DecideKYB(e.ctx, app.Meta{}, nil, manualDecision(id, kyb.StatusRejected)), domain.CodeInvalidState)
	// Running the decider again changes nothing.
	n := e.eventCount()
	e.decide()
	if e.eventCount() != n {
		t.Fatal("the decider changed an approved business")
	}
	if got := strings.Join(e.kybEventTypes(c, "biz_1"), ","); got != "kyb.submitted,kyb.review_requested,kyb.approved" {
		t.Fatalf("events %s", got)
	}
	if n := count(t, e.ctx, e.pool, `SELECT count(*) FROM kyb_verifications`); n != 1 {
		t.Fatalf("%d verifications stored", n)
	}
}

func TestKYBResubmissionAfterRejection(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Acme")
	va1, va2 := e.openFor(c, "biz_1"), e.openFor(c, "biz_1")
	first := e.submitOK(c, va1, kybSubmission("12-3450000", "4321"))
	e.decide()
	e.wantKYBStatus(c, kyb.StatusRejected, va1, va2)

	// Refiled through the other account of the business, rejected again.
	second := e.submitOK(c, va2, kybSubmission("12-3450000", "4321"))
	e.wantKYBStatus(c, kyb.StatusPending, va1, va2)
	e.decide()
	e.wantKYBStatus(c, kyb.StatusRejected, va1, va2)

	// A review rejected by the operator may be refiled too.
	third := e.submitOK(c, va1, kybSubmission("12-3451111", "4321"))
	e.decide()
	if err := e.a.DecideKYB(e.ctx, app.Meta{}, nil, manualDecision(third, kyb.StatusRejected)); err != nil {
		t.Fatal(err)
	}
	e.wantKYBStatus(c, kyb.StatusRejected, va1, va2)

	fourth := e.submitOK(c, va1, kybSubmission("12-3456789", "4321"))
	e.decide()
	e.wantKYBStatus(c, kyb.StatusApproved, va1, va2)
	for id, want := range map[string]string{first: kyb.StatusRejected, second: kyb.StatusRejected, third: kyb.StatusRejected, fourth: kyb.StatusApproved} {
		if v := e.kyb(c, id); v.Status != want {
			t.Fatalf("%s: %s, want %s", id, v.Status, want)
		}
	}
	if v := e.kyb(c, second); v.VirtualAccountID != va2 {
		t.Fatalf("second verification names %s, want %s", v.VirtualAccountID, va2)
	}
	list, err := queries.ListKYB(e.ctx, e.pool, queries.Scope{PlatformID: c.PlatformID, Environment: c.Environment},
		queries.KYBFilter{Status: kyb.StatusRejected}, queries.Page{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Data) != 3 || list.Data[0].ID != third {
		t.Fatalf("rejected verifications: %s", mustJSON(t, list))
	}
}

// ---- 2. one status per business --------------------------------------------------------

func TestKYBStatusIsSharedByTheAccountsOfABusiness(t *testing.T) {
	e := newEnv(t)
	p := e.platform("Acme")
	q := e.platform("Other")
	va1, va2 := e.openFor(p, "biz_shared"), e.openFor(p, "biz_shared")
	other := e.openFor(p, "biz_other")
	elsewhere := e.openFor(q, "biz_shared")
	pLive := e.live(p)
	liveVA := e.openFor(pLive, "biz_shared")
	e.wantKYBStatus(p, kyb.StatusNotStarted, va1, va2, other)
	e.wantKYBStatus(q, kyb.StatusNotStarted, elsewhere)

	id := e.submitOK(p, va1, kybSubmission("12-3456789", "4321"))
	e.wantKYBStatus(p, kyb.StatusPending, va1, va2)
	e.wantKYBStatus(p, kyb.StatusNotStarted, other)
	e.wantKYBStatus(q, kyb.StatusNotStarted, elsewhere)

	e.decide()
	e.wantKYBStatus(p, kyb.StatusApproved, va1, va2)
	e.wantKYBStatus(p, kyb.StatusNotStarted, other)
	e.wantKYBStatus(q, kyb.StatusNotStarted, elsewhere)
	e.wantKYBStatus(pLive, kyb.StatusNotStarted, liveVA)

	// An account opened after the approval is approved at once.
	va3 := e.openFor(p, "biz_shared")
	e.wantKYBStatus(p, kyb.StatusApproved, va3)
	list, err := queries.ListVirtualAccounts(e.ctx, e.pool, queries.Scope{PlatformID: p.PlatformID, Environment: p.Environment},
		queries.AccountFilter{EntityRef: "biz_shared"}, queries.Page{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Data) != 3 {
		t.Fatalf("%d accounts of biz_shared", len(list.Data))
	}
	for _, v := range list.Data {
		if v.KYBStatus != kyb.StatusApproved {
			t.Fatalf("listed %s with kyb_status %s", v.ID, v.KYBStatus)
		}
	}
	// The business is approved: filing through any of its accounts is refused.
	_, err = e.a.SubmitKYB(e.ctx, app.Meta{}, nil, p, va3, kybSubmission("12-3456789", "4321"))
	wantKYBErr(t, err, domain.CodeKYBAlreadyApproved, id)

	// The same entity_ref elsewhere is another business.
	rej := e.submitOK(q, elsewhere, kybSubmission("12-3450000", "4321"))
	e.submitOK(pLive, liveVA, kybSubmission("12-3456789", "4321"))
	e.decide()
	if v := e.kyb(q, rej); v.Status != kyb.StatusRejected {
		t.Fatalf("other platform's verification: %s", v.Status)
	}
	e.wantKYBStatus(q, kyb.StatusRejected, elsewhere)
	e.wantKYBStatus(pLive, kyb.StatusPendingReview, liveVA)
	e.wantKYBStatus(p, kyb.StatusApproved, va1, va2, va3)
	e.wantKYBStatus(p, kyb.StatusNotStarted, other)

	// virtual_account.created shows the status of the business at opening.
	e.sync()
	types, data := e.publicEvents(p)
	got := map[string]string{}
	for i, typ := range types {
		if typ != "virtual_account.created" {
			continue
		}
		var ev struct {
			Object queries.VirtualAccountView `json:"object"`
		}
		if err := json.Unmarshal(data[i], &ev); err != nil {
			t.Fatal(err)
		}
		got[ev.Object.ID] = ev.Object.KYBStatus
	}
	want := map[string]string{va1: kyb.StatusNotStarted, va2: kyb.StatusNotStarted, other: kyb.StatusNotStarted, va3: kyb.StatusApproved}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("virtual_account.created kyb_status: %v, want %v", got, want)
	}
}

func TestKYBSubmitRefusesBadRequestsAndOthersAccounts(t *testing.T) {
	e := newEnv(t)
	p := e.platform("Acme")
	q := e.platform("Other")
	va := e.openFor(p, "biz_1")
	qva := e.openFor(q, "biz_1")
	pLive := e.live(p)

	bad := kybSubmission("12-3456789", "4321")
	bad.Business.Address.Line1 = "P.O. Box 12"
	_, err := e.a.SubmitKYB(e.ctx, app.Meta{}, nil, p, va, bad)
	if de := wantCode(t, err, domain.CodeInvalidRequest); de.Param != "business.address.line1" {
		t.Fatalf("param %q", de.Param)
	}
	bad = kybSubmission("12-3456789", "4321")
	bad.BeneficialOwner[1].OwnershipPercentage = decimal.RequireFromString("24.51")
	_, err = e.a.SubmitKYB(e.ctx, app.Meta{}, nil, p, va, bad)
	if de := wantCode(t, err, domain.CodeInvalidRequest); de.Param != "beneficial_owners" {
		t.Fatalf("param %q", de.Param)
	}
	_, err = e.a.SubmitKYB(e.ctx, app.Meta{}, nil, p, "va_missing", kybSubmission("12-3456789", "4321"))
	if de := wantCode(t, err, domain.CodeNotFound); de.Param != "virtual_account_id" {
		t.Fatalf("param %q", de.Param)
	}
	_, err = e.a.SubmitKYB(e.ctx, app.Meta{}, nil, p, qva, kybSubmission("12-3456789", "4321"))
	wantCode(t, err, domain.CodeNotFound)
	_, err = e.a.SubmitKYB(e.ctx, app.Meta{}, nil, pLive, va, kybSubmission("12-3456789", "4321"))
	wantCode(t, err, domain.CodeNotFound)
	if n := count(t, e.ctx, e.pool, `SELECT count(*) FROM events WHERE event_type LIKE 'kyb.%'`); n != 0 {
		t.Fatalf("refused submissions recorded %d events", n)
	}
	e.wantKYBStatus(p, kyb.StatusNotStarted, va)

	// Decisions: unknown, or another platform's, is not found.
	id := e.submitOK(p, va, kybSubmission("12-3451111", "4321"))
	e.decide()
	wantCode(t, e.a.DecideKYB(e.ctx, app.Meta{}, nil, manualDecision("kyb_missing", kyb.StatusApproved)), domain.CodeNotFound)
	wantCode(t, e.a.DecideKYB(e.ctx, app.Meta{}, &q, manualDecision(id, kyb.StatusApproved)), domain.CodeNotFound)
	if _, err := queries.GetKYB(e.ctx, e.pool, queries.Scope{PlatformID: q.PlatformID, Environment: q.Environment}, id); domain.CodeOf(err) != domain.CodeNotFound {
		t.Fatalf("another platform reads the verification: %v", err)
	}
	e.wantKYBStatus(p, kyb.StatusPendingReview, va)
}

// ---- 1. masking ---------------------------------------------------------------------

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var (
	ulidLike = regexp.MustCompile(`^[a-z]+_[0-9A-HJKMNP-TV-Z]{26}$`)
	hexLike  = regexp.MustCompile(`^(\\x)?[0-9a-f]{32,}$`)
)

// leaks reports where a JSON document holds one of the secret digit
// strings. Full identifiers are searched in the raw text; short digit runs
// (the SSN's 4 digits, the EIN's first 5) in every string value except
// those made of random digits by construction: timestamps, ids, hashes,
// account numbers and transaction ids.
func leaks(doc string, full, short []string) []string {
	var out []string
	for _, s := range full {
		if strings.Contains(doc, s) {
			out = append(out, fmt.Sprintf("%q in the text", s))
		}
	}
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		// Not JSON: search the whole text.
		for _, s := range short {
			if strings.Contains(doc, s) {
				out = append(out, fmt.Sprintf("%q in the text", s))
			}
		}
		return out
	}
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				for _, s := range short {
					if strings.Contains(k, s) {
						out = append(out, fmt.Sprintf("%q in the key %q", s, k))
					}
				}
				walk(k, c)
			}
		case []any:
			for _, c := range x {
				walk(key, c)
			}
		case string:
			switch key {
			case "account_number", "transaction_id", "key_hash", "secret_hash", "request_hash", "hash":
				return
			}
			if _, err := time.Parse(time.RFC3339Nano, x); err == nil {
				return
			}
			if ulidLike.MatchString(x) || hexLike.MatchString(x) {
				return
			}
			for _, s := range short {
				if strings.Contains(x, s) {
					out = append(out, fmt.Sprintf("%q in %s: %q", s, key, x))
				}
			}
		}
	}
	walk("", v)
	return out
}

func TestKYBIdentifiersAreMaskedEverywhere(t *testing.T) {
	e := newEnv(t)
	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.a = app.New(e.pool, nil, logger)
	c := e.platform("Acme")

	// One EIN prefix (73846) and two SSNs (9876, 9123) that appear nowhere else.
	const ssn, ssn2 = "9876", "9123"
	full := []string{"738461111", "73-8461111", "738462222", "73-8462222", "738460000", "73-8460000", "738463333", "73-8463333"}
	short := []string{"73846", ssn, ssn2}
	sub := func(ein string) kyb.Submission {
		s := kybSubmission(ein, ssn)
		s.BeneficialOwner[1].SSNLast4 = ssn2
		return s
	}
	// The check can fail: the submission as sent is caught.
	if got := leaks(mustJSON(t, sub("73-8461111")), full, short); len(got) < 3 {
		t.Fatalf("the leak check misses the raw submission: %v", got)
	}

	review := e.submitOK(c, e.openFor(c, "biz_review"), sub("73-8461111")) // pending_review, then approved by hand
	e.submitOK(c, e.openFor(c, "biz_approve"), sub("738462222"))           // approved
	e.submitOK(c, e.openFor(c, "biz_reject"), sub("73-8460000"))           // rejected
	screened := sub("738463333")                                           // screened out at once
	screened.BeneficialOwner[0].FirstName = "OFAC TEST"
	res, err := e.a.SubmitKYB(e.ctx, app.Meta{RequestID: "req_screen"}, nil, c, e.openFor(c, "biz_screened"), screened)
	wantKYBErr(t, err, domain.CodeComplianceRejected, res.ID)
	errMsgs := []string{err.Error()}
	// A refused submission's error does not echo the identifiers either.
	bad := sub("73-8462222")
	bad.BeneficialOwner[1].SSNLast4 = ssn2 + "0"
	_, err = e.a.SubmitKYB(e.ctx, app.Meta{}, nil, c, e.openFor(c, "biz_bad"), bad)
	wantCode(t, err, domain.CodeInvalidRequest)
	errMsgs = append(errMsgs, err.Error())
	_, err = e.a.SubmitKYB(e.ctx, app.Meta{}, nil, c, e.openFor(c, "biz_review"), sub("73-8461111"))
	errMsgs = append(errMsgs, err.Error())

	head, err := eventstore.Head(e.ctx, e.pool)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.a.KYBDecider(nil).CatchUpTo(e.ctx, head); err != nil {
		t.Fatal(err)
	}
	if err := e.a.DecideKYB(e.ctx, operatorMeta("req_op"), nil, manualDecision(review, kyb.StatusApproved)); err != nil {
		t.Fatal(err)
	}
	head, err = eventstore.Head(e.ctx, e.pool)
	if err != nil {
		t.Fatal(err)
	}
	if err := projections.CatchUp(e.ctx, e.pool, head, logger); err != nil {
		t.Fatal(err)
	}

	// Every response.
	scope := queries.Scope{PlatformID: c.PlatformID, Environment: c.Environment}
	list, err := queries.ListKYB(e.ctx, e.pool, scope, queries.KYBFilter{}, queries.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Data) != 4 {
		t.Fatalf("%d verifications", len(list.Data))
	}
	docs := map[string]string{"GET /kyb": mustJSON(t, list)}
	for _, v := range list.Data {
		docs["GET /kyb/"+v.ID] = mustJSON(t, e.kyb(c, v.ID))
		if !strings.HasPrefix(v.Business.EIN, "**-***") || len(v.Business.EIN) != 10 {
			t.Fatalf("%s: ein %q", v.ID, v.Business.EIN)
		}
		for _, o := range v.BeneficialOwners {
			if o.SSNLast4 != "****" {
				t.Fatalf("%s: ssn_last4 %q", v.ID, o.SSNLast4)
			}
		}
	}
	for i, msg := range errMsgs {
		docs[fmt.Sprintf("error %d", i)] = msg
	}

	// Every row of every table (events' data and metadata included).
	rows, err := e.pool.Query(e.ctx, `SELECT table_name FROM information_schema.tables
        WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	rows.Close()
	for _, want := range []string{"events", "kyb_verifications", "kyb_entities", "public_events"} {
		if !strings.Contains(","+strings.Join(tables, ",")+",", ","+want+",") {
			t.Fatalf("table %s not found among %v", want, tables)
		}
	}
	rowCount := map[string]int{}
	for _, table := range tables {
		// Times, counters and transaction ids can contain any four digits
		// by chance: they are left out of the search (no identifier is
		// stored in such a column).
		rows, err := e.pool.Query(e.ctx, `SELECT (to_jsonb(t) - ARRAY(SELECT column_name::text FROM information_schema.columns
            WHERE table_schema = 'public' AND table_name = $1
              AND data_type IN ('timestamp with time zone', 'timestamp without time zone', 'bigint', 'integer', 'xid8')))::text FROM `+table+` t`, table)
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		for rows.Next() {
			var doc string
			if err := rows.Scan(&doc); err != nil {
				t.Fatal(err)
			}
			docs[fmt.Sprintf("%s row %d", table, i)] = doc
			i++
		}
		rows.Close()
		rowCount[table] = i
	}
	// Events' JSON columns, as text, in full.
	evRows, err := e.pool.Query(e.ctx, `SELECT event_type, data::text, metadata::text FROM events ORDER BY global_position`)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; evRows.Next(); i++ {
		var typ, data, meta string
		if err := evRows.Scan(&typ, &data, &meta); err != nil {
			t.Fatal(err)
		}
		docs[fmt.Sprintf("event %d %s data", i, typ)] = data
		docs[fmt.Sprintf("event %d %s metadata", i, typ)] = meta
	}
	evRows.Close()
	if rowCount["kyb_verifications"] != 4 || count(t, e.ctx, e.pool, `SELECT count(*) FROM public_events WHERE type LIKE 'kyb.%'`) != 5 {
		t.Fatalf("rows: %v", rowCount)
	}

	// The log, line by line.
	for i, line := range strings.Split(logs.String(), "\n") {
		if line != "" {
			docs[fmt.Sprintf("log line %d", i)] = line
		}
	}

	t.Logf("searched %d documents (%d log lines)", len(docs), strings.Count(logs.String(), "\n"))
	for where, doc := range docs {
		if found := leaks(doc, full, short); len(found) > 0 {
			t.Errorf("%s leaks %v:\n%s", where, found, doc)
		}
	}
	// What may be kept is kept: the EIN's last 4 digits.
	if n := count(t, e.ctx, e.pool, `SELECT count(*) FROM kyb_verifications WHERE business->>'ein' = '**-***1111'`); n != 1 {
		t.Fatalf("masked ein not stored (%d)", n)
	}
	if n := count(t, e.ctx, e.pool, `SELECT count(*) FROM events WHERE event_type = 'kyb.submitted' AND data->>'ein_last4' = '2222'`); n != 1 {
		t.Fatalf("ein_last4 not stored (%d)", n)
	}
}

// ---- restart ----------------------------------------------------------------------------

// A submission made just before the process stops is decided by the next
// process's decider; deciding again changes nothing.
func TestKYBDecisionSurvivesARestart(t *testing.T) {
	url := pgtest.URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	silent := slog.New(slog.DiscardHandler)

	pool1, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	first := &env{t: t, ctx: ctx, pool: pool1, a: app.New(pool1, nil, silent)}
	c := first.platform("Acme")
	ids := map[string]string{
		kyb.StatusApproved:      first.submitOK(c, first.openFor(c, "biz_approve"), kybSubmission("12-3456789", "4321")),
		kyb.StatusRejected:      first.submitOK(c, first.openFor(c, "biz_reject"), kybSubmission("12-3450000", "4321")),
		kyb.StatusPendingReview: first.submitOK(c, first.openFor(c, "biz_review"), kybSubmission("12-3451111", "4321")),
	}
	live := first.live(c)
	ids["live"] = first.submitOK(live, first.openFor(live, "biz_live"), kybSubmission("12-3456789", "4321"))
	// The process stops before its decider ran.
	pool1.Close()

	pool2, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool2.Close)
	second := &env{t: t, ctx: ctx, pool: pool2, a: app.New(pool2, nil, silent)}
	for _, id := range ids {
		if v, err := queries.FindKYB(ctx, pool2, id); err != nil {
			t.Fatal(err)
		} else if st := second.kyb(app.Caller{PlatformID: v.PlatformID, Environment: v.Environment}, id).Status; st != kyb.StatusPending {
			t.Fatalf("%s is %s before any decider ran", id, st)
		}
	}
	second.decide()
	check := func() {
		t.Helper()
		wantDecision(t, second.kyb(c, ids[kyb.StatusApproved]), kyb.StatusApproved, kyb.MethodAutomatic, noReasons)
		wantDecision(t, second.kyb(c, ids[kyb.StatusRejected]), kyb.StatusRejected, kyb.MethodAutomatic, einMismatch)
		if v := second.kyb(c, ids[kyb.StatusPendingReview]); v.Status != kyb.StatusPendingReview || v.Review == nil {
			t.Fatalf("1111 after restart: %s", mustJSON(t, v))
		}
		if v := second.kyb(live, ids["live"]); v.Status != kyb.StatusPendingReview || v.Review == nil {
			t.Fatalf("live after restart: %s", mustJSON(t, v))
		}
	}
	check()
	n := second.eventCount()

	// Again: nothing new.
	second.decide()
	if second.eventCount() != n {
		t.Fatalf("a second run of the decider appended %d events", second.eventCount()-n)
	}
	// A crash after deciding but before the checkpoint commits replays the
	// submissions: still nothing new.
	if _, err := pool2.Exec(ctx, `DELETE FROM subscription_checkpoints WHERE name = $1`, app.KYBDeciderName); err != nil {
		t.Fatal(err)
	}
	second.decide()
	if second.eventCount() != n {
		t.Fatalf("replaying the log appended %d events", second.eventCount()-n)
	}
	check()
	if cp, err := second.a.KYBDecider(nil).Checkpoint(ctx); err != nil || cp.GlobalPosition == 0 {
		t.Fatalf("checkpoint %+v, %v", cp, err)
	}
}

// ---- concurrency ---------------------------------------------------------------------------

func TestKYBConcurrentSubmissionsOneWins(t *testing.T) {
	pool := newPool(t, 24)
	ctx := testCtx(t)
	e := &env{t: t, ctx: ctx, pool: pool, a: newApp(t, pool)}
	c := e.platform("Acme")
	vas := []string{e.openFor(c, "biz_1"), e.openFor(c, "biz_1")}

	const n = 20
	start := make(chan struct{})
	type outcome struct {
		id  string
		err error
	}
	results := make([]outcome, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res, err := e.a.SubmitKYB(ctx, app.Meta{}, nil, c, vas[i%2], kybSubmission("12-3456789", "4321"))
			results[i] = outcome{res.ID, err}
		}()
	}
	close(start)
	wg.Wait()

	var winner string
	for _, r := range results {
		if r.err == nil {
			if winner != "" {
				t.Fatalf("two submissions succeeded: %s and %s", winner, r.id)
			}
			winner = r.id
		}
	}
	if winner == "" {
		t.Fatalf("no submission succeeded: %v", results)
	}
	for _, r := range results {
		if r.err != nil {
			var de *domain.Error
			if !errors.As(r.err, &de) || de.Code != domain.CodeKYBInProgress || de.ResourceID != winner {
				t.Fatalf("loser got %v (resource %q), want kyb_in_progress naming %s", r.err, resourceOf(r.err), winner)
			}
		}
	}
	if got := strings.Join(e.kybEventTypes(c, "biz_1"), ","); got != "kyb.submitted" {
		t.Fatalf("events %s", got)
	}
	if n := count(t, ctx, pool, `SELECT count(*) FROM kyb_verifications`); n != 1 {
		t.Fatalf("%d verifications stored", n)
	}
	e.decide()
	e.wantKYBStatus(c, kyb.StatusApproved, vas...)
}

func resourceOf(err error) string {
	var de *domain.Error
	if errors.As(err, &de) {
		return de.ResourceID
	}
	return ""
}
