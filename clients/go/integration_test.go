package treasury_test

// The tests against a real `treasury serve`: TREASURY_BASE_URL (for example
// http://127.0.0.1:8080/v1) and TREASURY_OPERATOR_KEY must be set, in sandbox
// mode with TREASURY_WEBHOOK_ALLOW_PRIVATE=true. Each test registers its own
// platforms, with names unique to the run.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	_ "time/tzdata" // America/New_York for the scheduled payments' dates, wherever the tests run

	treasury "github.com/opentreasury/treasury/clients/go"
	"github.com/opentreasury/treasury/clients/go/api"
	"github.com/opentreasury/treasury/clients/go/webhooks"
)

// exercised records every "METHOD /path-template" of the OpenAPI document
// that a test sent to the server and got an answer for.
var exercised = struct {
	sync.Mutex
	ops map[string]bool
}{ops: map[string]bool{}}

type specOp struct {
	key string // "POST /virtual-accounts/{id}/freeze"
	re  *regexp.Regexp
}

var specOps = loadSpecOps()

func loadSpecOps() []specOp {
	raw, err := os.ReadFile("../../http/openapi.json")
	if err != nil {
		panic(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		panic(err)
	}
	var ops []specOp
	param := regexp.MustCompile(`\\\{[^}]+\\\}`)
	for path, item := range doc.Paths {
		for method := range item {
			m := strings.ToUpper(method)
			switch m {
			case "GET", "POST", "PUT", "PATCH", "DELETE":
			default:
				continue
			}
			re := regexp.MustCompile("^" + param.ReplaceAllString(regexp.QuoteMeta(path), "[^/]+") + "$")
			ops = append(ops, specOp{key: m + " " + path, re: re})
		}
	}
	// A literal segment beats a parameter: try the templates with fewer
	// parameters first.
	sort.Slice(ops, func(i, j int) bool {
		ci, cj := strings.Count(ops[i].key, "{"), strings.Count(ops[j].key, "{")
		if ci != cj {
			return ci < cj
		}
		return ops[i].key < ops[j].key
	})
	return ops
}

// recorder is the tests' http.RoundTripper: it records the operations
// answered, and every attempt (for the retry tests).
type recorder struct {
	base     http.RoundTripper
	prefix   string
	mu       sync.Mutex
	attempts []attempt
}

type attempt struct {
	at             time.Time
	method, path   string
	query          string // the raw query string
	status         int
	retryAfter     string
	idempotencyKey string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	path := strings.TrimPrefix(req.URL.Path, r.prefix)
	key := req.Method + " " + path
	for _, op := range specOps {
		if strings.HasPrefix(op.key, req.Method+" ") && op.re.MatchString(path) {
			key = op.key
			break
		}
	}
	exercised.Lock()
	exercised.ops[key] = true
	exercised.Unlock()
	r.mu.Lock()
	r.attempts = append(r.attempts, attempt{
		at: time.Now(), method: req.Method, path: path, query: req.URL.RawQuery, status: resp.StatusCode,
		retryAfter: resp.Header.Get("Retry-After"), idempotencyKey: req.Header.Get("Idempotency-Key"),
	})
	r.mu.Unlock()
	return resp, nil
}

func (r *recorder) snapshot() []attempt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]attempt(nil), r.attempts...)
}

// answered is the attempts less those a busy server refused for now (429,
// 503), which the client rightly sends again unchanged: one per answered call.
func answered(attempts []attempt) []attempt {
	var out []attempt
	for _, a := range attempts {
		if !a.busy() {
			out = append(out, a)
		}
	}
	return out
}

func (a attempt) busy() bool {
	return a.status == http.StatusTooManyRequests || a.status == http.StatusServiceUnavailable
}

func TestMain(m *testing.M) {
	code := m.Run()
	// With the whole suite run against a server, every operation of the
	// document must have been sent to it.
	if code == 0 && os.Getenv("TREASURY_BASE_URL") != "" && !runFiltered() {
		var missing []string
		for _, op := range specOps {
			if op.key != "GET /openapi.json" && !exercised.ops[op.key] {
				missing = append(missing, op.key)
			}
		}
		if len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: operations of openapi.json no test sent to the server:\n  %s\n",
				strings.Join(missing, "\n  "))
			code = 1
		}
	}
	os.Exit(code)
}

func runFiltered() bool {
	for _, a := range os.Args[1:] {
		if strings.HasPrefix(a, "-test.run") || strings.HasPrefix(a, "-test.skip") {
			return true
		}
	}
	return false
}

// env returns the server's address and operator key, and fails the test
// (never skips it) when they are not set.
func env(t *testing.T) (string, string) {
	t.Helper()
	base, key := os.Getenv("TREASURY_BASE_URL"), os.Getenv("TREASURY_OPERATOR_KEY")
	if base == "" || key == "" {
		t.Fatal("TREASURY_BASE_URL and TREASURY_OPERATOR_KEY must be set: these tests run against a real `treasury serve`")
	}
	return strings.TrimRight(base, "/"), key
}

func newClient(t *testing.T, key string, opts ...treasury.Option) (*treasury.Client, *recorder) {
	t.Helper()
	base, _ := env(t)
	rec := &recorder{base: http.DefaultTransport, prefix: urlPath(base)}
	all := append([]treasury.Option{
		treasury.WithBaseURL(base),
		treasury.WithHTTPClient(&http.Client{Transport: rec, Timeout: 30 * time.Second}),
	}, opts...)
	c, err := treasury.NewClient(key, all...)
	if err != nil {
		t.Fatal(err)
	}
	return c, rec
}

func urlPath(base string) string {
	rest, ok := strings.CutPrefix(base, "http://")
	if !ok {
		rest = strings.TrimPrefix(base, "https://")
	}
	if i := strings.Index(rest, "/"); i >= 0 {
		return rest[i:]
	}
	return ""
}

func operator(t *testing.T) *treasury.Client {
	_, key := env(t)
	c, _ := newClient(t, key)
	return c
}

func unique(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", prefix, time.Now().UnixMilli(), hex.EncodeToString(b[:]))
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// must(call())(t) returns call's value, or fails the test with its error.
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return v
	}
}

// eventually polls check every 100 ms until it returns true, or fails after d.
func eventually(t *testing.T, d time.Duration, what string, check func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, err := check()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// newPlatform registers and approves a platform and returns it with a client
// holding its sandbox key.
func newPlatform(t *testing.T, ctx context.Context) (*treasury.Platform, *treasury.Client, string) {
	t.Helper()
	op := operator(t)
	p := must(op.Platforms.Register(ctx, treasury.CreatePlatformRequest{
		Name: unique("go-client"), ContactEmail: "eng@example.com",
		Metadata: &treasury.Metadata{"suite": "clients/go"},
	}))(t)
	if p.Status != treasury.PlatformStatusPendingApproval {
		t.Fatalf("registered platform status %q", p.Status)
	}
	approved := must(op.Platforms.Approve(ctx, p.Id))(t)
	if approved.SandboxApiKey == nil || approved.SandboxApiKey.Secret == nil {
		t.Fatalf("approval carries no sandbox key: %+v", approved)
	}
	c, _ := newClient(t, *approved.SandboxApiKey.Secret)
	plat := must(c.Platform.Retrieve(ctx))(t)
	return plat, c, *approved.SandboxApiKey.Secret
}

func newAccount(t *testing.T, ctx context.Context, c *treasury.Client, platformID, entity string) *treasury.VirtualAccount {
	t.Helper()
	return must(c.VirtualAccounts.Create(ctx, treasury.CreateVirtualAccountRequest{
		PlatformId: platformID, EntityRef: entity, Type: treasury.CreateVirtualAccountRequestTypeChecking,
		Metadata: &treasury.Metadata{"entity": entity},
	}))(t)
}

func kybRequest(vaID, ein, legalName string) treasury.KYBSubmitRequest {
	address := treasury.KYBAddress{
		Line1: "1 Main Street", City: "Springfield", State: treasury.KYBAddressStateIL,
		PostalCode: "62701", Country: treasury.KYBAddressCountryUS,
	}
	var share treasury.KYBOwnerRequest_OwnershipPercentage
	_ = share.FromKYBOwnerRequestOwnershipPercentage0("100")
	return treasury.KYBSubmitRequest{
		VirtualAccountId: vaID,
		Business: treasury.KYBBusinessRequest{
			LegalName: legalName, Ein: ein, EntityType: treasury.KYBBusinessRequestEntityTypeLlc,
			FormationDate: treasury.NewDate(2015, time.March, 4), FormationState: treasury.KYBBusinessRequestFormationStateDE,
			Address: address,
		},
		BeneficialOwners: []treasury.KYBOwnerRequest{{
			FirstName: "Ada", LastName: "Lovelace", DateOfBirth: treasury.NewDate(1980, time.December, 10),
			SsnLast4: "1234", OwnershipPercentage: &share, IsControlPerson: treasury.Ptr(true),
			Title: treasury.Ptr("CEO"), Address: address,
		}},
	}
}

// approveKYB submits a verification that the sandbox approves and waits for it.
func approveKYB(t *testing.T, ctx context.Context, c *treasury.Client, vaID string) *treasury.KYBVerification {
	t.Helper()
	k := must(c.KYB.Create(ctx, kybRequest(vaID, "12-3456789", "Acme Widgets LLC")))(t)
	var got *treasury.KYBVerification
	eventually(t, 10*time.Second, "KYB approved", func() (bool, error) {
		var err error
		got, err = c.KYB.Retrieve(ctx, k.Id)
		return err == nil && got.Status == treasury.KYBVerificationStatusApproved, err
	})
	return got
}

func fund(t *testing.T, ctx context.Context, c *treasury.Client, vaID string, amount int) *treasury.InboundTransfer {
	t.Helper()
	it := must(c.Simulations.InboundTransfer(ctx, treasury.SimulateInboundTransferRequest{
		VirtualAccountId: vaID, Amount: amount, Rail: treasury.SimulateInboundTransferRequestRailRtp,
		Originator:  treasury.Originator{Name: "Customer Inc", AccountNumber: "987654321", RoutingNumber: "021000021"},
		Description: treasury.Ptr("invoice 42"),
	}))(t)
	eventually(t, 10*time.Second, "inbound funds available", func() (bool, error) {
		b, err := c.VirtualAccounts.Balance(ctx, vaID, nil)
		return err == nil && b.Posted >= amount, err
	})
	return it
}

var goodDestination = treasury.Destination{Name: "Initech LLC", AccountNumber: "123456789", RoutingNumber: "021000021"}

func pay(t *testing.T, ctx context.Context, c *treasury.Client, vaID string, rail treasury.PaymentRequestRail, amount int, dest treasury.Destination) *treasury.Payment {
	t.Helper()
	return must(c.Payments.Create(ctx, treasury.PaymentRequest{
		VirtualAccountId: vaID, Amount: amount, Rail: rail, Destination: &dest,
		Description: treasury.Ptr("payment on " + string(rail)),
	}))(t)
}

func waitPayment(t *testing.T, ctx context.Context, c *treasury.Client, id string, want treasury.PaymentStatus) *treasury.Payment {
	t.Helper()
	var p *treasury.Payment
	eventually(t, 20*time.Second, "payment "+id+" "+string(want), func() (bool, error) {
		var err error
		p, err = c.Payments.Retrieve(ctx, id)
		return err == nil && p.Status == want, err
	})
	return p
}

func requireAPIError(t *testing.T, err error, sentinel error, kind treasury.ErrorKind, status int, code string) *treasury.APIError {
	t.Helper()
	if err == nil {
		t.Fatalf("want a %s, got no error", kind)
	}
	var apiErr *treasury.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("want an *APIError, got %T %v", err, err)
	}
	if !errors.Is(err, sentinel) || apiErr.Kind != kind || apiErr.Status != status {
		t.Fatalf("want %s %d, got %s %d (%v)", kind, status, apiErr.Kind, apiErr.Status, err)
	}
	if code != "" && apiErr.Code != code {
		t.Fatalf("want code %s, got %s (%v)", code, apiErr.Code, err)
	}
	if apiErr.Message == "" || !strings.HasPrefix(apiErr.RequestID, "req_") {
		t.Fatalf("error without message or request id: %+v", apiErr)
	}
	return apiErr
}

// TestJourney walks a platform through the whole API: onboarding, accounts,
// KYB, funds, payments on the four rails, the ledger, events and the
// operator's routes.
func TestJourney(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t)
	op := operator(t)
	plat, c, platKey := newPlatform(t, ctx)

	t.Run("operator platforms", func(t *testing.T) {
		got := must(op.Platforms.Retrieve(ctx, plat.Id))(t)
		if got.Id != plat.Id || got.Status != treasury.PlatformStatusApproved {
			t.Fatalf("retrieved %+v", got)
		}
		updated := must(op.Platforms.Update(ctx, plat.Id, treasury.ConfigurePlatformRequest{
			RevenueShareRate: treasury.Ptr("0.30"), InterestRate: treasury.Ptr("0.045"),
			FeeSchedule: &treasury.ConfigurePlatformRequest_FeeSchedule{Rtp: treasury.Ptr(60)},
		}))(t)
		if updated.RevenueShareRate != "0.30" || updated.FeeSchedule.Rtp != 60 {
			t.Fatalf("update not applied: %+v", updated)
		}
		found := false
		for p, err := range op.Platforms.List(ctx, &treasury.ListPlatformsParams{Limit: treasury.Ptr(100)}) {
			if err != nil {
				t.Fatal(err)
			}
			if p.Id == plat.Id {
				found = true
				break
			}
		}
		if !found {
			t.Fatal("the platform is not in the operator's list")
		}
		funding := must(op.Platforms.Fund(ctx, plat.Id, treasury.FundPlatformRequest{
			Amount: 500000, Environment: treasury.Ptr(treasury.FundPlatformRequestEnvironmentSandbox),
			Description: treasury.Ptr("seed money"),
		}))(t)
		if len(funding.Entries) != 2 {
			t.Fatalf("funding entry lines: %+v", funding.Entries)
		}
		live := must(op.Platforms.EnableLive(ctx, plat.Id))(t)
		if !live.LiveEnabled || live.LiveApiKey == nil || live.LiveApiKey.Secret == nil {
			t.Fatalf("enable-live: %+v", live)
		}
	})

	t.Run("platform settings and keys", func(t *testing.T) {
		settings := must(c.Platform.Settings.Retrieve(ctx))(t)
		if settings.Sandbox == nil {
			t.Fatal("sandbox settings missing")
		}
		settings = must(c.Platform.Settings.Update(ctx, treasury.UpdateSettingsRequest{
			Sandbox: &treasury.UpdateSettingsRequest_Sandbox{
				AchSameDayDelaySeconds: treasury.Ptr(1), AchStandardDelaySeconds: treasury.Ptr(1), AutoSettle: treasury.Ptr(true),
			},
		}))(t)
		if settings.Sandbox.AchSameDayDelaySeconds != 1 || settings.Sandbox.AchStandardDelaySeconds != 1 {
			t.Fatalf("settings not applied: %+v", settings.Sandbox)
		}
		key := must(c.Platform.APIKeys.Create(ctx, treasury.CreateAPIKeyRequest{Name: "ci"}))(t)
		if key.Secret == nil || !strings.HasPrefix(*key.Secret, "sk_sandbox_") {
			t.Fatalf("new key: %+v", key)
		}
		names := map[string]bool{}
		for k, err := range c.Platform.APIKeys.List(ctx, &treasury.ListAPIKeysParams{Limit: treasury.Ptr(1)}) {
			if err != nil {
				t.Fatal(err)
			}
			if k.Secret != nil {
				t.Fatal("a listed key has its secret")
			}
			names[k.Id] = true
		}
		if !names[key.Id] || len(names) < 2 {
			t.Fatalf("keys listed: %v", names)
		}
		rolled := must(c.Platform.APIKeys.Roll(ctx, key.Id, treasury.RollAPIKeyRequest{GraceSeconds: treasury.Ptr(60)}))(t)
		if rolled.Id == key.Id || rolled.Secret == nil {
			t.Fatalf("rolled: %+v", rolled)
		}
		// The rolled key works.
		rc, _ := newClient(t, *rolled.Secret)
		must(rc.Platform.Retrieve(ctx))(t)
		revoked := must(c.Platform.APIKeys.Revoke(ctx, rolled.Id))(t)
		if revoked.RevokedAt == nil {
			t.Fatalf("revoked: %+v", revoked)
		}
		_, err := rc.Platform.Retrieve(ctx)
		requireAPIError(t, err, treasury.ErrAuthentication, treasury.KindAuthentication, 401, "unauthorized")
	})

	entity := unique("acme")
	va := newAccount(t, ctx, c, plat.Id, entity)
	other := newAccount(t, ctx, c, plat.Id, unique("globex"))
	spare := newAccount(t, ctx, c, plat.Id, entity)

	t.Run("virtual accounts", func(t *testing.T) {
		got := must(c.VirtualAccounts.Retrieve(ctx, va.Id))(t)
		if got.AccountNumber != va.AccountNumber || got.Status != treasury.VirtualAccountStatusActive {
			t.Fatalf("retrieved %+v", got)
		}
		var ids []string
		for a, err := range c.VirtualAccounts.List(ctx, &treasury.ListVirtualAccountsParams{Limit: treasury.Ptr(2)}) {
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, a.Id)
		}
		if len(ids) != 3 {
			t.Fatalf("listed %d accounts over pages of 2, want 3: %v", len(ids), ids)
		}
		byEntity := must(treasury.Collect(c.VirtualAccounts.List(ctx, &treasury.ListVirtualAccountsParams{EntityRef: &entity})))(t)
		if len(byEntity) != 2 {
			t.Fatalf("accounts of %s: %d", entity, len(byEntity))
		}
		frozen := must(c.VirtualAccounts.Freeze(ctx, spare.Id))(t)
		if frozen.Status != treasury.VirtualAccountStatusFrozen {
			t.Fatalf("freeze: %s", frozen.Status)
		}
		active := must(c.VirtualAccounts.Unfreeze(ctx, spare.Id))(t)
		if active.Status != treasury.VirtualAccountStatusActive {
			t.Fatalf("unfreeze: %s", active.Status)
		}
		closed := must(c.VirtualAccounts.Close(ctx, spare.Id))(t)
		if closed.Status != treasury.VirtualAccountStatusClosed {
			t.Fatalf("close: %s", closed.Status)
		}
	})

	t.Run("kyb", func(t *testing.T) {
		k := approveKYB(t, ctx, c, va.Id)
		if k.Decision == nil || k.Business.Ein == "12-3456789" {
			t.Fatalf("approved verification: %+v", k)
		}
		approveKYB(t, ctx, c, other.Id)
		listed := must(treasury.Collect(c.KYB.List(ctx, &treasury.ListKYBVerificationsParams{VirtualAccountId: &va.Id})))(t)
		if len(listed) != 1 || listed[0].Id != k.Id {
			t.Fatalf("kyb list: %+v", listed)
		}

		// EIN ending 1111 goes to manual review: decided by a simulation, and
		// by the operator.
		for i, decide := range []func(id string) (*treasury.KYBVerification, error){
			func(id string) (*treasury.KYBVerification, error) {
				return c.Simulations.KYBDecision(ctx, id, treasury.KYBDecisionRequest{Outcome: treasury.KYBDecisionRequestOutcomeApproved})
			},
			func(id string) (*treasury.KYBVerification, error) {
				return op.Operator.DecideKYB(ctx, id, treasury.KYBDecisionRequest{
					Outcome: treasury.KYBDecisionRequestOutcomeRejected,
					Reasons: &[]treasury.KYBReasonRequest{{Code: "documents_unverifiable", Message: treasury.Ptr("cannot verify")}},
				})
			},
		} {
			acct := newAccount(t, ctx, c, plat.Id, unique(fmt.Sprintf("review%d", i)))
			sub := must(c.KYB.Create(ctx, kybRequest(acct.Id, "98-7651111", "Review Co")))(t)
			eventually(t, 10*time.Second, "KYB pending_review", func() (bool, error) {
				got, err := c.KYB.Retrieve(ctx, sub.Id)
				return err == nil && got.Status == treasury.KYBVerificationStatusPendingReview, err
			})
			decided := must(decide(sub.Id))(t)
			if decided.Decision == nil || decided.Review == nil {
				t.Fatalf("decided verification: %+v", decided)
			}
			if want := []treasury.KYBVerificationStatus{treasury.KYBVerificationStatusApproved, treasury.KYBVerificationStatusRejected}[i]; decided.Status != want {
				t.Fatalf("decided %s, want %s", decided.Status, want)
			}
		}
	})

	t.Run("inbound funds and balances", func(t *testing.T) {
		before := time.Now().UTC().Add(-time.Second)
		it := fund(t, ctx, c, va.Id, 5_000_000)
		if it.VirtualAccountId != va.Id || it.Amount != 5_000_000 {
			t.Fatalf("inbound transfer: %+v", it)
		}
		je := must(c.Ledger.JournalEntries.Retrieve(ctx, it.JournalEntryId))(t)
		if je.Id != it.JournalEntryId || len(je.Entries) != 2 ||
			je.Source != (treasury.Source{Type: treasury.SourceTypeInboundTransfer, Id: it.Id}) {
			t.Fatalf("the inbound transfer's journal entry: %+v", je)
		}
		b := must(c.VirtualAccounts.Balance(ctx, va.Id, nil))(t)
		if b.Posted != 5_000_000 || b.Available != 5_000_000 {
			t.Fatalf("balance: %+v", b)
		}
		then := must(c.VirtualAccounts.Balance(ctx, va.Id, &treasury.GetVirtualAccountBalanceParams{AsOf: treasury.Ptr(before.Format(time.RFC3339Nano))}))(t)
		if then.Posted != 0 {
			t.Fatalf("balance as of before the transfer: %+v", then)
		}
	})

	t.Run("payments", func(t *testing.T) {
		rails := []treasury.PaymentRequestRail{
			treasury.PaymentRequestRailRtp, treasury.PaymentRequestRailFednow,
			treasury.PaymentRequestRailAchSameDay, treasury.PaymentRequestRailAchStandard,
		}
		var ids []string
		for _, rail := range rails {
			p := pay(t, ctx, c, va.Id, rail, 10_000, goodDestination)
			if p.IdempotencyKey == "" || p.Fee <= 0 {
				t.Fatalf("payment: %+v", p)
			}
			ids = append(ids, p.Id)
		}
		failing := pay(t, ctx, c, va.Id, treasury.PaymentRequestRailRtp, 1_000,
			treasury.Destination{Name: "Nobody", AccountNumber: "4000000003", RoutingNumber: "021000021"})
		for _, id := range ids {
			waitPayment(t, ctx, c, id, treasury.PaymentStatusCompleted)
		}
		failed := waitPayment(t, ctx, c, failing.Id, treasury.PaymentStatusFailed)
		if failed.Failure == nil || failed.Failure.Code != treasury.PaymentFailureCodeNoAccount {
			t.Fatalf("failure: %+v", failed.Failure)
		}

		// With auto_settle off payments wait: one is canceled, one completed
		// and one failed by simulation.
		must(c.Platform.Settings.Update(ctx, treasury.UpdateSettingsRequest{
			Sandbox: &treasury.UpdateSettingsRequest_Sandbox{AutoSettle: treasury.Ptr(false)},
		}))(t)
		toCancel := pay(t, ctx, c, va.Id, treasury.PaymentRequestRailAchStandard, 2_000, goodDestination)
		canceled := must(c.Payments.Cancel(ctx, toCancel.Id))(t)
		if canceled.Status != treasury.PaymentStatusCanceled || canceled.CanceledAt == nil {
			t.Fatalf("canceled: %+v", canceled)
		}
		_, err := c.Payments.Cancel(ctx, toCancel.Id)
		requireAPIError(t, err, treasury.ErrConflict, treasury.KindConflict, 409, "payment_not_cancelable")

		toComplete := pay(t, ctx, c, va.Id, treasury.PaymentRequestRailAchSameDay, 3_000, goodDestination)
		completed := must(c.Simulations.CompletePayment(ctx, toComplete.Id))(t)
		if completed.Status != treasury.PaymentStatusCompleted {
			t.Fatalf("simulated completion: %s", completed.Status)
		}
		toFail := pay(t, ctx, c, va.Id, treasury.PaymentRequestRailAchSameDay, 4_000, goodDestination)
		simFailed := must(c.Simulations.FailPayment(ctx, toFail.Id, treasury.SimulatePaymentFailRequest{NetworkCode: "R01"}))(t)
		if simFailed.Status != treasury.PaymentStatusFailed || simFailed.Failure == nil || simFailed.Failure.NetworkCode == nil || *simFailed.Failure.NetworkCode != "R01" {
			t.Fatalf("simulated failure: %+v", simFailed)
		}
		must(c.Platform.Settings.Update(ctx, treasury.UpdateSettingsRequest{
			Sandbox: &treasury.UpdateSettingsRequest_Sandbox{AutoSettle: treasury.Ptr(true)},
		}))(t)

		// Every page, two at a time.
		var listed []string
		for p, err := range c.Payments.List(ctx, &treasury.ListPaymentsParams{VirtualAccountId: &va.Id, Limit: treasury.Ptr(2)}) {
			if err != nil {
				t.Fatal(err)
			}
			listed = append(listed, p.Id)
		}
		if len(listed) != 8 {
			t.Fatalf("listed %d payments over pages of 2, want 8", len(listed))
		}
		seen := map[string]bool{}
		for _, id := range listed {
			if seen[id] {
				t.Fatalf("payment %s listed twice", id)
			}
			seen[id] = true
		}
		completedOnly := must(treasury.Collect(c.Payments.List(ctx, &treasury.ListPaymentsParams{
			VirtualAccountId: &va.Id, Status: treasury.Ptr(treasury.ListPaymentsParamsStatusCompleted),
		})))(t)
		if len(completedOnly) != 5 {
			t.Fatalf("completed payments: %d, want 5", len(completedOnly))
		}
		// Breaking out of the loop stops the walk.
		n := 0
		for _, err := range c.Payments.List(ctx, &treasury.ListPaymentsParams{Limit: treasury.Ptr(1)}) {
			if err != nil {
				t.Fatal(err)
			}
			if n++; n == 3 {
				break
			}
		}

		txns := must(treasury.Collect(c.VirtualAccounts.Transactions(ctx, va.Id, &treasury.ListTransactionsParams{Limit: treasury.Ptr(3)})))(t)
		if len(txns) < 10 {
			t.Fatalf("transactions: %d", len(txns))
		}
		month := time.Now().UTC().Format("2006-01")
		st := must(c.VirtualAccounts.Statement(ctx, va.Id, month))(t)
		if st.Month != month || st.TotalIn != 5_000_000 || len(st.Transactions) == 0 {
			t.Fatalf("statement: %+v", st)
		}
		csv := must(c.VirtualAccounts.StatementCSV(ctx, va.Id, month))(t)
		if lines := strings.Split(strings.TrimSpace(string(csv)), "\n"); len(lines) < 2 || !strings.Contains(string(csv), ",") {
			t.Fatalf("statement CSV: %q", csv)
		}
	})

	t.Run("metadata filters", func(t *testing.T) {
		fc, rec := newClient(t, platKey)
		// The lists are compared as sets of ids.
		want := func(ids ...string) []string { sort.Strings(ids); return ids }
		listAccounts := func(t *testing.T, f treasury.MetadataFilter, limit int) []string {
			t.Helper()
			var out []string
			for a, err := range fc.VirtualAccounts.List(ctx, &treasury.ListVirtualAccountsParams{Metadata: &f, Limit: treasury.Ptr(limit)}) {
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range f {
					if a.Metadata[k] != v {
						t.Fatalf("account %s listed for %s=%s has metadata %v", a.Id, k, v, a.Metadata)
					}
				}
				out = append(out, a.Id)
			}
			return want(out...)
		}
		listPayments := func(t *testing.T, f treasury.MetadataFilter) []string {
			t.Helper()
			var out []string
			for p, err := range fc.Payments.List(ctx, &treasury.ListPaymentsParams{Metadata: &f, Limit: treasury.Ptr(1)}) {
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, p.Id)
			}
			return want(out...)
		}

		// Three accounts, and three payments out of the funded account, with
		// different metadata; one key needs URL-encoding, and its value holds a '&'.
		gold := treasury.Metadata{"region": "east", "tier": "gold", "order id": "A&B"}
		silver := treasury.Metadata{"region": "east", "tier": "silver"}
		west := treasury.Metadata{"region": "west", "tier": "gold", "order id": "A"}
		var accounts, payments []string
		for _, md := range []treasury.Metadata{gold, silver, west} {
			a := must(fc.VirtualAccounts.Create(ctx, treasury.CreateVirtualAccountRequest{
				PlatformId: plat.Id, EntityRef: unique("meta"), Type: treasury.CreateVirtualAccountRequestTypeChecking,
				Metadata: &md,
			}))(t)
			accounts = append(accounts, a.Id)
			p := must(fc.Payments.Create(ctx, treasury.PaymentRequest{
				VirtualAccountId: va.Id, Amount: 1_000, Rail: treasury.PaymentRequestRailRtp,
				Destination: &goodDestination, Metadata: &md,
			}))(t)
			payments = append(payments, p.Id)
		}

		cases := []struct {
			filter treasury.MetadataFilter
			want   []int // indexes into accounts and payments
		}{
			{treasury.MetadataFilter{"region": "east"}, []int{0, 1}},
			{treasury.MetadataFilter{"tier": "gold"}, []int{0, 2}},
			{treasury.MetadataFilter{"region": "east", "tier": "gold"}, []int{0}},
			{treasury.MetadataFilter{"region": "west", "tier": "silver"}, nil},
			{treasury.MetadataFilter{"order id": "A&B"}, []int{0}},
			{treasury.MetadataFilter{"order id": "A"}, []int{2}},
			{treasury.MetadataFilter{"order id": "A&B", "region": "east"}, []int{0}},
			{treasury.MetadataFilter{"region": "north"}, nil},
		}
		for _, tc := range cases {
			var wantAccounts, wantPayments []string
			for _, i := range tc.want {
				wantAccounts = append(wantAccounts, accounts[i])
				wantPayments = append(wantPayments, payments[i])
			}
			if got := listAccounts(t, tc.filter, 1); !reflect.DeepEqual(got, want(wantAccounts...)) {
				t.Errorf("accounts with %v: %v, want %v", tc.filter, got, want(wantAccounts...))
			}
			if got := listPayments(t, tc.filter); !reflect.DeepEqual(got, want(wantPayments...)) {
				t.Errorf("payments with %v: %v, want %v", tc.filter, got, want(wantPayments...))
			}
		}

		// Walked a page at a time, every page's request carries the filter,
		// encoded.
		requests := func(list func()) []string {
			before := len(rec.snapshot())
			list()
			var queries []string
			for _, a := range rec.snapshot()[before:] {
				// A request a busy server refused for now (429, 503) is sent
				// again unchanged: only the retry counts.
				if a.method == "GET" && a.path == "/virtual-accounts" && !a.busy() {
					if a.status != http.StatusOK {
						t.Fatalf("GET /virtual-accounts?%s answered %d", a.query, a.status)
					}
					queries = append(queries, a.query)
				}
			}
			return queries
		}
		queries := requests(func() {
			f := treasury.MetadataFilter{"order id": "A&B", "tier": "gold"}
			if got := listAccounts(t, f, 1); !reflect.DeepEqual(got, accounts[:1]) {
				t.Fatalf("accounts with %v: %v", f, got)
			}
		})
		for _, q := range queries {
			if !strings.Contains(q, "metadata[order+id]=A%26B&metadata[tier]=gold") {
				t.Fatalf("a request of the list: %q", q)
			}
		}
		queries = requests(func() {
			f := treasury.MetadataFilter{"tier": "gold"}
			if got := listAccounts(t, f, 1); !reflect.DeepEqual(got, want(accounts[0], accounts[2])) {
				t.Fatalf("accounts with %v: %v", f, got)
			}
		})
		if len(queries) < 2 {
			t.Fatalf("two accounts a page at a time in %d requests", len(queries))
		}
		for i, q := range queries {
			if !strings.Contains(q, "metadata[tier]=gold") || (i > 0) != strings.Contains(q, "cursor=") {
				t.Fatalf("request %d of the list: %q", i, q)
			}
		}
	})

	t.Run("ledger", func(t *testing.T) {
		accounts := must(treasury.Collect(c.Ledger.Accounts.List(ctx, &treasury.ListLedgerAccountsParams{Limit: treasury.Ptr(2)})))(t)
		if len(accounts) < 4 {
			t.Fatalf("ledger accounts: %d", len(accounts))
		}
		adj := must(c.Ledger.Entries.Create(ctx, treasury.JournalEntryShorthand(treasury.JournalEntryShorthandRequest{
			Type: treasury.JournalEntryShorthandRequestTypeAdjustment, Description: "goodwill credit",
			VirtualAccountId: va.Id, Direction: treasury.JournalEntryShorthandRequestDirectionCredit, Amount: 1_500,
		})))(t)
		if adj.Type != treasury.JournalEntryTypeAdjustment || len(adj.Entries) != 2 {
			t.Fatalf("journal entry: %+v", adj)
		}
		if adj.Source != (treasury.Source{Type: treasury.SourceTypeJournalEntry, Id: adj.Id}) {
			t.Fatalf("a manual entry's source: %+v", adj.Source)
		}
		got := must(c.Ledger.JournalEntries.Retrieve(ctx, adj.Id))(t)
		if got.Id != adj.Id || got.Type != adj.Type || got.Description != adj.Description || len(got.Entries) != 2 ||
			got.Source != (treasury.Source{Type: treasury.SourceTypeJournalEntry, Id: adj.Id}) {
			t.Fatalf("retrieved journal entry: %+v, created %+v", got, adj)
		}
		lines := must(c.Ledger.Entries.Create(ctx, treasury.JournalEntryLines(treasury.JournalEntryLinesRequest{
			Type: treasury.JournalEntryLinesRequestTypeFee, Description: "monthly fee",
			Lines: []treasury.JournalLine{
				{VirtualAccountId: &va.Id, Direction: treasury.JournalLineDirectionDebit, Amount: 700},
				{VirtualAccountId: &other.Id, Direction: treasury.JournalLineDirectionCredit, Amount: 700},
			},
		})))(t)
		if len(lines.Entries) != 2 {
			t.Fatalf("lines entry: %+v", lines)
		}
		reversal := must(c.Ledger.Entries.Create(ctx, treasury.JournalEntryReversal(treasury.JournalEntryReversalRequest{
			Reverses: lines.Id, Description: treasury.Ptr("refund the fee"),
		})))(t)
		if reversal.Reverses == nil || *reversal.Reverses != lines.Id {
			t.Fatalf("reversal: %+v", reversal)
		}
		var entries []treasury.LedgerEntry
		eventually(t, 10*time.Second, "ledger entries projected", func() (bool, error) {
			var err error
			entries, err = treasury.Collect(c.Ledger.Entries.List(ctx, &treasury.ListLedgerEntriesParams{
				VirtualAccountId: &va.Id, Limit: treasury.Ptr(5),
			}))
			for _, e := range entries {
				if e.JournalEntryId == reversal.Id {
					return true, nil
				}
			}
			return false, err
		})
		csv := must(c.Ledger.Export(ctx, &treasury.ExportLedgerParams{CreatedAfter: treasury.Ptr(time.Now().UTC().Format("2006-01-02"))}))(t)
		if !strings.Contains(string(csv), adj.Id) {
			t.Fatalf("the export lacks %s: %.300s", adj.Id, csv)
		}
	})

	t.Run("revenue share", func(t *testing.T) {
		today := time.Now().UTC()
		report := must(c.Platform.RevenueShare(ctx, treasury.GetRevenueShareParams{
			From: treasury.NewDate(today.Year(), today.Month(), 1), To: treasury.NewDate(today.Year(), today.Month(), today.Day()),
		}))(t)
		if report.ShareRate != "0.30" || len(report.Lines) == 0 {
			t.Fatalf("revenue share: %+v", report)
		}
	})

	t.Run("events", func(t *testing.T) {
		var first *treasury.Event
		n := 0
		for e, err := range c.Events.List(ctx, &treasury.ListEventsParams{Limit: treasury.Ptr(10)}) {
			if err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = &e
			}
			if n++; n == 25 {
				break
			}
		}
		if first == nil || n < 25 {
			t.Fatalf("events: %d", n)
		}
		got := must(c.Events.Retrieve(ctx, first.Id))(t)
		if got.Id != first.Id || got.Type != first.Type || got.Data.Object == nil {
			t.Fatalf("event: %+v", got)
		}
	})

	t.Run("operator ach files", func(t *testing.T) {
		for f, err := range op.Operator.ACHFiles.List(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(f.Id, "achf_") {
				t.Fatalf("ach file: %+v", f)
			}
		}
		// Without TREASURY_ACH_OUTBOX the server has no live ACH: 409 invalid_state.
		cut, err := op.Operator.ACHFiles.Cut(ctx)
		if err != nil {
			requireAPIError(t, err, treasury.ErrConflict, treasury.KindConflict, 409, "invalid_state")
		} else if cut.Object != treasury.ACHFileCutObjectList {
			t.Fatalf("cut: %+v", cut)
		}
	})
}

// TestErrorClasses provokes each error class from the server.
func TestErrorClasses(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t)
	plat, c, _ := newPlatform(t, ctx)
	va := newAccount(t, ctx, c, plat.Id, unique("errors"))

	t.Run("400 BadRequestError", func(t *testing.T) {
		_, err := c.Payments.Create(ctx, treasury.PaymentRequest{
			VirtualAccountId: va.Id, Amount: 100, Rail: treasury.PaymentRequestRailRtp,
			Destination: &treasury.Destination{Name: "X", AccountNumber: "123456789", RoutingNumber: "123456789"},
		})
		e := requireAPIError(t, err, treasury.ErrBadRequest, treasury.KindBadRequest, 400, "invalid_request")
		if e.Param != "destination.routing_number" {
			t.Fatalf("param %q", e.Param)
		}
	})
	t.Run("401 AuthenticationError", func(t *testing.T) {
		bad, _ := newClient(t, "sk_sandbox_"+strings.Repeat("x", 40))
		_, err := bad.Platform.Retrieve(ctx)
		requireAPIError(t, err, treasury.ErrAuthentication, treasury.KindAuthentication, 401, "unauthorized")
	})
	t.Run("403 PermissionDeniedError", func(t *testing.T) {
		// A platform key on an operator route.
		_, err := c.Platforms.Retrieve(ctx, plat.Id)
		requireAPIError(t, err, treasury.ErrPermissionDenied, treasury.KindPermissionDenied, 403, "forbidden")
		// A live key on a sandbox-only route.
		live := must(operator(t).Platforms.EnableLive(ctx, plat.Id))(t)
		lc, _ := newClient(t, *live.LiveApiKey.Secret)
		_, err = lc.Simulations.CompletePayment(ctx, "pay_01jh3w5f6g7h8j9k0m1n2p3q4r")
		requireAPIError(t, err, treasury.ErrPermissionDenied, treasury.KindPermissionDenied, 403, "forbidden")
	})
	t.Run("404 NotFoundError", func(t *testing.T) {
		_, err := c.Payments.Retrieve(ctx, "pay_01jh3w5f6g7h8j9k0m1n2p3q4r")
		requireAPIError(t, err, treasury.ErrNotFound, treasury.KindNotFound, 404, "not_found")
		_, err = c.Webhooks.Retrieve(ctx, "wh_01jh3w5f6g7h8j9k0m1n2p3q4r")
		requireAPIError(t, err, treasury.ErrNotFound, treasury.KindNotFound, 404, "not_found")
		_, err = c.Ledger.JournalEntries.Retrieve(ctx, "je_01jh3w5f6g7h8j9k0m1n2p3q4r")
		requireAPIError(t, err, treasury.ErrNotFound, treasury.KindNotFound, 404, "not_found")
	})
	t.Run("422 UnprocessableEntityError", func(t *testing.T) {
		// No KYB yet.
		_, err := c.Payments.Create(ctx, treasury.PaymentRequest{
			VirtualAccountId: va.Id, Amount: 100, Rail: treasury.PaymentRequestRailRtp, Destination: &goodDestination,
		})
		requireAPIError(t, err, treasury.ErrUnprocessableEntity, treasury.KindUnprocessableEntity, 422, "kyb_not_approved")
	})
	t.Run("409 ConflictError and the idempotent replay", func(t *testing.T) {
		approveKYB(t, ctx, c, va.Id)
		fund(t, ctx, c, va.Id, 100_000)
		key := unique("idem")
		req := treasury.PaymentRequest{VirtualAccountId: va.Id, Amount: 1_234, Rail: treasury.PaymentRequestRailRtp, Destination: &goodDestination}
		first := must(c.Payments.Create(ctx, req, treasury.WithIdempotencyKey(key)))(t)
		if first.IdempotencyKey != key {
			t.Fatalf("the body's idempotency_key is %q, want the header's %q", first.IdempotencyKey, key)
		}
		again := must(c.Payments.Create(ctx, req, treasury.WithIdempotencyKey(key)))(t)
		if again.Id != first.Id {
			t.Fatalf("replay made another payment: %s, %s", again.Id, first.Id)
		}
		req.Amount = 4_321
		_, err := c.Payments.Create(ctx, req, treasury.WithIdempotencyKey(key))
		e := requireAPIError(t, err, treasury.ErrConflict, treasury.KindConflict, 409, "idempotency_conflict")
		if e.ResourceID != first.Id {
			t.Fatalf("resource_id %q, want %q", e.ResourceID, first.Id)
		}
		// An explicit body key is used as the header too.
		req.IdempotencyKey = key
		_, err = c.Payments.Create(ctx, req)
		requireAPIError(t, err, treasury.ErrConflict, treasury.KindConflict, 409, "idempotency_conflict")
	})
	t.Run("request id", func(t *testing.T) {
		_, err := c.Payments.Retrieve(ctx, "pay_01jh3w5f6g7h8j9k0m1n2p3q4r", treasury.WithRequestID("req_go_client_test_1"))
		e := requireAPIError(t, err, treasury.ErrNotFound, treasury.KindNotFound, 404, "not_found")
		if e.RequestID != "req_go_client_test_1" {
			t.Fatalf("request id %q", e.RequestID)
		}
	})
}

// TestCreateReplay: a creating POST sent again with its Idempotency-Key,
// by the caller or by the client's retry after a lost answer, answers with the
// first resource and makes no second one.
func TestCreateReplay(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t)
	plat, c, sandboxKey := newPlatform(t, ctx)
	req := treasury.CreateVirtualAccountRequest{
		PlatformId: plat.Id, EntityRef: unique("replay"), Type: treasury.CreateVirtualAccountRequestTypeChecking,
	}

	t.Run("same key twice", func(t *testing.T) {
		key := unique("idem-va")
		first := must(c.VirtualAccounts.Create(ctx, req, treasury.WithIdempotencyKey(key)))(t)
		again := must(c.VirtualAccounts.Create(ctx, req, treasury.WithIdempotencyKey(key)))(t)
		if again.Id != first.Id || again.EntityRef != first.EntityRef {
			t.Fatalf("the replay answered %s, the first %s", again.Id, first.Id)
		}
		// The replay's status and header, through the low-level client.
		r, err := c.Raw().CreateVirtualAccountWithResponse(ctx, &api.CreateVirtualAccountParams{}, req,
			func(_ context.Context, hr *http.Request) error { hr.Header.Set("Idempotency-Key", key); return nil })
		if err != nil || r.StatusCode() != http.StatusOK || r.JSON200 == nil || r.JSON200.Id != first.Id ||
			r.HTTPResponse.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("raw replay: %v %+v", err, r)
		}
		other := req
		other.EntityRef = unique("replay-other")
		_, err = c.VirtualAccounts.Create(ctx, other, treasury.WithIdempotencyKey(key))
		e := requireAPIError(t, err, treasury.ErrConflict, treasury.KindConflict, 409, "idempotency_conflict")
		if e.ResourceID != first.Id {
			t.Fatalf("resource_id %q, want %q", e.ResourceID, first.Id)
		}
	})

	t.Run("retried after a lost answer", func(t *testing.T) {
		base, _ := env(t)
		rec := &recorder{base: http.DefaultTransport, prefix: urlPath(base)}
		lossy := &losesFirstAnswer{base: rec}
		lc, err := treasury.NewClient(sandboxKey, treasury.WithBaseURL(base),
			treasury.WithHTTPClient(&http.Client{Transport: lossy, Timeout: 30 * time.Second}))
		if err != nil {
			t.Fatal(err)
		}
		lost := req
		lost.EntityRef = unique("lost-answer")
		va := must(lc.VirtualAccounts.Create(ctx, lost))(t)
		attempts := answered(rec.snapshot())
		if len(attempts) != 2 || attempts[0].status != http.StatusCreated || attempts[1].status != http.StatusOK ||
			attempts[0].idempotencyKey == "" || attempts[1].idempotencyKey != attempts[0].idempotencyKey {
			t.Fatalf("attempts: %+v", attempts)
		}
		n := 0
		for a, err := range c.VirtualAccounts.List(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			if a.EntityRef == lost.EntityRef {
				n++
				if a.Id != va.Id {
					t.Fatalf("account %s, the client was answered %s", a.Id, va.Id)
				}
			}
		}
		if n != 1 {
			t.Fatalf("%d accounts for one retried create, want 1", n)
		}
	})
}

// losesFirstAnswer drops the first successful answer as a broken
// connection would (the client sees an error), after the server acted on
// the request. Busy answers (429, 503) before it pass through: losing one
// of those would lose no work, and the test that counts the attempts
// would see only the retry's answer.
type losesFirstAnswer struct {
	base http.RoundTripper
	mu   sync.Mutex
	lost bool
}

func (l *losesFirstAnswer) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.base.RoundTrip(req)
	l.mu.Lock()
	drop := !l.lost && err == nil && resp.StatusCode < 300
	l.lost = l.lost || drop
	l.mu.Unlock()
	if drop {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, errors.New("connection reset by peer (simulated: the answer was lost)")
	}
	return resp, err
}

// TestBookTransfers moves money between a platform's accounts for real: the
// transfer and its journal entry, both accounts' transactions and balances,
// its event and webhook, the list with each filter, the idempotency key (a
// replay, a conflict, a retry after a lost answer, a refusal that does not
// take the key), and each refusal the server answers.
func TestBookTransfers(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t)
	op := operator(t)
	plat, _, sandboxKey := newPlatform(t, ctx)
	c, rec := newClient(t, sandboxKey)

	// from and third belong to one business, KYB-approved; to's business has
	// no KYB, which receiving does not need.
	entity := unique("bt-acme")
	from := newAccount(t, ctx, c, plat.Id, entity)
	third := newAccount(t, ctx, c, plat.Id, entity)
	to := newAccount(t, ctx, c, plat.Id, unique("bt-globex"))
	approveKYB(t, ctx, c, from.Id)
	fund(t, ctx, c, from.Id, 1_000_000)
	// The platform's live environment, and an account there.
	live := must(op.Platforms.EnableLive(ctx, plat.Id))(t)
	liveClient, _ := newClient(t, *live.LiveApiKey.Secret)
	liveAccount := newAccount(t, ctx, liveClient, plat.Id, entity)

	// The balances the transfers should leave, checked as they go: a book
	// transfer posts at once, so the balance moves before the call returns.
	balances := map[string]int{from.Id: 1_000_000}
	requireBalances := func(t *testing.T) {
		t.Helper()
		for id, want := range balances {
			b := must(c.VirtualAccounts.Balance(ctx, id, nil))(t)
			if b.Posted != want || b.Available != want {
				t.Fatalf("balance of %s: posted %d, available %d, want %d", id, b.Posted, b.Available, want)
			}
		}
	}
	var made []*treasury.BookTransfer // in the order they were made
	transfer := func(t *testing.T, req treasury.BookTransferRequest, opts ...treasury.RequestOption) *treasury.BookTransfer {
		t.Helper()
		bt := must(c.BookTransfers.Create(ctx, req, opts...))(t)
		if bt.FromVirtualAccountId != req.FromVirtualAccountId || bt.ToVirtualAccountId != req.ToVirtualAccountId ||
			bt.Amount != req.Amount || bt.Status != treasury.BookTransferStatusCompleted {
			t.Fatalf("book transfer %+v for %+v", bt, req)
		}
		made = append(made, bt)
		balances[req.FromVirtualAccountId] -= req.Amount
		balances[req.ToVirtualAccountId] += req.Amount
		requireBalances(t)
		return bt
	}

	// A webhook endpoint that takes only book_transfer.completed.
	type delivery struct {
		body   []byte
		header http.Header
	}
	received := make(chan delivery, 100)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		received <- delivery{body: body, header: r.Header.Clone()}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	wh := must(c.Webhooks.Create(ctx, treasury.CreateWebhookRequest{
		Url:    receiver.URL + "/book-transfers",
		Events: &[]treasury.CreateWebhookRequestEvents{treasury.CreateWebhookRequestEventsBookTransferCompleted},
	}))(t)
	if !reflect.DeepEqual(wh.Events, []string{"book_transfer.completed"}) || wh.Secret == nil {
		t.Fatalf("endpoint: %+v", wh)
	}

	first := transfer(t, treasury.BookTransferRequest{
		FromVirtualAccountId: from.Id, ToVirtualAccountId: to.Id, Amount: 250_000,
		Description: treasury.Ptr("rent share"), Metadata: &treasury.Metadata{"region": "east", "order id": "A&B"},
	})

	t.Run("the transfer", func(t *testing.T) {
		if !strings.HasPrefix(first.Id, "bt_") || first.Object != treasury.BookTransferObjectBookTransfer ||
			first.Currency != treasury.BookTransferCurrencyUSD || first.Description != "rent share" ||
			first.Environment != treasury.BookTransferEnvironmentSandbox || !strings.HasPrefix(first.JournalEntryId, "je_") ||
			!reflect.DeepEqual(first.Metadata, treasury.Metadata{"region": "east", "order id": "A&B"}) ||
			time.Since(first.CreatedAt) > time.Minute {
			t.Fatalf("book transfer: %+v", first)
		}
		// No key given: the client made one, sent in the header and the body.
		var sent []string
		for _, a := range rec.snapshot() {
			if a.method == http.MethodPost && a.path == "/book-transfers" && a.status == http.StatusCreated {
				sent = append(sent, a.idempotencyKey)
			}
		}
		if len(sent) != 1 || !strings.HasPrefix(first.IdempotencyKey, "idk_") || sent[0] != first.IdempotencyKey {
			t.Fatalf("the transfer's key %q, the headers sent %q", first.IdempotencyKey, sent)
		}

		got := must(c.BookTransfers.Retrieve(ctx, first.Id))(t)
		if !reflect.DeepEqual(got, first) {
			t.Fatalf("retrieved %+v, created %+v", got, first)
		}

		je := must(c.Ledger.JournalEntries.Retrieve(ctx, first.JournalEntryId))(t)
		if je.Id != first.JournalEntryId || je.Type != treasury.JournalEntryTypeBookTransfer ||
			je.Status != treasury.JournalEntryStatusPosted || je.Description != "rent share" ||
			je.Source != (treasury.Source{Type: treasury.SourceTypeBookTransfer, Id: first.Id}) || len(je.Entries) != 2 {
			t.Fatalf("the transfer's journal entry: %+v", je)
		}
		for _, e := range je.Entries {
			want := map[treasury.LedgerEntryDirection]string{
				treasury.LedgerEntryDirectionDebit: from.Id, treasury.LedgerEntryDirectionCredit: to.Id,
			}[e.Direction]
			if e.Type != treasury.LedgerEntryTypeBookTransfer || e.Amount != 250_000 || e.VirtualAccountId == nil ||
				*e.VirtualAccountId != want || e.JournalEntryId != je.Id {
				t.Fatalf("a line of the journal entry: %+v", e)
			}
		}

		// Each account shows one posted book_transfer transaction, and a
		// ledger entry of type book_transfer (asynchronous projections).
		for account, amount := range map[string]int{from.Id: -250_000, to.Id: 250_000} {
			var txns []treasury.Transaction
			eventually(t, 10*time.Second, "the book transfer's transaction on "+account, func() (bool, error) {
				var err error
				txns, err = treasury.Collect(c.VirtualAccounts.Transactions(ctx, account, &treasury.ListTransactionsParams{
					Type: treasury.Ptr(treasury.ListTransactionsParamsTypeBookTransfer),
				}))
				return len(txns) > 0 && txns[0].Status == treasury.TransactionStatusPosted, err
			})
			if len(txns) != 1 || txns[0].Type != treasury.TransactionTypeBookTransfer || txns[0].Amount != amount ||
				txns[0].Source != (treasury.Source{Type: treasury.SourceTypeBookTransfer, Id: first.Id}) {
				t.Fatalf("book_transfer transactions of %s: %+v", account, txns)
			}
			var entries []treasury.LedgerEntry
			eventually(t, 10*time.Second, "the book transfer's ledger entry of "+account, func() (bool, error) {
				var err error
				entries, err = treasury.Collect(c.Ledger.Entries.List(ctx, &treasury.ListLedgerEntriesParams{
					VirtualAccountId: &account, Type: treasury.Ptr(treasury.ListLedgerEntriesParamsTypeBookTransfer),
				}))
				return len(entries) > 0, err
			})
			if len(entries) != 1 || entries[0].JournalEntryId != first.JournalEntryId || entries[0].Type != treasury.LedgerEntryTypeBookTransfer {
				t.Fatalf("book_transfer ledger entries of %s: %+v", account, entries)
			}
		}

		// Without a description the transfer's is empty, its journal entry's
		// names the receiver.
		plain := transfer(t, treasury.BookTransferRequest{FromVirtualAccountId: from.Id, ToVirtualAccountId: to.Id, Amount: 10_000,
			Metadata: &treasury.Metadata{"region": "west"}})
		if plain.Description != "" {
			t.Fatalf("description %q", plain.Description)
		}
		if je := must(c.Ledger.JournalEntries.Retrieve(ctx, plain.JournalEntryId))(t); je.Description != "Book transfer to "+to.Id {
			t.Fatalf("the journal entry's description %q", je.Description)
		}
	})

	t.Run("event and webhook", func(t *testing.T) {
		var event treasury.Event
		eventually(t, 10*time.Second, "book_transfer.completed", func() (bool, error) {
			for e, err := range c.Events.List(ctx, &treasury.ListEventsParams{Type: treasury.Ptr(treasury.ListEventsParamsTypeBookTransferCompleted)}) {
				if err != nil {
					return false, err
				}
				if e.Data.Object["id"] == first.Id {
					event = e
					return true, nil
				}
			}
			return false, nil
		})
		if event.Type != treasury.EventTypeBookTransferCompleted || event.Data.Object["object"] != "book_transfer" ||
			event.Data.Object["journal_entry_id"] != first.JournalEntryId {
			t.Fatalf("event: %+v", event)
		}
		got := must(c.Events.Retrieve(ctx, event.Id))(t)
		if got.Type != treasury.EventTypeBookTransferCompleted || got.Data.Object["id"] != first.Id {
			t.Fatalf("retrieved event: %+v", got)
		}

		// Every delivery is a book_transfer.completed, verified; one is the
		// first transfer's.
		timeout := time.After(15 * time.Second)
		for found := false; !found; {
			select {
			case d := <-received:
				ev, err := webhooks.Verify(d.body, d.header, *wh.Secret)
				if err != nil {
					t.Fatalf("verify a delivery: %v", err)
				}
				if ev.Type != treasury.EventTypeBookTransferCompleted {
					t.Fatalf("an endpoint of book_transfer.completed received %s", ev.Type)
				}
				found = ev.Data.Object["id"] == first.Id
			case <-timeout:
				t.Fatal("no book_transfer.completed delivery of the first transfer")
			}
		}
		var deliveries []treasury.WebhookDelivery
		eventually(t, 10*time.Second, "the deliveries listed", func() (bool, error) {
			var err error
			deliveries, err = treasury.Collect(c.Webhooks.Deliveries.List(ctx, wh.Id, nil))
			return len(deliveries) >= 2, err
		})
		for _, d := range deliveries {
			if d.EventType != treasury.WebhookDeliveryEventTypeBookTransferCompleted {
				t.Fatalf("a delivery of %s to an endpoint of book_transfer.completed", d.EventType)
			}
		}
	})

	// Two more, to and from the third account.
	intoThird := transfer(t, treasury.BookTransferRequest{FromVirtualAccountId: from.Id, ToVirtualAccountId: third.Id, Amount: 5_000,
		Metadata: &treasury.Metadata{"region": "east"}})
	outOfThird := transfer(t, treasury.BookTransferRequest{FromVirtualAccountId: third.Id, ToVirtualAccountId: from.Id, Amount: 1_000})

	t.Run("list", func(t *testing.T) {
		if len(made) != 4 {
			t.Fatalf("%d transfers made", len(made))
		}
		list := func(t *testing.T, p treasury.ListBookTransfersParams) []string {
			t.Helper()
			var ids []string
			for bt, err := range c.BookTransfers.List(ctx, &p) {
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, bt.Id)
			}
			return ids
		}
		// newest first, from made filtered by keep
		want := func(keep func(*treasury.BookTransfer) bool) []string {
			var ids []string
			for i := len(made) - 1; i >= 0; i-- {
				if keep(made[i]) {
					ids = append(ids, made[i].Id)
				}
			}
			return ids
		}
		all := want(func(*treasury.BookTransfer) bool { return true })
		involves := func(id string) func(*treasury.BookTransfer) bool {
			return func(bt *treasury.BookTransfer) bool {
				return bt.FromVirtualAccountId == id || bt.ToVirtualAccountId == id
			}
		}

		// Every page, one at a time.
		before := len(rec.snapshot())
		if got := list(t, treasury.ListBookTransfersParams{Limit: treasury.Ptr(1)}); !reflect.DeepEqual(got, all) {
			t.Fatalf("every transfer a page at a time: %v, want %v", got, all)
		}
		pages := 0
		for _, a := range rec.snapshot()[before:] {
			if a.method == http.MethodGet && a.path == "/book-transfers" && a.status == http.StatusOK {
				if pages > 0 && !strings.Contains(a.query, "cursor=") {
					t.Fatalf("page %d without a cursor: %q", pages, a.query)
				}
				pages++
			}
		}
		if pages < len(all) {
			t.Fatalf("%d transfers at limit=1 in %d pages", len(all), pages)
		}

		at := intoThird.CreatedAt.UTC().Format(time.RFC3339Nano)
		unknown := "va_01jh3w5f6g7h8j9k0m1n2p3q4r"
		cases := []struct {
			name   string
			params treasury.ListBookTransfersParams
			want   []string
		}{
			{"out of or into from", treasury.ListBookTransfersParams{VirtualAccountId: &from.Id}, want(involves(from.Id))},
			{"into to", treasury.ListBookTransfersParams{VirtualAccountId: &to.Id}, want(involves(to.Id))},
			{"into and out of third", treasury.ListBookTransfersParams{VirtualAccountId: &third.Id}, []string{outOfThird.Id, intoThird.Id}},
			{"an unknown account", treasury.ListBookTransfersParams{VirtualAccountId: &unknown}, nil},
			{"created_after (inclusive)", treasury.ListBookTransfersParams{CreatedAfter: &at},
				want(func(bt *treasury.BookTransfer) bool { return !bt.CreatedAt.Before(intoThird.CreatedAt) })},
			{"created_before (exclusive)", treasury.ListBookTransfersParams{CreatedBefore: &at},
				want(func(bt *treasury.BookTransfer) bool { return bt.CreatedAt.Before(intoThird.CreatedAt) })},
			{"metadata", treasury.ListBookTransfersParams{Metadata: &treasury.MetadataFilter{"region": "east"}}, []string{intoThird.Id, first.Id}},
			{"metadata needing encoding", treasury.ListBookTransfersParams{Metadata: &treasury.MetadataFilter{"order id": "A&B"}}, []string{first.Id}},
			{"metadata matching none", treasury.ListBookTransfersParams{Metadata: &treasury.MetadataFilter{"region": "north"}}, nil},
			{"account and metadata", treasury.ListBookTransfersParams{VirtualAccountId: &third.Id,
				Metadata: &treasury.MetadataFilter{"region": "east"}, Limit: treasury.Ptr(1)}, []string{intoThird.Id}},
		}
		for _, tc := range cases {
			if got := list(t, tc.params); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			}
		}
		if got := list(t, treasury.ListBookTransfersParams{CreatedAfter: &at}); slices.Contains(got, first.Id) || !slices.Contains(got, intoThird.Id) {
			t.Errorf("created_after %s: %v", at, got)
		}

		// A sandbox transfer is not in the live environment's list.
		if got := must(treasury.Collect(liveClient.BookTransfers.List(ctx, nil)))(t); len(got) != 0 {
			t.Fatalf("the live list: %+v", got)
		}
		_, err := liveClient.BookTransfers.Retrieve(ctx, first.Id)
		requireAPIError(t, err, treasury.ErrNotFound, treasury.KindNotFound, 404, "not_found")
	})

	t.Run("refusals", func(t *testing.T) {
		req := func(from, to string, amount int) treasury.BookTransferRequest {
			return treasury.BookTransferRequest{FromVirtualAccountId: from, ToVirtualAccountId: to, Amount: amount}
		}
		refused := func(t *testing.T, r treasury.BookTransferRequest, sentinel error, kind treasury.ErrorKind, status int, code, where string) {
			t.Helper()
			_, err := c.BookTransfers.Create(ctx, r)
			e := requireAPIError(t, err, sentinel, kind, status, code)
			switch {
			case status == 400 && e.Param != where:
				t.Fatalf("param %q, want %q (%v)", e.Param, where, err)
			case status == 422 && e.ResourceID != where:
				t.Fatalf("resource_id %q, want %q (%v)", e.ResourceID, where, err)
			}
		}

		// 400: one account on both sides; an amount out of range.
		refused(t, req(from.Id, from.Id, 100), treasury.ErrBadRequest, treasury.KindBadRequest, 400, "invalid_request", "to_virtual_account_id")
		refused(t, req(from.Id, to.Id, 0), treasury.ErrBadRequest, treasury.KindBadRequest, 400, "invalid_request", "amount")

		// 404: an unknown account, another platform's, the live environment's.
		_, otherPlatform, _ := newPlatform(t, ctx)
		otherPlat := must(otherPlatform.Platform.Retrieve(ctx))(t)
		foreign := newAccount(t, ctx, otherPlatform, otherPlat.Id, unique("bt-foreign"))
		for _, r := range []treasury.BookTransferRequest{
			req(from.Id, "va_01jh3w5f6g7h8j9k0m1n2p3q4r", 100), req("va_01jh3w5f6g7h8j9k0m1n2p3q4r", to.Id, 100),
			req(from.Id, foreign.Id, 100), req(foreign.Id, to.Id, 100),
			req(from.Id, liveAccount.Id, 100), req(liveAccount.Id, from.Id, 100),
		} {
			refused(t, r, treasury.ErrNotFound, treasury.KindNotFound, 404, "not_found", "")
		}
		_, err := liveClient.BookTransfers.Create(ctx, req(liveAccount.Id, from.Id, 100))
		requireAPIError(t, err, treasury.ErrNotFound, treasury.KindNotFound, 404, "not_found")

		// 422, with the account in resource_id: the sender's business is not
		// KYB-approved (to holds 260,000 cents: not a matter of funds).
		refused(t, req(to.Id, from.Id, 1_000), treasury.ErrUnprocessableEntity, treasury.KindUnprocessableEntity, 422, "kyb_not_approved", to.Id)
		// More than the sender has.
		refused(t, req(from.Id, to.Id, balances[from.Id]+1), treasury.ErrUnprocessableEntity, treasury.KindUnprocessableEntity, 422, "insufficient_funds", from.Id)

		// A frozen account receives, and cannot send until unfrozen.
		frozen := newAccount(t, ctx, c, plat.Id, entity)
		must(c.VirtualAccounts.Freeze(ctx, frozen.Id))(t)
		transfer(t, req(from.Id, frozen.Id, 3_000))
		refused(t, req(frozen.Id, from.Id, 1_000), treasury.ErrUnprocessableEntity, treasury.KindUnprocessableEntity, 422, "account_not_active", frozen.Id)
		must(c.VirtualAccounts.Unfreeze(ctx, frozen.Id))(t)
		transfer(t, req(frozen.Id, from.Id, 3_000))

		// A closed account neither sends nor receives.
		closed := newAccount(t, ctx, c, plat.Id, entity)
		must(c.VirtualAccounts.Close(ctx, closed.Id))(t)
		refused(t, req(from.Id, closed.Id, 1_000), treasury.ErrUnprocessableEntity, treasury.KindUnprocessableEntity, 422, "account_not_active", closed.Id)
		refused(t, req(closed.Id, from.Id, 1_000), treasury.ErrUnprocessableEntity, treasury.KindUnprocessableEntity, 422, "account_not_active", closed.Id)

		// A refusal moves nothing, and does not take its key: the key then
		// makes a transfer.
		requireBalances(t)
		key := unique("bt-refused")
		_, err = c.BookTransfers.Create(ctx, req(from.Id, to.Id, balances[from.Id]+1), treasury.WithIdempotencyKey(key))
		requireAPIError(t, err, treasury.ErrUnprocessableEntity, treasury.KindUnprocessableEntity, 422, "insufficient_funds")
		if bt := transfer(t, req(from.Id, to.Id, 2_000), treasury.WithIdempotencyKey(key)); bt.IdempotencyKey != key {
			t.Fatalf("the transfer's key %q, want %q", bt.IdempotencyKey, key)
		}

		// The server requires a key (the client always sends one): a request
		// without, sent by hand, is a 400.
		base, _ := env(t)
		var e struct{ Code, Param string }
		var resp *http.Response
		for range 3 { // a busy server's 429 or 503 is asked again
			hr, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/book-transfers",
				strings.NewReader(fmt.Sprintf(`{"from_virtual_account_id":%q,"to_virtual_account_id":%q,"amount":100}`, from.Id, to.Id)))
			if err != nil {
				t.Fatal(err)
			}
			hr.Header.Set("Authorization", "Bearer "+sandboxKey)
			hr.Header.Set("Content-Type", "application/json")
			if resp, err = http.DefaultClient.Do(hr); err != nil {
				t.Fatal(err)
			}
			_ = json.NewDecoder(resp.Body).Decode(&e)
			resp.Body.Close()
			if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
				break
			}
			time.Sleep(time.Second)
		}
		if resp.StatusCode != http.StatusBadRequest || e.Code != "invalid_request" || e.Param != "idempotency_key" {
			t.Fatalf("a transfer without a key: %d %+v", resp.StatusCode, e)
		}
		requireBalances(t)

		_, err = c.BookTransfers.Retrieve(ctx, "bt_01jh3w5f6g7h8j9k0m1n2p3q4r")
		requireAPIError(t, err, treasury.ErrNotFound, treasury.KindNotFound, 404, "not_found")
	})

	t.Run("idempotency", func(t *testing.T) {
		key := unique("idem-bt")
		r := treasury.BookTransferRequest{FromVirtualAccountId: from.Id, ToVirtualAccountId: to.Id, Amount: 7_000,
			Metadata: &treasury.Metadata{"invoice": key}}
		once := transfer(t, r, treasury.WithIdempotencyKey(key))
		if once.IdempotencyKey != key {
			t.Fatalf("the transfer's key %q, want %q", once.IdempotencyKey, key)
		}
		// The same key and body: the same transfer, nothing moved again
		// (with the key in the body this time).
		withBodyKey := r
		withBodyKey.IdempotencyKey = key
		again := must(c.BookTransfers.Create(ctx, withBodyKey))(t)
		if !reflect.DeepEqual(again, once) {
			t.Fatalf("the replay answered %+v, the first %+v", again, once)
		}
		requireBalances(t)
		// The replay's status and header, through the low-level client.
		raw, err := c.Raw().CreateBookTransferWithResponse(ctx, &api.CreateBookTransferParams{IdempotencyKey: &key}, r)
		if err != nil || raw.StatusCode() != http.StatusOK || raw.JSON200 == nil || raw.JSON200.Id != once.Id ||
			raw.HTTPResponse.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("raw replay: %v %+v", err, raw)
		}
		// Another body under the key.
		other := r
		other.Amount = 7_001
		_, err = c.BookTransfers.Create(ctx, other, treasury.WithIdempotencyKey(key))
		e := requireAPIError(t, err, treasury.ErrConflict, treasury.KindConflict, 409, "idempotency_conflict")
		if e.ResourceID != once.Id {
			t.Fatalf("resource_id %q, want %q", e.ResourceID, once.Id)
		}
		requireBalances(t)

		// Retried after a lost answer, with the key the client made: one transfer.
		base, _ := env(t)
		lossyRec := &recorder{base: http.DefaultTransport, prefix: urlPath(base)}
		lc, err := treasury.NewClient(sandboxKey, treasury.WithBaseURL(base),
			treasury.WithHTTPClient(&http.Client{Transport: &losesFirstAnswer{base: lossyRec}, Timeout: 30 * time.Second}))
		if err != nil {
			t.Fatal(err)
		}
		lostKey := unique("lost")
		lost := must(lc.BookTransfers.Create(ctx, treasury.BookTransferRequest{FromVirtualAccountId: from.Id, ToVirtualAccountId: to.Id,
			Amount: 8_000, Metadata: &treasury.Metadata{"invoice": lostKey}}))(t)
		attempts := answered(lossyRec.snapshot())
		if len(attempts) != 2 || attempts[0].status != http.StatusCreated || attempts[1].status != http.StatusOK ||
			!strings.HasPrefix(attempts[0].idempotencyKey, "idk_") || attempts[1].idempotencyKey != attempts[0].idempotencyKey ||
			lost.IdempotencyKey != attempts[0].idempotencyKey {
			t.Fatalf("attempts: %+v, transfer %+v", attempts, lost)
		}
		balances[from.Id] -= 8_000
		balances[to.Id] += 8_000
		requireBalances(t)
		listed := must(treasury.Collect(c.BookTransfers.List(ctx, &treasury.ListBookTransfersParams{
			Metadata: &treasury.MetadataFilter{"invoice": lostKey},
		})))(t)
		if len(listed) != 1 || listed[0].Id != lost.Id {
			t.Fatalf("%d transfers for one retried create: %+v", len(listed), listed)
		}
	})
}

// TestRateLimitRetry lowers a platform's rate limit, gets a real 429 with
// Retry-After, and checks that the client waits as told and then succeeds.
func TestRateLimitRetry(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t)
	plat, _, sandboxKey := newPlatform(t, ctx)
	op := operator(t)
	must(op.Platforms.Update(ctx, plat.Id, treasury.ConfigurePlatformRequest{
		RateLimit: &treasury.RateLimit{PerSecond: 1, Burst: 1},
	}))(t)
	noRetry, _ := newClient(t, sandboxKey, treasury.WithMaxRetries(0))
	var limited *treasury.APIError
	for i := 0; i < 5 && limited == nil; i++ {
		if _, err := noRetry.Platform.Retrieve(ctx); err != nil {
			limited = requireAPIError(t, err, treasury.ErrRateLimit, treasury.KindRateLimit, 429, "rate_limited")
		}
	}
	if limited == nil {
		t.Fatal("no 429 from a burst over a limit of 1/s")
	}
	if limited.Header.Get("Retry-After") == "" {
		t.Fatal("the 429 has no Retry-After")
	}

	// Three POSTs at 1/s: each after the first meets a 429, waits as told, and
	// is sent again with the same Idempotency-Key.
	c, rec := newClient(t, sandboxKey, treasury.WithMaxRetries(3))
	start := time.Now()
	for i := 0; i < 3; i++ {
		newAccount(t, ctx, c, plat.Id, unique("limited"))
	}
	elapsed := time.Since(start)
	attempts := rec.snapshot()
	waited := false
	for i, a := range attempts {
		if a.status != http.StatusTooManyRequests || i+1 >= len(attempts) {
			continue
		}
		secs, err := time.ParseDuration(a.retryAfter + "s")
		if err != nil {
			t.Fatalf("Retry-After %q", a.retryAfter)
		}
		next := attempts[i+1]
		if gap := next.at.Sub(a.at); gap < secs-50*time.Millisecond {
			t.Fatalf("retried after %s, Retry-After said %s", gap, secs)
		}
		if a.method != http.MethodPost || a.idempotencyKey == "" || next.idempotencyKey != a.idempotencyKey {
			t.Fatalf("the retry of %s %s (key %q) was sent with key %q", a.method, a.path, a.idempotencyKey, next.idempotencyKey)
		}
		waited = true
	}
	if !waited {
		t.Fatalf("no 429 was retried in %d attempts (%s)", len(attempts), elapsed)
	}
	t.Logf("3 POSTs at 1/s took %s over %d attempts", elapsed, len(attempts))
	if n := len(must(treasury.Collect(c.VirtualAccounts.List(ctx, nil)))(t)); n != 3 {
		t.Fatalf("%d accounts after retried POSTs, want 3", n)
	}

	// Restore the service's limits: null, which the typed request cannot
	// say, through the low-level client.
	r, err := op.Raw().ConfigurePlatformWithBodyWithResponse(ctx, plat.Id, &api.ConfigurePlatformParams{},
		"application/json", strings.NewReader(`{"rate_limit":null}`))
	if err != nil || r.StatusCode() != http.StatusOK || r.JSON200 == nil || r.JSON200.RateLimit != nil {
		t.Fatalf("clearing the rate limit: %v %+v", err, r)
	}
	if r.HTTPResponse.Request.Header.Get("Idempotency-Key") != "" {
		t.Fatal("a PATCH got an Idempotency-Key")
	}
}

// TestWebhooks receives real deliveries on a local receiver and verifies them.
func TestWebhooks(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t)
	plat, c, _ := newPlatform(t, ctx)

	type delivery struct {
		body   []byte
		header http.Header
	}
	received := make(chan delivery, 100)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		received <- delivery{body: body, header: r.Header.Clone()}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)

	wh := must(c.Webhooks.Create(ctx, treasury.CreateWebhookRequest{
		Url:         receiver.URL + "/hooks",
		Events:      &[]treasury.CreateWebhookRequestEvents{treasury.CreateWebhookRequestEventsWebhookTest, treasury.CreateWebhookRequestEventsVirtualAccountCreated},
		Description: treasury.Ptr("go client test"),
	}))(t)
	if wh.Secret == nil || !strings.HasPrefix(*wh.Secret, "whsec_") {
		t.Fatalf("endpoint: %+v", wh)
	}
	secret := *wh.Secret

	await := func(eventType string) delivery {
		t.Helper()
		timeout := time.After(15 * time.Second)
		for {
			select {
			case d := <-received:
				var e struct {
					Type string `json:"type"`
				}
				_ = json.Unmarshal(d.body, &e)
				if e.Type == eventType {
					return d
				}
			case <-timeout:
				t.Fatalf("no %s delivery", eventType)
			}
		}
	}

	queued := must(c.Webhooks.Test(ctx, wh.Id))(t)
	if !strings.HasPrefix(queued.Id, "msg_") {
		t.Fatalf("queued: %+v", queued)
	}
	d := await("webhook.test")
	event, err := webhooks.Verify(d.body, d.header, secret)
	if err != nil {
		t.Fatalf("verify a real delivery: %v", err)
	}
	if event.Type != treasury.EventTypeWebhookTest || event.PlatformId != plat.Id {
		t.Fatalf("event: %+v", event)
	}
	if d.header.Get("webhook-id") != queued.Id {
		t.Fatalf("webhook-id %s, queued %s", d.header.Get("webhook-id"), queued.Id)
	}
	tampered := append([]byte(nil), d.body...)
	tampered[len(tampered)/2] ^= 1
	if _, err := webhooks.Verify(tampered, d.header, secret); !errors.Is(err, webhooks.ErrNoMatch) {
		t.Fatalf("a tampered body: %v", err)
	}
	if _, err := webhooks.Verify(d.body, d.header, "whsec_"+strings.Repeat("A", 43)+"="); !errors.Is(err, webhooks.ErrVerification) {
		t.Fatalf("a wrong secret: %v", err)
	}

	// A resource event.
	newAccount(t, ctx, c, plat.Id, unique("hooked"))
	d = await("virtual_account.created")
	if _, err := webhooks.Verify(d.body, d.header, secret); err != nil {
		t.Fatalf("verify virtual_account.created: %v", err)
	}

	got := must(c.Webhooks.Retrieve(ctx, wh.Id))(t)
	if got.Secret != nil || got.Url != wh.Url {
		t.Fatalf("retrieved: %+v", got)
	}
	listed := must(treasury.Collect(c.Webhooks.List(ctx, nil)))(t)
	if len(listed) != 1 || listed[0].Id != wh.Id {
		t.Fatalf("listed: %+v", listed)
	}
	updated := must(c.Webhooks.Update(ctx, wh.Id, treasury.UpdateWebhookRequest{
		Description: treasury.Ptr("renamed"),
		Events:      &[]treasury.UpdateWebhookRequestEvents{treasury.UpdateWebhookRequestEventsAsterisk},
	}))(t)
	if updated.Description != "renamed" {
		t.Fatalf("updated: %+v", updated)
	}

	var deliveries []treasury.WebhookDelivery
	eventually(t, 10*time.Second, "deliveries succeeded", func() (bool, error) {
		var err error
		deliveries, err = treasury.Collect(c.Webhooks.Deliveries.List(ctx, wh.Id, &treasury.ListWebhookDeliveriesParams{
			Limit: treasury.Ptr(1), Status: treasury.Ptr(treasury.ListWebhookDeliveriesParamsStatusSucceeded),
		}))
		return len(deliveries) >= 2, err
	})
	var testDelivery treasury.WebhookDelivery
	for _, dl := range deliveries {
		if dl.Id == queued.Id {
			testDelivery = dl
		}
	}
	if testDelivery.Id == "" || len(testDelivery.Attempts) == 0 {
		t.Fatalf("the test delivery is not listed: %+v", deliveries)
	}
	retried := must(c.Webhooks.Deliveries.Retry(ctx, wh.Id, testDelivery.Id))(t)
	if retried.Id != testDelivery.Id {
		t.Fatalf("retried: %+v", retried)
	}
	d = await("webhook.test")
	if d.header.Get("webhook-id") != testDelivery.Id {
		t.Fatalf("the retry's webhook-id %s", d.header.Get("webhook-id"))
	}

	// After a rotation, deliveries carry a signature by each secret.
	rotated := must(c.Webhooks.RotateSecret(ctx, wh.Id))(t)
	if rotated.Secret == nil || *rotated.Secret == secret {
		t.Fatalf("rotated: %+v", rotated)
	}
	must(c.Webhooks.Test(ctx, wh.Id))(t)
	d = await("webhook.test")
	if n := len(strings.Fields(d.header.Get("webhook-signature"))); n != 2 {
		t.Fatalf("%d signatures during the rotation, want 2", n)
	}
	for _, s := range []string{secret, *rotated.Secret} {
		if _, err := webhooks.Verify(d.body, d.header, s); err != nil {
			t.Fatalf("verify with either secret: %v", err)
		}
	}

	deleted := must(c.Webhooks.Delete(ctx, wh.Id))(t)
	if deleted.Id != wh.Id || !bool(deleted.Deleted) {
		t.Fatalf("deleted: %+v", deleted)
	}
	_, err = c.Webhooks.Retrieve(ctx, wh.Id)
	requireAPIError(t, err, treasury.ErrNotFound, treasury.KindNotFound, 404, "not_found")
}

// TestPaymentApprovals holds payments at or above a platform's
// payment_approval_threshold for a second key, for real: held (their amount
// + fee leave available) but never sent, the creating key's approval refused
// (403) and another key's releasing the payment to its rail (it completes),
// denials by either key (the hold released, the reason kept, 400 for a reason
// too long), a cancel while it waits, 409 for every decision on a payment not
// waiting, 404 for another platform's or environment's key, the list's new
// statuses, the three new events and their webhook deliveries, and the
// threshold removed again (null) so that payments go straight to their rail.
func TestPaymentApprovals(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t)
	op := operator(t)
	plat, c, _ := newPlatform(t, ctx)
	const threshold = 100_000

	// The key the platform was approved with creates the payments; a second
	// key approves them.
	keys := must(treasury.Collect(c.Platform.APIKeys.List(ctx, nil)))(t)
	if len(keys) != 1 {
		t.Fatalf("a new platform's keys: %+v", keys)
	}
	creatorID := keys[0].Id
	second := must(c.Platform.APIKeys.Create(ctx, treasury.CreateAPIKeyRequest{Name: "approver"}))(t)
	approver, _ := newClient(t, *second.Secret)
	// Another platform's key, and this platform's live key.
	stranger := func() *treasury.Client { _, sc, _ := newPlatform(t, ctx); return sc }()
	live := must(op.Platforms.EnableLive(ctx, plat.Id))(t)
	liveClient, _ := newClient(t, *live.LiveApiKey.Secret)

	va := newAccount(t, ctx, c, plat.Id, unique("approvals"))
	approveKYB(t, ctx, c, va.Id)
	fund(t, ctx, c, va.Id, 2_000_000)
	// ACH settles a second after it is released.
	must(c.Platform.Settings.Update(ctx, treasury.UpdateSettingsRequest{
		Sandbox: &treasury.UpdateSettingsRequest_Sandbox{AchSameDayDelaySeconds: treasury.Ptr(1), AchStandardDelaySeconds: treasury.Ptr(1)},
	}))(t)

	// A webhook endpoint of the three approval events only.
	type delivery struct {
		body   []byte
		header http.Header
	}
	received := make(chan delivery, 100)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		received <- delivery{body: body, header: r.Header.Clone()}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	wh := must(c.Webhooks.Create(ctx, treasury.CreateWebhookRequest{
		Url: receiver.URL + "/approvals",
		Events: &[]treasury.CreateWebhookRequestEvents{treasury.CreateWebhookRequestEventsPaymentRequiresApproval,
			treasury.CreateWebhookRequestEventsPaymentApproved, treasury.CreateWebhookRequestEventsPaymentDenied},
	}))(t)
	if !reflect.DeepEqual(wh.Events, []string{"payment.requires_approval", "payment.approved", "payment.denied"}) || wh.Secret == nil {
		t.Fatalf("endpoint: %+v", wh)
	}

	// The threshold, and its removal at the end whatever happens (null,
	// which the typed request cannot say: through the low-level client).
	clearThreshold := func() (*api.UpdateSettingsResponse, error) {
		return c.Raw().UpdateSettingsWithBodyWithResponse(context.Background(), &api.UpdateSettingsParams{},
			"application/json", strings.NewReader(`{"payment_approval_threshold":null}`))
	}
	t.Cleanup(func() { _, _ = clearThreshold() })
	settings := must(c.Platform.Settings.Update(ctx, treasury.UpdateSettingsRequest{PaymentApprovalThreshold: treasury.Ptr(threshold)}))(t)
	if settings.PaymentApprovalThreshold == nil || *settings.PaymentApprovalThreshold != threshold {
		t.Fatalf("settings: threshold %v", settings.PaymentApprovalThreshold)
	}

	balance := func(t *testing.T) *treasury.Balance {
		t.Helper()
		return must(c.VirtualAccounts.Balance(ctx, va.Id, nil))(t)
	}
	requireBalance := func(t *testing.T, posted, available int) {
		t.Helper()
		if b := balance(t); b.Posted != posted || b.Available != available {
			t.Fatalf("balance: posted %d, available %d, want %d and %d", b.Posted, b.Available, posted, available)
		}
	}
	// held creates a payment at or above the threshold and checks that it
	// waits, held, with its approval.
	held := func(t *testing.T, rail treasury.PaymentRequestRail, amount int) *treasury.Payment {
		t.Helper()
		before := balance(t)
		p := pay(t, ctx, c, va.Id, rail, amount, goodDestination)
		a := p.Approval
		if p.Status != treasury.PaymentStatusRequiresApproval || a == nil || a.CreatedBy != creatorID ||
			!a.ExpiresAt.Equal(p.CreatedAt.Add(7*24*time.Hour)) || a.ApprovedAt != nil || a.ApprovedBy != nil ||
			a.DeniedAt != nil || a.DeniedBy != nil || a.DenialReason != nil || p.CancellationReason != nil ||
			p.SubmittedAt != nil || p.Fee <= 0 {
			t.Fatalf("a payment of %d at a threshold of %d: %+v, approval %+v", amount, threshold, p, a)
		}
		requireBalance(t, before.Posted, before.Available-amount-p.Fee)
		return p
	}
	var requiringApproval, approved, denied []string // payment ids, oldest first

	t.Run("below the threshold", func(t *testing.T) {
		p := pay(t, ctx, c, va.Id, treasury.PaymentRequestRailRtp, threshold-1, goodDestination)
		if p.Status == treasury.PaymentStatusRequiresApproval || p.Approval != nil || p.CancellationReason != nil {
			t.Fatalf("a payment below the threshold: %+v", p)
		}
		if done := waitPayment(t, ctx, c, p.Id, treasury.PaymentStatusCompleted); done.Approval != nil {
			t.Fatalf("completed: %+v", done)
		}
	})

	t.Run("approved by a second key", func(t *testing.T) {
		before := balance(t)
		p := held(t, treasury.PaymentRequestRailRtp, threshold)
		requiringApproval = append(requiringApproval, p.Id)
		// The sandbox settles an RTP payment within a second: not this one.
		time.Sleep(2 * time.Second)
		if got := must(c.Payments.Retrieve(ctx, p.Id))(t); got.Status != treasury.PaymentStatusRequiresApproval || got.SubmittedAt != nil {
			t.Fatalf("a payment waiting for its approval after 2 s: %+v", got)
		}
		requireBalance(t, before.Posted, before.Available-threshold-p.Fee)

		// Not by the key that created it, nor the operator; not seen by
		// another platform or the live environment.
		_, err := c.Payments.Approve(ctx, p.Id)
		requireAPIError(t, err, treasury.ErrPermissionDenied, treasury.KindPermissionDenied, 403, "forbidden")
		_, err = op.Payments.Approve(ctx, p.Id)
		requireAPIError(t, err, treasury.ErrPermissionDenied, treasury.KindPermissionDenied, 403, "forbidden")
		for _, other := range []*treasury.Client{stranger, liveClient} {
			_, err = other.Payments.Approve(ctx, p.Id)
			requireAPIError(t, err, treasury.ErrNotFound, treasury.KindNotFound, 404, "not_found")
			_, err = other.Payments.Deny(ctx, p.Id, treasury.DenyPaymentRequest{})
			requireAPIError(t, err, treasury.ErrNotFound, treasury.KindNotFound, 404, "not_found")
		}
		if got := must(c.Payments.Retrieve(ctx, p.Id))(t); got.Status != treasury.PaymentStatusRequiresApproval || got.Approval.ApprovedBy != nil {
			t.Fatalf("after the refused approvals: %+v", got)
		}

		start := time.Now().Add(-time.Second)
		ok := must(approver.Payments.Approve(ctx, p.Id))(t)
		a := ok.Approval
		// Released to the rail: pending, or already on its way (RTP settles at once).
		if ok.Id != p.Id || !slices.Contains([]treasury.PaymentStatus{treasury.PaymentStatusPending, treasury.PaymentStatusSubmitted,
			treasury.PaymentStatusCompleted}, ok.Status) || a == nil || a.CreatedBy != creatorID ||
			a.ApprovedBy == nil || *a.ApprovedBy != second.Id || a.ApprovedAt == nil || a.ApprovedAt.Before(start) ||
			a.ApprovedAt.After(time.Now().Add(time.Second)) || a.DeniedAt != nil || a.DeniedBy != nil || a.DenialReason != nil {
			t.Fatalf("approved: %+v, approval %+v", ok, a)
		}
		approved = append(approved, p.Id)
		done := waitPayment(t, ctx, c, p.Id, treasury.PaymentStatusCompleted)
		if done.Approval == nil || done.Approval.ApprovedBy == nil || *done.Approval.ApprovedBy != second.Id {
			t.Fatalf("completed: %+v", done)
		}
		requireBalance(t, before.Posted-threshold-p.Fee, before.Available-threshold-p.Fee)

		// Decided once: approve, deny and cancel refuse a completed payment.
		_, err = approver.Payments.Approve(ctx, p.Id)
		requireAPIError(t, err, treasury.ErrConflict, treasury.KindConflict, 409, "invalid_state")
		_, err = c.Payments.Deny(ctx, p.Id, treasury.DenyPaymentRequest{})
		requireAPIError(t, err, treasury.ErrConflict, treasury.KindConflict, 409, "invalid_state")
		_, err = c.Payments.Cancel(ctx, p.Id)
		requireAPIError(t, err, treasury.ErrConflict, treasury.KindConflict, 409, "payment_not_cancelable")
		// A payment that never needed an approval is not awaiting one.
		plain := must(treasury.Collect(c.Payments.List(ctx, &treasury.ListPaymentsParams{
			Status: treasury.Ptr(treasury.ListPaymentsParamsStatusCompleted),
		})))(t)
		for _, q := range plain {
			if q.Approval == nil {
				_, err = approver.Payments.Approve(ctx, q.Id)
				requireAPIError(t, err, treasury.ErrConflict, treasury.KindConflict, 409, "invalid_state")
				break
			}
		}
	})

	t.Run("approved ACH answers pending", func(t *testing.T) {
		p := held(t, treasury.PaymentRequestRailAchStandard, threshold+1)
		requiringApproval = append(requiringApproval, p.Id)
		ok := must(approver.Payments.Approve(ctx, p.Id))(t)
		// The sandbox submits an ACH payment a second after its release, and
		// its expected settlement counts from the approval.
		if ok.Status != treasury.PaymentStatusPending || ok.Approval == nil || ok.Approval.ApprovedAt == nil ||
			ok.ExpectedSettlementAt.Before(*ok.Approval.ApprovedAt) || !ok.ExpectedSettlementAt.After(p.ExpectedSettlementAt) {
			t.Fatalf("an approved ACH payment: %+v (created %+v)", ok, p)
		}
		approved = append(approved, p.Id)
		waitPayment(t, ctx, c, p.Id, treasury.PaymentStatusCompleted)
	})

	t.Run("denied", func(t *testing.T) {
		before := balance(t)
		// By the key that created it, with a reason of 500 characters (1000
		// bytes: characters are counted).
		p := held(t, treasury.PaymentRequestRailRtp, threshold)
		requiringApproval = append(requiringApproval, p.Id)
		reason := strings.Repeat("é", 500)
		start := time.Now().Add(-time.Second)
		no := must(c.Payments.Deny(ctx, p.Id, treasury.DenyPaymentRequest{Reason: &reason}))(t)
		a := no.Approval
		if no.Status != treasury.PaymentStatusDenied || a == nil || a.DeniedBy == nil || *a.DeniedBy != creatorID ||
			a.DenialReason == nil || *a.DenialReason != reason || a.DeniedAt == nil || a.DeniedAt.Before(start) ||
			a.ApprovedAt != nil || a.ApprovedBy != nil || no.CanceledAt != nil || no.CancellationReason != nil {
			t.Fatalf("denied: %+v, approval %+v", no, a)
		}
		denied = append(denied, p.Id)
		requireBalance(t, before.Posted, before.Available) // the hold released
		if got := must(c.Payments.Retrieve(ctx, p.Id))(t); !reflect.DeepEqual(got, no) {
			t.Fatalf("retrieved %+v, denied %+v", got, no)
		}
		// Final: neither canceled, approved nor denied again.
		_, err := c.Payments.Cancel(ctx, p.Id)
		requireAPIError(t, err, treasury.ErrConflict, treasury.KindConflict, 409, "payment_not_cancelable")
		_, err = approver.Payments.Approve(ctx, p.Id)
		requireAPIError(t, err, treasury.ErrConflict, treasury.KindConflict, 409, "invalid_state")
		_, err = approver.Payments.Deny(ctx, p.Id, treasury.DenyPaymentRequest{})
		requireAPIError(t, err, treasury.ErrConflict, treasury.KindConflict, 409, "invalid_state")

		// A reason of 501 characters is refused and decides nothing; then
		// the second key denies without a reason (denial_reason null).
		q := held(t, treasury.PaymentRequestRailAchSameDay, 2*threshold)
		requiringApproval = append(requiringApproval, q.Id)
		_, err = approver.Payments.Deny(ctx, q.Id, treasury.DenyPaymentRequest{Reason: treasury.Ptr(strings.Repeat("x", 501))})
		if e := requireAPIError(t, err, treasury.ErrBadRequest, treasury.KindBadRequest, 400, "invalid_request"); e.Param != "reason" {
			t.Fatalf("param %q, want reason", e.Param)
		}
		if got := must(c.Payments.Retrieve(ctx, q.Id))(t); got.Status != treasury.PaymentStatusRequiresApproval || got.Approval.DeniedAt != nil {
			t.Fatalf("after a refused denial: %+v", got)
		}
		no = must(approver.Payments.Deny(ctx, q.Id, treasury.DenyPaymentRequest{}))(t)
		if a := no.Approval; no.Status != treasury.PaymentStatusDenied || a == nil || a.DeniedBy == nil ||
			*a.DeniedBy != second.Id || a.DeniedAt == nil || a.DenialReason != nil {
			t.Fatalf("denied without a reason: %+v, approval %+v", no, a)
		}
		denied = append(denied, q.Id)
		requireBalance(t, before.Posted, before.Available)
	})

	var kept *treasury.Payment
	t.Run("canceled while waiting", func(t *testing.T) {
		before := balance(t)
		p := held(t, treasury.PaymentRequestRailFednow, threshold)
		requiringApproval = append(requiringApproval, p.Id)
		gone := must(c.Payments.Cancel(ctx, p.Id))(t)
		// Canceled by the platform: no cancellation_reason (that is the expiry's).
		if gone.Status != treasury.PaymentStatusCanceled || gone.CanceledAt == nil || gone.CancellationReason != nil ||
			gone.Approval == nil || gone.Approval.ApprovedAt != nil || gone.Approval.DeniedAt != nil {
			t.Fatalf("canceled: %+v", gone)
		}
		requireBalance(t, before.Posted, before.Available)
		_, err := approver.Payments.Approve(ctx, p.Id)
		requireAPIError(t, err, treasury.ErrConflict, treasury.KindConflict, 409, "invalid_state")
		_, err = c.Payments.Deny(ctx, p.Id, treasury.DenyPaymentRequest{})
		requireAPIError(t, err, treasury.ErrConflict, treasury.KindConflict, 409, "invalid_state")

		// One left waiting, for the lists and the threshold's removal.
		kept = held(t, treasury.PaymentRequestRailRtp, threshold)
		requiringApproval = append(requiringApproval, kept.Id)
	})
	if kept == nil {
		t.FailNow()
	}

	t.Run("lists", func(t *testing.T) {
		if len(denied) != 2 {
			t.Fatalf("%d payments denied, want 2", len(denied))
		}
		ids := func(t *testing.T, status treasury.ListPaymentsParamsStatus) []string {
			t.Helper()
			var out []string
			for p, err := range c.Payments.List(ctx, &treasury.ListPaymentsParams{Status: &status, Limit: treasury.Ptr(1)}) {
				if err != nil {
					t.Fatal(err)
				}
				if string(p.Status) != string(status) {
					t.Fatalf("a %s payment in the list of %s", p.Status, status)
				}
				out = append(out, p.Id)
			}
			return out
		}
		if got := ids(t, treasury.ListPaymentsParamsStatusRequiresApproval); !reflect.DeepEqual(got, []string{kept.Id}) {
			t.Fatalf("requires_approval: %v, want %v", got, []string{kept.Id})
		}
		if got, want := ids(t, treasury.ListPaymentsParamsStatusDenied), []string{denied[1], denied[0]}; !reflect.DeepEqual(got, want) {
			t.Fatalf("denied: %v, want %v", got, want)
		}
	})

	t.Run("events and webhook", func(t *testing.T) {
		// Each event names its payment as it was then.
		want := map[treasury.EventType][]string{
			treasury.EventTypePaymentRequiresApproval: requiringApproval,
			treasury.EventTypePaymentApproved:         approved,
			treasury.EventTypePaymentDenied:           denied,
		}
		status := map[treasury.EventType]string{
			treasury.EventTypePaymentRequiresApproval: "requires_approval",
			treasury.EventTypePaymentApproved:         "pending",
			treasury.EventTypePaymentDenied:           "denied",
		}
		for typ, ids := range want {
			var events []treasury.Event
			eventually(t, 10*time.Second, string(typ)+" events", func() (bool, error) {
				var err error
				events, err = treasury.Collect(c.Events.List(ctx, &treasury.ListEventsParams{Type: treasury.Ptr(treasury.ListEventsParamsType(typ))}))
				return len(events) >= len(ids), err
			})
			var got []string
			for _, e := range events {
				if e.Type != typ || e.Data.Object["object"] != "payment" || e.Data.Object["status"] != status[typ] {
					t.Fatalf("a %s event: %+v", typ, e)
				}
				approval, _ := e.Data.Object["approval"].(map[string]any)
				if approval == nil || approval["created_by"] != creatorID {
					t.Fatalf("a %s event's approval: %+v", typ, e.Data.Object)
				}
				got = append(got, e.Data.Object["id"].(string))
			}
			slices.Reverse(got) // listed newest first; ids are oldest first
			if !reflect.DeepEqual(got, ids) {
				t.Fatalf("%s events of %v, want %v", typ, got, ids)
			}
		}

		// Every delivery is one of the three, verified; each expected one comes.
		missing := map[string]bool{}
		for typ, ids := range want {
			for _, id := range ids {
				missing[string(typ)+" "+id] = true
			}
		}
		timeout := time.After(20 * time.Second)
		for len(missing) > 0 {
			select {
			case d := <-received:
				ev, err := webhooks.Verify(d.body, d.header, *wh.Secret)
				if err != nil {
					t.Fatalf("verify a delivery: %v", err)
				}
				if _, ok := want[ev.Type]; !ok {
					t.Fatalf("an endpoint of the approval events received %s", ev.Type)
				}
				delete(missing, string(ev.Type)+" "+fmt.Sprint(ev.Data.Object["id"]))
			case <-timeout:
				t.Fatalf("deliveries not received: %v", missing)
			}
		}
		var deliveries []treasury.WebhookDelivery
		eventually(t, 10*time.Second, "the deliveries listed", func() (bool, error) {
			var err error
			deliveries, err = treasury.Collect(c.Webhooks.Deliveries.List(ctx, wh.Id, nil))
			return len(deliveries) >= len(requiringApproval)+len(approved)+len(denied), err
		})
		count := map[treasury.WebhookDeliveryEventType]int{}
		for _, d := range deliveries {
			count[d.EventType]++
		}
		if wantCount := map[treasury.WebhookDeliveryEventType]int{
			treasury.WebhookDeliveryEventTypePaymentRequiresApproval: len(requiringApproval),
			treasury.WebhookDeliveryEventTypePaymentApproved:         len(approved),
			treasury.WebhookDeliveryEventTypePaymentDenied:           len(denied),
		}; !reflect.DeepEqual(count, wantCount) {
			t.Fatalf("deliveries by event type: %v, want %v", count, wantCount)
		}
	})

	t.Run("threshold removed", func(t *testing.T) {
		r, err := clearThreshold()
		if err != nil || r.StatusCode() != http.StatusOK || r.JSON200 == nil || r.JSON200.PaymentApprovalThreshold != nil {
			t.Fatalf("clearing the threshold: %v %+v", err, r)
		}
		if s := must(c.Platform.Settings.Retrieve(ctx))(t); s.PaymentApprovalThreshold != nil {
			t.Fatalf("the threshold after null: %d", *s.PaymentApprovalThreshold)
		}
		// A payment at the old threshold goes straight to its rail.
		p := pay(t, ctx, c, va.Id, treasury.PaymentRequestRailRtp, threshold, goodDestination)
		if p.Status == treasury.PaymentStatusRequiresApproval || p.Approval != nil {
			t.Fatalf("a payment without a threshold: %+v", p)
		}
		waitPayment(t, ctx, c, p.Id, treasury.PaymentStatusCompleted)
		// The one created before keeps waiting, and still takes a second key.
		if got := must(c.Payments.Retrieve(ctx, kept.Id))(t); got.Status != treasury.PaymentStatusRequiresApproval {
			t.Fatalf("a payment held before the threshold's removal: %+v", got)
		}
		_, err = c.Payments.Approve(ctx, kept.Id)
		requireAPIError(t, err, treasury.ErrPermissionDenied, treasury.KindPermissionDenied, 403, "forbidden")
		must(approver.Payments.Approve(ctx, kept.Id))(t)
		waitPayment(t, ctx, c, kept.Id, treasury.PaymentStatusCompleted)
	})
}

// TestLinks follows the links between what moves money and the ledger (API.md
// §12), for real: a payment's JournalEntryId, an inbound transfer's and a book
// transfer's lead to a journal entry whose Source names them and whose lines
// each carry that Source; a manual entry's, a manual reversal's and a
// funding's source is the entry itself; a payment keeps its link through
// completion, cancellation, failure, denial (the entry posted or archived) and
// a return (a reversal whose source is the payment and which reverses the
// payment's entry); every ledger entry listed by Ledger.Entries.List, and
// every ledger.entry.created event and delivery, carries its entry's Source;
// payment.created shows the link, and a held payment waiting for its approval;
// a payment's entry is not reversed by hand (409) nor seen by another platform
// or the live environment (404).
func TestLinks(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t)
	op := operator(t)
	plat, c, _ := newPlatform(t, ctx)
	stranger := func() *treasury.Client { _, sc, _ := newPlatform(t, ctx); return sc }()
	live := must(op.Platforms.EnableLive(ctx, plat.Id))(t)
	liveClient, _ := newClient(t, *live.LiveApiKey.Secret)

	// A webhook endpoint of ledger.entry.created and payment.created, there
	// before any money moves.
	type delivery struct {
		body   []byte
		header http.Header
	}
	received := make(chan delivery, 1000)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		received <- delivery{body: body, header: r.Header.Clone()}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	wh := must(c.Webhooks.Create(ctx, treasury.CreateWebhookRequest{
		Url: receiver.URL + "/links",
		Events: &[]treasury.CreateWebhookRequestEvents{treasury.CreateWebhookRequestEventsLedgerEntryCreated,
			treasury.CreateWebhookRequestEventsPaymentCreated},
	}))(t)

	va := newAccount(t, ctx, c, plat.Id, unique("links"))
	other := newAccount(t, ctx, c, plat.Id, unique("links-other"))
	approveKYB(t, ctx, c, va.Id)
	// Payments wait until a simulation completes or fails them.
	must(c.Platform.Settings.Update(ctx, treasury.UpdateSettingsRequest{
		Sandbox: &treasury.UpdateSettingsRequest_Sandbox{AutoSettle: treasury.Ptr(false)},
	}))(t)

	// linked: each journal entry met, with the source it and its lines show,
	// how many lines it has and its status when last read.
	type link struct {
		source treasury.Source
		lines  int
		status treasury.JournalEntryStatus
	}
	linked := map[string]link{}
	// requireLinked reads a journal entry and checks its source, its status
	// and each of its lines.
	requireLinked := func(t *testing.T, jeID string, want treasury.Source, status treasury.JournalEntryStatus) *treasury.JournalEntry {
		t.Helper()
		je := must(c.Ledger.JournalEntries.Retrieve(ctx, jeID))(t)
		if je.Id != jeID || je.Source != want || je.Status != status || len(je.Entries) < 2 {
			t.Fatalf("journal entry %s: source %+v, status %s, %d lines; want %+v, %s",
				jeID, je.Source, je.Status, len(je.Entries), want, status)
		}
		for _, e := range je.Entries {
			if e.Source != want || e.JournalEntryId != jeID || string(e.Status) != string(status) {
				t.Fatalf("a line of journal entry %s (source %+v, %s): %+v", jeID, want, status, e)
			}
		}
		linked[jeID] = link{source: want, lines: len(je.Entries), status: je.Status}
		return je
	}
	requireSameLink := func(t *testing.T, what string, p *treasury.Payment, jeID string) {
		t.Helper()
		if p.JournalEntryId == nil || *p.JournalEntryId != jeID {
			t.Fatalf("%s payment %s: journal_entry_id %v, want %s", what, p.Id, p.JournalEntryId, jeID)
		}
	}
	paymentSource := func(p *treasury.Payment) treasury.Source {
		return treasury.Source{Type: treasury.SourceTypePayment, Id: p.Id}
	}

	t.Run("inbound transfer", func(t *testing.T) {
		it := fund(t, ctx, c, va.Id, 1_000_000)
		requireLinked(t, it.JournalEntryId, treasury.Source{Type: treasury.SourceTypeInboundTransfer, Id: it.Id},
			treasury.JournalEntryStatusPosted)
	})

	var paid *treasury.Payment
	t.Run("payment", func(t *testing.T) {
		p := pay(t, ctx, c, va.Id, treasury.PaymentRequestRailRtp, 10_000, goodDestination)
		if p.Status != treasury.PaymentStatusPending || p.JournalEntryId == nil || !strings.HasPrefix(*p.JournalEntryId, "je_") {
			t.Fatalf("a new payment: %+v", p)
		}
		jeID := *p.JournalEntryId
		// The entry holds amount + fee on the account until the payment completes.
		je := requireLinked(t, jeID, paymentSource(p), treasury.JournalEntryStatusPending)
		held, types := 0, map[treasury.LedgerEntryType]bool{}
		for _, e := range je.Entries {
			types[e.Type] = true
			if e.VirtualAccountId != nil && *e.VirtualAccountId == va.Id {
				if e.Direction == treasury.LedgerEntryDirectionDebit {
					held += e.Amount
				} else {
					held -= e.Amount
				}
			}
		}
		if held != p.Amount+p.Fee || !types[treasury.LedgerEntryTypePayment] || !types[treasury.LedgerEntryTypePaymentFee] {
			t.Fatalf("the payment's journal entry takes %d from the account (want %d + %d), lines of %v",
				held, p.Amount, p.Fee, types)
		}
		requireSameLink(t, "retrieved", must(c.Payments.Retrieve(ctx, p.Id))(t), jeID)
		done := must(c.Simulations.CompletePayment(ctx, p.Id))(t)
		if done.Status != treasury.PaymentStatusCompleted {
			t.Fatalf("completed: %+v", done)
		}
		requireSameLink(t, "completed", done, jeID)
		requireLinked(t, jeID, paymentSource(p), treasury.JournalEntryStatusPosted)
		found := false
		for q, err := range c.Payments.List(ctx, &treasury.ListPaymentsParams{VirtualAccountId: &va.Id, Limit: treasury.Ptr(1)}) {
			if err != nil {
				t.Fatal(err)
			}
			if q.Id == p.Id {
				found = true
				requireSameLink(t, "listed", &q, jeID)
			}
		}
		if !found {
			t.Fatalf("payment %s not listed", p.Id)
		}

		// The entry is the payment's: not reversed by hand, and not seen by
		// another platform or the live environment.
		_, err := c.Ledger.Entries.Create(ctx, treasury.JournalEntryReversal(treasury.JournalEntryReversalRequest{
			Reverses: jeID, Description: treasury.Ptr("undo a payment by hand"),
		}))
		requireAPIError(t, err, treasury.ErrConflict, treasury.KindConflict, 409, "invalid_state")
		requireLinked(t, jeID, paymentSource(p), treasury.JournalEntryStatusPosted)
		for _, o := range []*treasury.Client{stranger, liveClient} {
			_, err = o.Ledger.JournalEntries.Retrieve(ctx, jeID)
			requireAPIError(t, err, treasury.ErrNotFound, treasury.KindNotFound, 404, "not_found")
		}
		paid = p
	})
	if paid == nil {
		t.FailNow()
	}

	t.Run("book transfer", func(t *testing.T) {
		bt := must(c.BookTransfers.Create(ctx, treasury.BookTransferRequest{
			FromVirtualAccountId: va.Id, ToVirtualAccountId: other.Id, Amount: 5_000,
		}))(t)
		requireLinked(t, bt.JournalEntryId, treasury.Source{Type: treasury.SourceTypeBookTransfer, Id: bt.Id},
			treasury.JournalEntryStatusPosted)
	})

	t.Run("manual entries and a funding", func(t *testing.T) {
		self := func(je *treasury.JournalEntry) treasury.Source {
			return treasury.Source{Type: treasury.SourceTypeJournalEntry, Id: je.Id}
		}
		// The answer to each creation already shows the links.
		requireSelf := func(t *testing.T, je *treasury.JournalEntry) {
			t.Helper()
			if je.Source != self(je) || len(je.Entries) < 2 {
				t.Fatalf("a manual journal entry: %+v", je)
			}
			for _, e := range je.Entries {
				if e.Source != self(je) || e.JournalEntryId != je.Id {
					t.Fatalf("a line of manual journal entry %s: %+v", je.Id, e)
				}
			}
			requireLinked(t, je.Id, self(je), treasury.JournalEntryStatusPosted)
		}
		requireSelf(t, must(c.Ledger.Entries.Create(ctx, treasury.JournalEntryShorthand(treasury.JournalEntryShorthandRequest{
			Type: treasury.JournalEntryShorthandRequestTypeAdjustment, Description: "goodwill credit",
			VirtualAccountId: va.Id, Direction: treasury.JournalEntryShorthandRequestDirectionCredit, Amount: 1_500,
		})))(t))
		lines := must(c.Ledger.Entries.Create(ctx, treasury.JournalEntryLines(treasury.JournalEntryLinesRequest{
			Type: treasury.JournalEntryLinesRequestTypeFee, Description: "monthly fee",
			Lines: []treasury.JournalLine{
				{VirtualAccountId: &va.Id, Direction: treasury.JournalLineDirectionDebit, Amount: 700},
				{VirtualAccountId: &other.Id, Direction: treasury.JournalLineDirectionCredit, Amount: 700},
			},
		})))(t)
		requireSelf(t, lines)
		// A manual reversal is a manual entry: its own source, not the
		// reversed entry's.
		reversal := must(c.Ledger.Entries.Create(ctx, treasury.JournalEntryReversal(treasury.JournalEntryReversalRequest{
			Reverses: lines.Id,
		})))(t)
		if reversal.Reverses == nil || *reversal.Reverses != lines.Id {
			t.Fatalf("reversal: %+v", reversal)
		}
		requireSelf(t, reversal)
		funding := must(op.Platforms.Fund(ctx, plat.Id, treasury.FundPlatformRequest{
			Amount: 100_000, Environment: treasury.Ptr(treasury.FundPlatformRequestEnvironmentSandbox),
		}))(t)
		requireSelf(t, funding)
	})

	var heldPayment *treasury.Payment
	t.Run("ended payments keep their link", func(t *testing.T) {
		// Canceled, and failed before settlement: the hold released, the
		// entry archived.
		p := pay(t, ctx, c, va.Id, treasury.PaymentRequestRailAchStandard, 2_000, goodDestination)
		canceled := must(c.Payments.Cancel(ctx, p.Id))(t)
		requireSameLink(t, "canceled", canceled, *p.JournalEntryId)
		requireLinked(t, *p.JournalEntryId, paymentSource(p), treasury.JournalEntryStatusArchived)

		p = pay(t, ctx, c, va.Id, treasury.PaymentRequestRailAchSameDay, 3_000, goodDestination)
		failed := must(c.Simulations.FailPayment(ctx, p.Id, treasury.SimulatePaymentFailRequest{NetworkCode: "R01"}))(t)
		if failed.Status != treasury.PaymentStatusFailed {
			t.Fatalf("failed: %+v", failed)
		}
		requireSameLink(t, "failed", failed, *p.JournalEntryId)
		requireLinked(t, *p.JournalEntryId, paymentSource(p), treasury.JournalEntryStatusArchived)

		// Returned after settlement: the payment's entry stays posted, and a
		// reversal of its own, the payment's too, gives amount + fee back.
		p = pay(t, ctx, c, va.Id, treasury.PaymentRequestRailAchSameDay, 4_000, goodDestination)
		must(c.Simulations.CompletePayment(ctx, p.Id))(t)
		returned := must(c.Simulations.FailPayment(ctx, p.Id, treasury.SimulatePaymentFailRequest{NetworkCode: "R01"}))(t)
		if returned.Status != treasury.PaymentStatusFailed || returned.CompletedAt == nil {
			t.Fatalf("returned: %+v", returned)
		}
		requireSameLink(t, "returned", returned, *p.JournalEntryId)
		orig := requireLinked(t, *p.JournalEntryId, paymentSource(p), treasury.JournalEntryStatusPosted)
		if orig.ReversedBy == nil {
			t.Fatalf("the returned payment's journal entry names no reversal: %+v", orig)
		}
		rev := requireLinked(t, *orig.ReversedBy, paymentSource(p), treasury.JournalEntryStatusPosted)
		if rev.Type != treasury.JournalEntryTypePaymentReversal || rev.Reverses == nil || *rev.Reverses != *p.JournalEntryId {
			t.Fatalf("the return's journal entry: %+v", rev)
		}
		back := 0
		for _, e := range rev.Entries {
			if e.VirtualAccountId != nil && *e.VirtualAccountId == va.Id && e.Direction == treasury.LedgerEntryDirectionCredit {
				back += e.Amount
			}
		}
		if back != p.Amount+p.Fee {
			t.Fatalf("the return gives %d back, want %d + %d", back, p.Amount, p.Fee)
		}

		// Held for an approval, then denied.
		clearThreshold := func() (*api.UpdateSettingsResponse, error) {
			return c.Raw().UpdateSettingsWithBodyWithResponse(context.Background(), &api.UpdateSettingsParams{},
				"application/json", strings.NewReader(`{"payment_approval_threshold":null}`))
		}
		t.Cleanup(func() { _, _ = clearThreshold() })
		must(c.Platform.Settings.Update(ctx, treasury.UpdateSettingsRequest{PaymentApprovalThreshold: treasury.Ptr(50_000)}))(t)
		p = pay(t, ctx, c, va.Id, treasury.PaymentRequestRailRtp, 50_000, goodDestination)
		if p.Status != treasury.PaymentStatusRequiresApproval || p.JournalEntryId == nil {
			t.Fatalf("a payment at the threshold: %+v", p)
		}
		heldPayment = p
		requireLinked(t, *p.JournalEntryId, paymentSource(p), treasury.JournalEntryStatusPending)
		denied := must(c.Payments.Deny(ctx, p.Id, treasury.DenyPaymentRequest{}))(t)
		if denied.Status != treasury.PaymentStatusDenied {
			t.Fatalf("denied: %+v", denied)
		}
		requireSameLink(t, "denied", denied, *p.JournalEntryId)
		requireLinked(t, *p.JournalEntryId, paymentSource(p), treasury.JournalEntryStatusArchived)
		if r, err := clearThreshold(); err != nil || r.StatusCode() != http.StatusOK {
			t.Fatalf("clearing the threshold: %v %+v", err, r)
		}
	})
	if heldPayment == nil {
		t.FailNow()
	}

	// sourceOK: a source's id is of its type.
	sourceOK := func(s treasury.Source, jeID string) bool {
		prefix := map[treasury.SourceType]string{
			treasury.SourceTypePayment: "pay_", treasury.SourceTypeInboundTransfer: "itx_",
			treasury.SourceTypeBookTransfer: "bt_", treasury.SourceTypeJournalEntry: "je_",
		}[s.Type]
		return prefix != "" && strings.HasPrefix(s.Id, prefix) && (s.Type != treasury.SourceTypeJournalEntry || s.Id == jeID)
	}

	t.Run("ledger entries listed", func(t *testing.T) {
		// The list is a projection: every line of every entry met appears
		// shortly, each with its entry's source.
		count := map[string]int{}
		eventually(t, 10*time.Second, "the journal entries' lines listed", func() (bool, error) {
			clear(count)
			for e, err := range c.Ledger.Entries.List(ctx, &treasury.ListLedgerEntriesParams{Limit: treasury.Ptr(20)}) {
				if err != nil {
					return false, err
				}
				if !sourceOK(e.Source, e.JournalEntryId) {
					return false, fmt.Errorf("ledger entry %s of %s: source %+v", e.Id, e.JournalEntryId, e.Source)
				}
				if l, ok := linked[e.JournalEntryId]; ok {
					if e.Source != l.source {
						return false, fmt.Errorf("ledger entry %s of %s: source %+v, its journal entry's %+v",
							e.Id, e.JournalEntryId, e.Source, l.source)
					}
					count[e.JournalEntryId]++
				}
			}
			for id, l := range linked {
				if count[id] != l.lines {
					return false, nil
				}
			}
			return true, nil
		})
		// Scoped to an account, and filtered by type.
		for e, err := range c.Ledger.Entries.List(ctx, &treasury.ListLedgerEntriesParams{VirtualAccountId: &other.Id}) {
			if err != nil {
				t.Fatal(err)
			}
			if l, ok := linked[e.JournalEntryId]; !ok || e.Source != l.source {
				t.Fatalf("a ledger entry of %s: %+v", other.Id, e)
			}
		}
		reversals := must(treasury.Collect(c.Ledger.Entries.List(ctx, &treasury.ListLedgerEntriesParams{
			Type: treasury.Ptr(treasury.ListLedgerEntriesParamsTypePaymentReversal),
		})))(t)
		if len(reversals) == 0 {
			t.Fatal("no payment_reversal ledger entries")
		}
		for _, e := range reversals {
			if e.Source.Type != treasury.SourceTypePayment || !strings.HasPrefix(e.Source.Id, "pay_") {
				t.Fatalf("a payment_reversal ledger entry: %+v", e)
			}
		}
	})

	t.Run("events and webhook", func(t *testing.T) {
		// payment.created shows the link, and a held payment already
		// waiting, with its approval.
		var created []treasury.Payment
		eventually(t, 10*time.Second, "payment.created events", func() (bool, error) {
			created = nil
			for e, err := range c.Events.List(ctx, &treasury.ListEventsParams{Type: treasury.Ptr(treasury.ListEventsParamsTypePaymentCreated)}) {
				if err != nil {
					return false, err
				}
				created = append(created, objectAs[treasury.Payment](t, e.Data.Object))
			}
			return len(created) >= 5, nil // the payment, then canceled, failed, returned and held ones
		})
		byID := map[string]treasury.Payment{}
		for _, p := range created {
			if p.JournalEntryId == nil || linked[*p.JournalEntryId].source != (treasury.Source{Type: treasury.SourceTypePayment, Id: p.Id}) {
				t.Fatalf("payment.created of %s: journal_entry_id %v", p.Id, p.JournalEntryId)
			}
			byID[p.Id] = p
		}
		if p := byID[paid.Id]; p.Status != treasury.PaymentStatusPending || p.Approval != nil {
			t.Fatalf("payment.created of %s: %+v", paid.Id, p)
		}
		if p := byID[heldPayment.Id]; p.Status != treasury.PaymentStatusRequiresApproval || p.Approval == nil ||
			p.Approval.CreatedBy == "" || p.Approval.ApprovedAt != nil || p.Approval.DeniedAt != nil {
			t.Fatalf("payment.created of the held payment %s: %+v, approval %+v", heldPayment.Id, p, p.Approval)
		}

		// Every ledger.entry.created carries its entry's source: one for
		// each line of a posted entry (a pending one's when it posts), none
		// for an entry archived without posting.
		seen := map[string]int{}
		eventually(t, 10*time.Second, "ledger.entry.created events", func() (bool, error) {
			clear(seen)
			for e, err := range c.Events.List(ctx, &treasury.ListEventsParams{
				Type: treasury.Ptr(treasury.ListEventsParamsTypeLedgerEntryCreated), Limit: treasury.Ptr(100),
			}) {
				if err != nil {
					return false, err
				}
				le := objectAs[treasury.LedgerEntry](t, e.Data.Object)
				if !sourceOK(le.Source, le.JournalEntryId) || le.Status != treasury.LedgerEntryStatusPosted {
					return false, fmt.Errorf("ledger.entry.created %s: %+v", e.Id, le)
				}
				if l, ok := linked[le.JournalEntryId]; ok {
					if le.Source != l.source {
						return false, fmt.Errorf("ledger.entry.created of %s: source %+v, want %+v", le.JournalEntryId, le.Source, l.source)
					}
					seen[le.JournalEntryId]++
				}
			}
			for id, l := range linked {
				if want := map[bool]int{true: l.lines}[l.status == treasury.JournalEntryStatusPosted]; seen[id] != want {
					return false, nil
				}
			}
			return true, nil
		})

		// The deliveries, verified: the payment's payment.created and a
		// ledger.entry.created of its journal entry, with their links.
		jeID := *paid.JournalEntryId
		missing := map[string]bool{"payment.created": true, "ledger.entry.created": true}
		timeout := time.After(20 * time.Second)
		for len(missing) > 0 {
			select {
			case d := <-received:
				ev, err := webhooks.Verify(d.body, d.header, *wh.Secret)
				if err != nil {
					t.Fatalf("verify a delivery: %v", err)
				}
				switch ev.Type {
				case treasury.EventTypePaymentCreated:
					if p := objectAs[treasury.Payment](t, ev.Data.Object); p.Id == paid.Id {
						requireSameLink(t, "delivered", &p, jeID)
						delete(missing, "payment.created")
					}
				case treasury.EventTypeLedgerEntryCreated:
					le := objectAs[treasury.LedgerEntry](t, ev.Data.Object)
					if le.JournalEntryId == jeID {
						if le.Source != paymentSource(paid) {
							t.Fatalf("a delivered ledger.entry.created of %s: %+v", jeID, le)
						}
						delete(missing, "ledger.entry.created")
					}
				default:
					t.Fatalf("an endpoint of ledger.entry.created and payment.created received %s", ev.Type)
				}
			case <-timeout:
				t.Fatalf("deliveries not received: %v", missing)
			}
		}
	})
}

// objectAs decodes an event's data.object into its model.
func objectAs[T any](t *testing.T, object map[string]any) T {
	t.Helper()
	var v T
	raw, err := json.Marshal(object)
	if err == nil {
		err = json.Unmarshal(raw, &v)
	}
	if err != nil {
		t.Fatalf("decode %T from %v: %v", v, object, err)
	}
	return v
}

// TestScheduledPayments schedules payments for tomorrow (Eastern) against a
// real serve (API.md §12): created scheduled with their date, nothing held and
// no journal entry, the balance unmoved; 400 param scheduled_for for today, a
// past date and one over 365 days ahead; the list of scheduled payments; one
// released by the simulation, pending and held with its journal entry, then
// settled, and a second release refused (409 invalid_state); one canceled while
// scheduled (nothing to release); one released on an account without funds,
// failed with insufficient_funds and a null network_code, nothing held; 403
// for the operator key, 404 for another platform; the payment.released and
// payment.failed events and their verified webhook deliveries.
func TestScheduledPayments(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t)
	op := operator(t)
	plat, c, _ := newPlatform(t, ctx)
	_, stranger, _ := newPlatform(t, ctx)

	// Dates are Eastern: tomorrow there is the first date a payment can be
	// scheduled for.
	eastern, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().In(eastern)
	day := func(offset int) treasury.Date { return treasury.NewDate(now.Year(), now.Month(), now.Day()+offset) }
	tomorrow := day(1)

	va := newAccount(t, ctx, c, plat.Id, unique("scheduled"))
	approveKYB(t, ctx, c, va.Id)
	fund(t, ctx, c, va.Id, 100_000)
	empty := newAccount(t, ctx, c, plat.Id, unique("scheduled-empty")) // KYB-approved, never funded
	approveKYB(t, ctx, c, empty.Id)
	// ACH settles a second after it is released.
	must(c.Platform.Settings.Update(ctx, treasury.UpdateSettingsRequest{
		Sandbox: &treasury.UpdateSettingsRequest_Sandbox{AchSameDayDelaySeconds: treasury.Ptr(1), AchStandardDelaySeconds: treasury.Ptr(1)},
	}))(t)

	// A webhook endpoint of payment.released and payment.failed.
	type delivery struct {
		body   []byte
		header http.Header
	}
	received := make(chan delivery, 100)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		received <- delivery{body: body, header: r.Header.Clone()}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	wh := must(c.Webhooks.Create(ctx, treasury.CreateWebhookRequest{
		Url: receiver.URL + "/scheduled",
		Events: &[]treasury.CreateWebhookRequestEvents{treasury.CreateWebhookRequestEventsPaymentReleased,
			treasury.CreateWebhookRequestEventsPaymentFailed},
	}))(t)
	if !reflect.DeepEqual(wh.Events, []string{"payment.released", "payment.failed"}) || wh.Secret == nil {
		t.Fatalf("endpoint: %+v", wh)
	}

	balance := func(t *testing.T, vaID string) *treasury.Balance {
		t.Helper()
		return must(c.VirtualAccounts.Balance(ctx, vaID, nil))(t)
	}
	requireBalance := func(t *testing.T, vaID string, posted, available int) {
		t.Helper()
		if b := balance(t, vaID); b.Posted != posted || b.Available != available {
			t.Fatalf("balance: posted %d, available %d, want %d and %d", b.Posted, b.Available, posted, available)
		}
	}
	request := func(vaID string, amount int, date treasury.Date) treasury.PaymentRequest {
		return treasury.PaymentRequest{
			VirtualAccountId: vaID, Amount: amount, Rail: treasury.PaymentRequestRailAchStandard,
			Destination: &goodDestination, Description: treasury.Ptr("scheduled"), ScheduledFor: &date,
		}
	}
	// schedule creates a payment for tomorrow and checks that it waits,
	// holding nothing.
	schedule := func(t *testing.T, vaID string, amount int) *treasury.Payment {
		t.Helper()
		before := balance(t, vaID)
		p := must(c.Payments.Create(ctx, request(vaID, amount, tomorrow)))(t)
		if p.Status != treasury.PaymentStatusScheduled || p.ScheduledFor == nil || p.ScheduledFor.String() != tomorrow.String() ||
			p.JournalEntryId != nil || p.Failure != nil || p.SubmittedAt != nil || p.FailedAt != nil || p.CanceledAt != nil ||
			p.Approval != nil || p.Amount != amount || p.Fee <= 0 {
			t.Fatalf("a payment scheduled for %s: %+v", tomorrow, p)
		}
		if b := balance(t, vaID); b.Posted != before.Posted || b.Available != before.Available || b.PendingOutbound != before.PendingOutbound {
			t.Fatalf("a scheduled payment moved the balance: %+v, before %+v", b, before)
		}
		if got := must(c.Payments.Retrieve(ctx, p.Id))(t); !reflect.DeepEqual(got, p) {
			t.Fatalf("retrieved %+v, created %+v", got, p)
		}
		return p
	}

	var toRelease, toCancel, unfunded *treasury.Payment
	t.Run("scheduled", func(t *testing.T) {
		toRelease = schedule(t, va.Id, 10_000)
		// Nothing for its transactions yet.
		txs := must(treasury.Collect(c.VirtualAccounts.Transactions(ctx, va.Id, nil)))(t)
		for _, tx := range txs {
			if tx.Source.Id == toRelease.Id {
				t.Fatalf("a scheduled payment's transaction: %+v", tx)
			}
		}
		// The operator key releases nothing; another platform does not see it.
		_, err := op.Simulations.ReleasePayment(ctx, toRelease.Id)
		requireAPIError(t, err, treasury.ErrPermissionDenied, treasury.KindPermissionDenied, 403, "forbidden")
		_, err = stranger.Simulations.ReleasePayment(ctx, toRelease.Id)
		requireAPIError(t, err, treasury.ErrNotFound, treasury.KindNotFound, 404, "not_found")
		if got := must(c.Payments.Retrieve(ctx, toRelease.Id))(t); got.Status != treasury.PaymentStatusScheduled {
			t.Fatalf("after the refused releases: %+v", got)
		}
	})
	if toRelease == nil {
		t.FailNow()
	}

	t.Run("bad dates", func(t *testing.T) {
		for name, date := range map[string]treasury.Date{"today": day(0), "yesterday": day(-1), "366 days ahead": day(366)} {
			_, err := c.Payments.Create(ctx, request(va.Id, 10_000, date))
			if e := requireAPIError(t, err, treasury.ErrBadRequest, treasury.KindBadRequest, 400, ""); e.Param != "scheduled_for" {
				t.Fatalf("%s (%s): param %q, want scheduled_for", name, date, e.Param)
			}
		}
	})

	t.Run("list", func(t *testing.T) {
		toCancel = schedule(t, va.Id, 20_000)
		unfunded = schedule(t, empty.Id, 5_000) // checks pass: the funds are not checked before its date
		var got []string
		for p, err := range c.Payments.List(ctx, &treasury.ListPaymentsParams{
			Status: treasury.Ptr(treasury.ListPaymentsParamsStatusScheduled), Limit: treasury.Ptr(1),
		}) {
			if err != nil {
				t.Fatal(err)
			}
			if p.Status != treasury.PaymentStatusScheduled || p.ScheduledFor == nil {
				t.Fatalf("in the list of scheduled payments: %+v", p)
			}
			got = append(got, p.Id)
		}
		if want := []string{unfunded.Id, toCancel.Id, toRelease.Id}; !reflect.DeepEqual(got, want) {
			t.Fatalf("scheduled: %v, want %v (newest first)", got, want)
		}
		// Not among the pending ones.
		pending := must(treasury.Collect(c.Payments.List(ctx, &treasury.ListPaymentsParams{
			Status: treasury.Ptr(treasury.ListPaymentsParamsStatusPending),
		})))(t)
		if len(pending) != 0 {
			t.Fatalf("pending payments: %+v", pending)
		}
	})
	if toCancel == nil || unfunded == nil {
		t.FailNow()
	}

	t.Run("released", func(t *testing.T) {
		before := balance(t, va.Id)
		p := must(c.Simulations.ReleasePayment(ctx, toRelease.Id))(t)
		if p.Id != toRelease.Id || p.Status != treasury.PaymentStatusPending || p.JournalEntryId == nil ||
			p.ScheduledFor == nil || p.ScheduledFor.String() != tomorrow.String() || p.Failure != nil || p.Fee <= 0 {
			t.Fatalf("released: %+v", p)
		}
		requireBalance(t, va.Id, before.Posted, before.Available-p.Amount-p.Fee)
		je := must(c.Ledger.JournalEntries.Retrieve(ctx, *p.JournalEntryId))(t)
		if je.Source != (treasury.Source{Type: treasury.SourceTypePayment, Id: p.Id}) || je.Type != treasury.JournalEntryTypePayment {
			t.Fatalf("the released payment's journal entry: %+v", je)
		}
		// Released once.
		_, err := c.Simulations.ReleasePayment(ctx, p.Id)
		requireAPIError(t, err, treasury.ErrConflict, treasury.KindConflict, 409, "invalid_state")
		// Then it settles like any payment, keeping its date and its link.
		done := waitPayment(t, ctx, c, p.Id, treasury.PaymentStatusCompleted)
		if done.ScheduledFor == nil || done.ScheduledFor.String() != tomorrow.String() ||
			done.JournalEntryId == nil || *done.JournalEntryId != *p.JournalEntryId {
			t.Fatalf("completed: %+v", done)
		}
		requireBalance(t, va.Id, before.Posted-p.Amount-p.Fee, before.Available-p.Amount-p.Fee)
		_, err = c.Simulations.ReleasePayment(ctx, p.Id)
		requireAPIError(t, err, treasury.ErrConflict, treasury.KindConflict, 409, "invalid_state")
	})

	t.Run("canceled while scheduled", func(t *testing.T) {
		before := balance(t, va.Id)
		gone := must(c.Payments.Cancel(ctx, toCancel.Id))(t)
		if gone.Status != treasury.PaymentStatusCanceled || gone.CanceledAt == nil || gone.JournalEntryId != nil ||
			gone.CancellationReason != nil || gone.ScheduledFor == nil || gone.ScheduledFor.String() != tomorrow.String() {
			t.Fatalf("canceled: %+v", gone)
		}
		requireBalance(t, va.Id, before.Posted, before.Available)
		_, err := c.Simulations.ReleasePayment(ctx, toCancel.Id)
		requireAPIError(t, err, treasury.ErrConflict, treasury.KindConflict, 409, "invalid_state")
		_, err = c.Payments.Cancel(ctx, toCancel.Id)
		requireAPIError(t, err, treasury.ErrConflict, treasury.KindConflict, 409, "payment_not_cancelable")
		if got := must(c.Payments.Retrieve(ctx, toCancel.Id))(t); !reflect.DeepEqual(got, gone) {
			t.Fatalf("retrieved %+v, canceled %+v", got, gone)
		}
	})

	t.Run("released without funds", func(t *testing.T) {
		requireBalance(t, empty.Id, 0, 0)
		p := must(c.Simulations.ReleasePayment(ctx, unfunded.Id))(t)
		f := p.Failure
		if p.Status != treasury.PaymentStatusFailed || f == nil || f.Code != treasury.PaymentFailureCodeInsufficientFunds ||
			f.NetworkCode != nil || f.Reason == "" || f.RetryRecommendation.Action != treasury.RetryRecommendationActionRetryLater ||
			p.FailedAt == nil || p.JournalEntryId != nil || p.SubmittedAt != nil ||
			p.ScheduledFor == nil || p.ScheduledFor.String() != tomorrow.String() {
			t.Fatalf("released without funds: %+v, failure %+v", p, f)
		}
		requireBalance(t, empty.Id, 0, 0)
		if got := must(c.Payments.Retrieve(ctx, p.Id))(t); !reflect.DeepEqual(got, p) {
			t.Fatalf("retrieved %+v, released %+v", got, p)
		}
		_, err := c.Simulations.ReleasePayment(ctx, p.Id)
		requireAPIError(t, err, treasury.ErrConflict, treasury.KindConflict, 409, "invalid_state")
		// None is left scheduled.
		left := must(treasury.Collect(c.Payments.List(ctx, &treasury.ListPaymentsParams{
			Status: treasury.Ptr(treasury.ListPaymentsParamsStatusScheduled),
		})))(t)
		if len(left) != 0 {
			t.Fatalf("still scheduled: %+v", left)
		}
	})

	t.Run("events and webhook", func(t *testing.T) {
		// payment.released for the one released (pending, as it was then),
		// payment.failed for the one the rules refused (network_code null).
		want := map[treasury.EventType]string{
			treasury.EventTypePaymentReleased: toRelease.Id,
			treasury.EventTypePaymentFailed:   unfunded.Id,
		}
		for typ, id := range want {
			var events []treasury.Event
			eventually(t, 10*time.Second, string(typ)+" events", func() (bool, error) {
				var err error
				events, err = treasury.Collect(c.Events.List(ctx, &treasury.ListEventsParams{Type: treasury.Ptr(treasury.ListEventsParamsType(typ))}))
				return len(events) >= 1, err
			})
			if len(events) != 1 || events[0].Type != typ || events[0].Data.Object["id"] != id ||
				events[0].Data.Object["scheduled_for"] != tomorrow.String() {
				t.Fatalf("%s events: %+v", typ, events)
			}
			p := objectAs[treasury.Payment](t, events[0].Data.Object)
			switch typ {
			case treasury.EventTypePaymentReleased:
				if p.Status != treasury.PaymentStatusPending || p.JournalEntryId == nil {
					t.Fatalf("payment.released's payment: %+v", p)
				}
			case treasury.EventTypePaymentFailed:
				if p.Status != treasury.PaymentStatusFailed || p.Failure == nil || p.Failure.NetworkCode != nil ||
					p.Failure.Code != treasury.PaymentFailureCodeInsufficientFunds {
					t.Fatalf("payment.failed's payment: %+v", p)
				}
				failure, _ := events[0].Data.Object["failure"].(map[string]any)
				if v, ok := failure["network_code"]; !ok || v != nil {
					t.Fatalf("payment.failed's failure: %+v", failure)
				}
			}
		}

		missing := map[string]bool{}
		for typ, id := range want {
			missing[string(typ)+" "+id] = true
		}
		timeout := time.After(20 * time.Second)
		for len(missing) > 0 {
			select {
			case d := <-received:
				ev, err := webhooks.Verify(d.body, d.header, *wh.Secret)
				if err != nil {
					t.Fatalf("verify a delivery: %v", err)
				}
				if _, ok := want[ev.Type]; !ok {
					t.Fatalf("an endpoint of payment.released and payment.failed received %s", ev.Type)
				}
				delete(missing, string(ev.Type)+" "+fmt.Sprint(ev.Data.Object["id"]))
			case <-timeout:
				t.Fatalf("deliveries not received: %v", missing)
			}
		}
		var deliveries []treasury.WebhookDelivery
		eventually(t, 10*time.Second, "the deliveries listed", func() (bool, error) {
			var err error
			deliveries, err = treasury.Collect(c.Webhooks.Deliveries.List(ctx, wh.Id, nil))
			return len(deliveries) >= 2, err
		})
		count := map[treasury.WebhookDeliveryEventType]int{}
		for _, d := range deliveries {
			count[d.EventType]++
		}
		if wantCount := map[treasury.WebhookDeliveryEventType]int{
			treasury.WebhookDeliveryEventTypePaymentReleased: 1,
			treasury.WebhookDeliveryEventTypePaymentFailed:   1,
		}; !reflect.DeepEqual(count, wantCount) {
			t.Fatalf("deliveries by event type: %v, want %v", count, wantCount)
		}
	})
}

// TestWebhookReplay replays past events to an endpoint for real: a window
// without types (the endpoint's subscription) and with types (one it does not
// subscribe to), the count equal to the events of the window, each event
// received again with its original id under a new webhook-id and a valid
// signature, the deliveries listed with their replay_id, the same
// Idempotency-Key and body answering the same replay and queueing nothing,
// and the refusals: a reversed window, an unknown type, another platform's
// endpoint, a disabled one, a key reused with another body.
func TestWebhookReplay(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t)
	plat, _, key := newPlatform(t, ctx)
	c, rec := newClient(t, key)
	_, stranger, _ := newPlatform(t, ctx)

	type delivery struct {
		body   []byte
		header http.Header
	}
	received := make(chan delivery, 100)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		received <- delivery{body: body, header: r.Header.Clone()}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	wh := must(c.Webhooks.Create(ctx, treasury.CreateWebhookRequest{
		Url:    receiver.URL + "/replay",
		Events: &[]treasury.CreateWebhookRequestEvents{treasury.CreateWebhookRequestEventsVirtualAccountCreated},
	}))(t)
	secret := *wh.Secret

	// receive waits for n deliveries, verifies each and returns them by
	// event id with their webhook-id.
	type got struct {
		webhookID string
		event     *treasury.Event
	}
	// A delivery whose answer the sender missed (a slow machine) comes
	// again under its webhook-id: a retry, not a new delivery.
	seen := map[string]bool{}
	receive := func(t *testing.T, n int) map[string]got {
		t.Helper()
		out := map[string]got{}
		timeout := time.After(30 * time.Second)
		for len(out) < n {
			select {
			case d := <-received:
				if seen[d.header.Get("webhook-id")] {
					continue
				}
				seen[d.header.Get("webhook-id")] = true
				ev, err := webhooks.Verify(d.body, d.header, secret)
				if err != nil {
					t.Fatalf("verify a delivery: %v", err)
				}
				if _, dup := out[ev.Id]; dup {
					t.Fatalf("event %s received twice in one batch", ev.Id)
				}
				out[ev.Id] = got{webhookID: d.header.Get("webhook-id"), event: ev}
			case <-timeout:
				t.Fatalf("%d of %d deliveries received", len(out), n)
			}
		}
		return out
	}
	// quiet checks that nothing more arrives for a while.
	quiet := func(t *testing.T, what string) {
		t.Helper()
		timeout := time.After(2 * time.Second)
		for {
			select {
			case d := <-received:
				if !seen[d.header.Get("webhook-id")] {
					t.Fatalf("%s: a new delivery arrived: %s", what, d.body)
				}
			case <-timeout:
				return
			}
		}
	}

	// The events: three accounts created (the endpoint's subscription) and
	// manual entries' ledger.entry.created (not subscribed).
	var accounts []string
	for i := range 3 {
		accounts = append(accounts, newAccount(t, ctx, c, plat.Id, unique(fmt.Sprintf("replay-%d", i))).Id)
	}
	for _, amount := range []int{1_000, 2_000} {
		must(c.Ledger.Entries.Create(ctx, treasury.JournalEntryShorthand(treasury.JournalEntryShorthandRequest{
			Type: treasury.JournalEntryShorthandRequestTypeAdjustment, Description: "replayed credit",
			VirtualAccountId: accounts[0], Direction: treasury.JournalEntryShorthandRequestDirectionCredit, Amount: amount,
		})))(t)
	}
	originals := receive(t, 3)
	for id, g := range originals {
		if g.event.Type != treasury.EventTypeVirtualAccountCreated || !slices.Contains(accounts, fmt.Sprint(g.event.Data.Object["id"])) {
			t.Fatalf("original delivery %s: %+v", id, g.event)
		}
	}

	// The window: the platform's events, first inclusive, last exclusive
	// plus a millisecond, once the events list shows them all.
	var events []treasury.Event
	eventually(t, 10*time.Second, "the events listed", func() (bool, error) {
		var err error
		events, err = treasury.Collect(c.Events.List(ctx, nil))
		n := 0
		for _, e := range events {
			if e.Type == treasury.EventTypeVirtualAccountCreated || e.Type == treasury.EventTypeLedgerEntryCreated {
				n++
			}
		}
		return n >= 5, err
	})
	after, before := events[0].CreatedAt, events[0].CreatedAt
	for _, e := range events {
		if e.CreatedAt.Before(after) {
			after = e.CreatedAt
		}
		if e.CreatedAt.After(before) {
			before = e.CreatedAt
		}
	}
	before = before.Add(time.Millisecond)
	// inWindow is the events of the window of one type, by the events list
	// with the same bounds.
	inWindow := func(t *testing.T, typ treasury.EventType) map[string]bool {
		t.Helper()
		ids := map[string]bool{}
		for e, err := range c.Events.List(ctx, &treasury.ListEventsParams{
			Type:         treasury.Ptr(treasury.ListEventsParamsType(typ)),
			CreatedAfter: treasury.Ptr(after.Format(time.RFC3339Nano)), CreatedBefore: treasury.Ptr(before.Format(time.RFC3339Nano)),
		}) {
			if err != nil {
				t.Fatal(err)
			}
			ids[e.Id] = true
		}
		return ids
	}
	accountEvents := inWindow(t, treasury.EventTypeVirtualAccountCreated)
	ledgerEvents := inWindow(t, treasury.EventTypeLedgerEntryCreated)
	if len(accountEvents) != 3 || len(ledgerEvents) < 2 {
		t.Fatalf("in the window: %d virtual_account.created, %d ledger.entry.created", len(accountEvents), len(ledgerEvents))
	}
	for id := range originals {
		if !accountEvents[id] {
			t.Fatalf("event %s delivered but not in the window", id)
		}
	}
	window := treasury.WebhookReplayRequest{CreatedAfter: after, CreatedBefore: before}
	replayKey := unique("replay")

	// requireReplay checks a replay's fields.
	requireReplay := func(t *testing.T, r *treasury.WebhookReplay, types []string, replayed int) {
		t.Helper()
		if !strings.HasPrefix(r.Id, "rpl_") || r.Object != treasury.WebhookReplayObjectWebhookReplay || r.WebhookId != wh.Id ||
			!r.CreatedAfter.Equal(after) || !r.CreatedBefore.Equal(before) || r.Replayed != replayed || r.CreatedAt.IsZero() ||
			(types == nil) != (r.Types == nil) || (types != nil && !reflect.DeepEqual(*r.Types, types)) {
			t.Fatalf("replay: %+v (types %v), want types %v, replayed %d", r, r.Types, types, replayed)
		}
	}
	// requireReceivedAgain checks that the events came again, each with its
	// original id, under webhook-ids other than the originals'.
	requireReceivedAgain := func(t *testing.T, want map[string]bool, typ treasury.EventType) map[string]got {
		t.Helper()
		again := receive(t, len(want))
		for id, g := range again {
			if !want[id] || g.event.Type != typ || g.event.PlatformId != plat.Id {
				t.Fatalf("replayed delivery of %s: %+v, want one of %v", id, g.event, want)
			}
			if o, ok := originals[id]; ok && (o.webhookID == g.webhookID || !reflect.DeepEqual(o.event, g.event)) {
				t.Fatalf("event %s: original %s %+v, replayed %s %+v", id, o.webhookID, o.event, g.webhookID, g.event)
			}
		}
		return again
	}

	var subscribed, named *treasury.WebhookReplay
	var subscribedAgain, namedAgain map[string]got
	t.Run("without types", func(t *testing.T) {
		subscribed = must(c.Webhooks.Replay(ctx, wh.Id, window, treasury.WithIdempotencyKey(replayKey)))(t)
		requireReplay(t, subscribed, nil, len(accountEvents))
		subscribedAgain = requireReceivedAgain(t, accountEvents, treasury.EventTypeVirtualAccountCreated)
	})
	if subscribed == nil {
		t.FailNow()
	}

	t.Run("with types", func(t *testing.T) {
		named = must(c.Webhooks.Replay(ctx, wh.Id, treasury.WebhookReplayRequest{
			CreatedAfter: after, CreatedBefore: before,
			Types: &[]treasury.WebhookReplayRequestTypes{treasury.WebhookReplayRequestTypesLedgerEntryCreated},
		}))(t)
		requireReplay(t, named, []string{"ledger.entry.created"}, len(ledgerEvents))
		namedAgain = requireReceivedAgain(t, ledgerEvents, treasury.EventTypeLedgerEntryCreated)
		// A window in the future replays nothing.
		future := must(c.Webhooks.Replay(ctx, wh.Id, treasury.WebhookReplayRequest{
			CreatedAfter: time.Now().Add(time.Hour), CreatedBefore: time.Now().Add(2 * time.Hour),
		}))(t)
		if future.Replayed != 0 || future.Id == named.Id {
			t.Fatalf("a future window: %+v", future)
		}
	})
	if named == nil {
		t.FailNow()
	}

	var deliveries []treasury.WebhookDelivery
	t.Run("deliveries", func(t *testing.T) {
		total := len(originals) + len(subscribedAgain) + len(namedAgain)
		eventually(t, 10*time.Second, "the deliveries listed", func() (bool, error) {
			var err error
			deliveries, err = treasury.Collect(c.Webhooks.Deliveries.List(ctx, wh.Id, &treasury.ListWebhookDeliveriesParams{Limit: treasury.Ptr(2)}))
			return len(deliveries) >= total, err
		})
		if len(deliveries) != total {
			t.Fatalf("%d deliveries, want %d", len(deliveries), total)
		}
		for _, d := range deliveries {
			var from map[string]got
			switch {
			case d.ReplayId == nil:
				from = originals
			case *d.ReplayId == subscribed.Id:
				from = subscribedAgain
			case *d.ReplayId == named.Id:
				from = namedAgain
			default:
				t.Fatalf("delivery %s: replay_id %s", d.Id, *d.ReplayId)
			}
			g, ok := from[d.EventId]
			if !ok || g.webhookID != d.Id || string(d.EventType) != string(g.event.Type) || d.WebhookEndpointId != wh.Id {
				t.Fatalf("delivery %+v (replay %v), received as %s", d, d.ReplayId, g.webhookID)
			}
		}
	})

	t.Run("idempotent", func(t *testing.T) {
		sent := len(answered(rec.snapshot()))
		again := must(c.Webhooks.Replay(ctx, wh.Id, window, treasury.WithIdempotencyKey(replayKey)))(t)
		if !reflect.DeepEqual(again, subscribed) {
			t.Fatalf("the same key and body: %+v, first %+v", again, subscribed)
		}
		calls := answered(rec.snapshot())[sent:]
		if len(calls) != 1 || calls[0].status != http.StatusOK || calls[0].idempotencyKey != replayKey ||
			calls[0].path != "/webhooks/"+wh.Id+"/replay" {
			t.Fatalf("the idempotent replay's answers: %+v", calls)
		}
		// Another body under the key.
		_, err := c.Webhooks.Replay(ctx, wh.Id, treasury.WebhookReplayRequest{
			CreatedAfter: after, CreatedBefore: before.Add(time.Second),
		}, treasury.WithIdempotencyKey(replayKey))
		requireAPIError(t, err, treasury.ErrConflict, treasury.KindConflict, 409, "idempotency_conflict")
		// No second batch.
		quiet(t, "after the idempotent replay")
		listed := must(treasury.Collect(c.Webhooks.Deliveries.List(ctx, wh.Id, nil)))(t)
		if len(listed) != len(deliveries) {
			t.Fatalf("%d deliveries after the idempotent replay, %d before", len(listed), len(deliveries))
		}
	})

	t.Run("refusals", func(t *testing.T) {
		_, err := c.Webhooks.Replay(ctx, wh.Id, treasury.WebhookReplayRequest{CreatedAfter: before, CreatedBefore: after})
		if e := requireAPIError(t, err, treasury.ErrBadRequest, treasury.KindBadRequest, 400, "invalid_request"); e.Param != "created_before" {
			t.Fatalf("a reversed window: param %q", e.Param)
		}
		_, err = c.Webhooks.Replay(ctx, wh.Id, treasury.WebhookReplayRequest{
			CreatedAfter: after, CreatedBefore: before,
			Types: &[]treasury.WebhookReplayRequestTypes{treasury.WebhookReplayRequestTypesPaymentCreated, "payment.exploded"},
		})
		if e := requireAPIError(t, err, treasury.ErrBadRequest, treasury.KindBadRequest, 400, "invalid_request"); e.Param != "types[1]" {
			t.Fatalf("an unknown type: param %q", e.Param)
		}
		_, err = stranger.Webhooks.Replay(ctx, wh.Id, window)
		requireAPIError(t, err, treasury.ErrNotFound, treasury.KindNotFound, 404, "not_found")
		must(c.Webhooks.Update(ctx, wh.Id, treasury.UpdateWebhookRequest{Status: treasury.Ptr(treasury.UpdateWebhookRequestStatusDisabled)}))(t)
		_, err = c.Webhooks.Replay(ctx, wh.Id, window)
		requireAPIError(t, err, treasury.ErrConflict, treasury.KindConflict, 409, "invalid_state")
		quiet(t, "after the refusals")
	})
}

// TestJournalEntriesList lists a platform's journal entries for real: manual
// entries with metadata, a funding and a payment, each filter alone and the
// pages walked one or two at a time with the filters on every page, each item
// equal to the entry retrieved, a bad type refused, nothing of another
// platform's.
func TestJournalEntriesList(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t)
	plat, _, key := newPlatform(t, ctx)
	c, rec := newClient(t, key)
	_, stranger, _ := newPlatform(t, ctx)

	va := newAccount(t, ctx, c, plat.Id, unique("je-list"))
	other := newAccount(t, ctx, c, plat.Id, unique("je-list-other"))
	approveKYB(t, ctx, c, va.Id)
	inbound := fund(t, ctx, c, va.Id, 100_000)
	batch := unique("batch")
	var adjustments []*treasury.JournalEntry
	for i, amount := range []int{1_000, 2_000, 3_000} {
		adjustments = append(adjustments, must(c.Ledger.Entries.Create(ctx, treasury.JournalEntryShorthand(treasury.JournalEntryShorthandRequest{
			Type: treasury.JournalEntryShorthandRequestTypeAdjustment, Description: fmt.Sprintf("credit %d", i),
			VirtualAccountId: va.Id, Direction: treasury.JournalEntryShorthandRequestDirectionCredit, Amount: amount,
			Metadata: &treasury.Metadata{"batch": batch, "n": fmt.Sprint(i), "order id": "A&B"},
		})))(t))
	}
	fee := must(c.Ledger.Entries.Create(ctx, treasury.JournalEntryLines(treasury.JournalEntryLinesRequest{
		Type: treasury.JournalEntryLinesRequestTypeFee, Description: "monthly fee",
		Lines: []treasury.JournalLine{
			{VirtualAccountId: &va.Id, Direction: treasury.JournalLineDirectionDebit, Amount: 700},
			{VirtualAccountId: &other.Id, Direction: treasury.JournalLineDirectionCredit, Amount: 700},
		},
		Metadata: &treasury.Metadata{"batch": batch, "n": "fee"},
	})))(t)
	payment := pay(t, ctx, c, va.Id, treasury.PaymentRequestRailRtp, 5_000, goodDestination)
	payment = waitPayment(t, ctx, c, payment.Id, treasury.PaymentStatusCompleted)
	if payment.JournalEntryId == nil || inbound.JournalEntryId == "" {
		t.Fatalf("links: payment %+v, inbound %+v", payment, inbound)
	}
	manual := []string{fee.Id, adjustments[2].Id, adjustments[1].Id, adjustments[0].Id} // newest first

	// list walks a list a page of limit at a time, checks that every page's
	// request carried the filters (want: the query less cursor), and returns
	// the ids.
	list := func(t *testing.T, params treasury.ListJournalEntriesParams, want url.Values) []treasury.JournalEntry {
		t.Helper()
		before := len(answered(rec.snapshot()))
		entries := must(treasury.Collect(c.Ledger.JournalEntries.List(ctx, &params)))(t)
		calls := answered(rec.snapshot())[before:]
		if len(calls) == 0 {
			t.Fatal("no request")
		}
		for i, call := range calls {
			q, err := url.ParseQuery(call.query)
			if err != nil {
				t.Fatal(err)
			}
			if (i > 0) != (q.Get("cursor") != "") {
				t.Fatalf("page %d: query %q", i, call.query)
			}
			q.Del("cursor")
			if call.method != http.MethodGet || call.path != "/ledger/journal-entries" || !reflect.DeepEqual(q, want) {
				t.Fatalf("page %d: %s %s?%s, want the filters %v", i, call.method, call.path, call.query, want)
			}
		}
		if params.Limit != nil && len(calls) < len(entries)/(*params.Limit) {
			t.Fatalf("%d entries in %d pages of %d", len(entries), len(calls), *params.Limit)
		}
		return entries
	}
	ids := func(entries []treasury.JournalEntry) []string {
		var out []string
		for _, e := range entries {
			out = append(out, e.Id)
		}
		return out
	}

	var all []treasury.JournalEntry
	t.Run("all", func(t *testing.T) {
		all = list(t, treasury.ListJournalEntriesParams{}, url.Values{})
		paged := list(t, treasury.ListJournalEntriesParams{Limit: treasury.Ptr(1)}, url.Values{"limit": {"1"}})
		if !reflect.DeepEqual(ids(paged), ids(all)) {
			t.Fatalf("a page at a time %v, at once %v", ids(paged), ids(all))
		}
		for _, id := range append([]string{*payment.JournalEntryId, inbound.JournalEntryId}, manual...) {
			if !slices.Contains(ids(all), id) {
				t.Fatalf("journal entry %s is not listed: %v", id, ids(all))
			}
		}
		for i, e := range all {
			if i > 0 && e.CreatedAt.After(all[i-1].CreatedAt) {
				t.Fatalf("not newest first: %v", ids(all))
			}
			if got := must(c.Ledger.JournalEntries.Retrieve(ctx, e.Id))(t); !reflect.DeepEqual(*got, e) {
				t.Fatalf("listed %+v, retrieved %+v", e, *got)
			}
		}
		// Another platform sees none of them, even by our account.
		theirs := must(treasury.Collect(stranger.Ledger.JournalEntries.List(ctx, &treasury.ListJournalEntriesParams{VirtualAccountId: &va.Id})))(t)
		if len(theirs) != 0 {
			t.Fatalf("another platform's list by our account: %v", ids(theirs))
		}
	})
	if all == nil {
		t.FailNow()
	}
	// expect is the entries of all that keep, in order.
	expect := func(keep func(e treasury.JournalEntry) bool) []string {
		var out []string
		for _, e := range all {
			if keep(e) {
				out = append(out, e.Id)
			}
		}
		return out
	}
	hasLine := func(e treasury.JournalEntry, vaID string) bool {
		for _, l := range e.Entries {
			if l.VirtualAccountId != nil && *l.VirtualAccountId == vaID {
				return true
			}
		}
		return false
	}

	for _, tc := range []struct {
		name   string
		params treasury.ListJournalEntriesParams
		query  url.Values
		want   []string
	}{
		{"type", treasury.ListJournalEntriesParams{Type: treasury.Ptr(treasury.ListJournalEntriesParamsTypeAdjustment), Limit: treasury.Ptr(1)},
			url.Values{"type": {"adjustment"}, "limit": {"1"}}, manual[1:]},
		{"type fee", treasury.ListJournalEntriesParams{Type: treasury.Ptr(treasury.ListJournalEntriesParamsTypeFee)},
			url.Values{"type": {"fee"}}, []string{fee.Id}},
		{"status", treasury.ListJournalEntriesParams{Status: treasury.Ptr(treasury.ListJournalEntriesParamsStatusPosted), Limit: treasury.Ptr(2)},
			url.Values{"status": {"posted"}, "limit": {"2"}},
			expect(func(e treasury.JournalEntry) bool { return e.Status == treasury.JournalEntryStatusPosted })},
		{"virtual account", treasury.ListJournalEntriesParams{VirtualAccountId: &other.Id, Limit: treasury.Ptr(1)},
			url.Values{"virtual_account_id": {other.Id}, "limit": {"1"}}, []string{fee.Id}},
		{"virtual account, all", treasury.ListJournalEntriesParams{VirtualAccountId: &va.Id, Limit: treasury.Ptr(2)},
			url.Values{"virtual_account_id": {va.Id}, "limit": {"2"}},
			expect(func(e treasury.JournalEntry) bool { return hasLine(e, va.Id) })},
		{"source type", treasury.ListJournalEntriesParams{SourceType: treasury.Ptr(treasury.ListJournalEntriesParamsSourceTypeJournalEntry), Limit: treasury.Ptr(2)},
			url.Values{"source_type": {"journal_entry"}, "limit": {"2"}}, manual},
		{"source type payment", treasury.ListJournalEntriesParams{SourceType: treasury.Ptr(treasury.ListJournalEntriesParamsSourceTypePayment)},
			url.Values{"source_type": {"payment"}}, []string{*payment.JournalEntryId}},
		{"source type inbound", treasury.ListJournalEntriesParams{SourceType: treasury.Ptr(treasury.ListJournalEntriesParamsSourceTypeInboundTransfer)},
			url.Values{"source_type": {"inbound_transfer"}}, []string{inbound.JournalEntryId}},
		{"source id", treasury.ListJournalEntriesParams{SourceId: &payment.Id, Limit: treasury.Ptr(1)},
			url.Values{"source_id": {payment.Id}, "limit": {"1"}}, []string{*payment.JournalEntryId}},
		{"metadata", treasury.ListJournalEntriesParams{Metadata: &treasury.MetadataFilter{"batch": batch}, Limit: treasury.Ptr(1)},
			url.Values{"metadata[batch]": {batch}, "limit": {"1"}}, manual},
		{"metadata, all match", treasury.ListJournalEntriesParams{Metadata: &treasury.MetadataFilter{"batch": batch, "order id": "A&B"}, Limit: treasury.Ptr(2)},
			url.Values{"metadata[batch]": {batch}, "metadata[order id]": {"A&B"}, "limit": {"2"}}, manual[1:]},
		{"metadata, one", treasury.ListJournalEntriesParams{Metadata: &treasury.MetadataFilter{"batch": batch, "n": "1"}},
			url.Values{"metadata[batch]": {batch}, "metadata[n]": {"1"}}, []string{adjustments[1].Id}},
		{"created", treasury.ListJournalEntriesParams{
			CreatedAfter:  treasury.Ptr(adjustments[1].CreatedAt.Format(time.RFC3339Nano)),
			CreatedBefore: treasury.Ptr(fee.CreatedAt.Format(time.RFC3339Nano)), Limit: treasury.Ptr(1),
		}, url.Values{
			"created_after": {adjustments[1].CreatedAt.Format(time.RFC3339Nano)}, "created_before": {fee.CreatedAt.Format(time.RFC3339Nano)}, "limit": {"1"},
		}, expect(func(e treasury.JournalEntry) bool {
			return !e.CreatedAt.Before(adjustments[1].CreatedAt) && e.CreatedAt.Before(fee.CreatedAt)
		})},
		{"combined", treasury.ListJournalEntriesParams{
			Type: treasury.Ptr(treasury.ListJournalEntriesParamsTypeAdjustment), Status: treasury.Ptr(treasury.ListJournalEntriesParamsStatusPosted),
			VirtualAccountId: &va.Id, SourceType: treasury.Ptr(treasury.ListJournalEntriesParamsSourceTypeJournalEntry),
			SourceId: &adjustments[0].Id, Metadata: &treasury.MetadataFilter{"n": "0"}, Limit: treasury.Ptr(1),
		}, url.Values{
			"type": {"adjustment"}, "status": {"posted"}, "virtual_account_id": {va.Id}, "source_type": {"journal_entry"},
			"source_id": {adjustments[0].Id}, "metadata[n]": {"0"}, "limit": {"1"},
		}, []string{adjustments[0].Id}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.want) == 0 {
				t.Fatal("a filter case that expects nothing checks nothing")
			}
			got := list(t, tc.params, tc.query)
			if !reflect.DeepEqual(ids(got), tc.want) {
				t.Fatalf("listed %v, want %v", ids(got), tc.want)
			}
			for _, e := range got {
				i := slices.IndexFunc(all, func(a treasury.JournalEntry) bool { return a.Id == e.Id })
				if !reflect.DeepEqual(e, all[i]) {
					t.Fatalf("filtered %+v, in the full list %+v", e, all[i])
				}
			}
		})
	}

	t.Run("refusals", func(t *testing.T) {
		_, err := treasury.Collect(c.Ledger.JournalEntries.List(ctx, &treasury.ListJournalEntriesParams{
			Type: treasury.Ptr(treasury.ListJournalEntriesParamsType("payment_fee")),
		}))
		if e := requireAPIError(t, err, treasury.ErrBadRequest, treasury.KindBadRequest, 400, "invalid_request"); e.Param != "type" {
			t.Fatalf("a bad type: param %q", e.Param)
		}
		_, err = treasury.Collect(c.Ledger.JournalEntries.List(ctx, &treasury.ListJournalEntriesParams{
			Status: treasury.Ptr(treasury.ListJournalEntriesParamsStatus("settled")),
		}))
		if e := requireAPIError(t, err, treasury.ErrBadRequest, treasury.KindBadRequest, 400, "invalid_request"); e.Param != "status" {
			t.Fatalf("a bad status: param %q", e.Param)
		}
		// An unknown account or source: empty, not 404.
		none := must(treasury.Collect(c.Ledger.JournalEntries.List(ctx, &treasury.ListJournalEntriesParams{SourceId: treasury.Ptr("pay_00000000000000000000000000")})))(t)
		if len(none) != 0 {
			t.Fatalf("an unknown source: %v", ids(none))
		}
	})
}

// accountNumber returns a 12-digit account number unique to the run.
func accountNumber() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	n := uint64(0)
	for _, x := range b {
		n = n<<8 | uint64(x)
	}
	return fmt.Sprintf("7%011d", n%100_000_000_000)
}

// TestCounterparties saves, lists, verifies, pays and deletes counterparties
// against the server: the shape (the last four digits only, never the whole
// account number in an answer), an idempotent create, the list's
// verification_status and metadata filters over pages, a prenote verified
// after the sandbox's ACH delay and one failed with R03 (4000000003), 409
// invalid_state while pending and once verified, the events and their
// verified webhook deliveries, a payment to a counterparty (its destination
// copied), both or neither of destination and counterparty_id a 400,
// require_verified_counterparty's 422 counterparty_not_verified (then off
// again), a delete (then 404 everywhere), the live key's prenote pending at
// once (sent once) and a second one a 409 invalid_state not retried, and
// another platform's 404.
func TestCounterparties(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t)
	op := operator(t)
	plat, _, key := newPlatform(t, ctx)
	c, rec := newClient(t, key)
	_, stranger, _ := newPlatform(t, ctx)
	batch := unique("cp")

	// Prenotes answer after the ACH same-day delay: one second here.
	must(c.Platform.Settings.Update(ctx, treasury.UpdateSettingsRequest{
		Sandbox: &treasury.UpdateSettingsRequest_Sandbox{AchSameDayDelaySeconds: treasury.Ptr(1)},
	}))(t)

	// A webhook endpoint of the two public counterparty events.
	type delivery struct {
		body   []byte
		header http.Header
	}
	received := make(chan delivery, 100)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		received <- delivery{body: body, header: r.Header.Clone()}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	wh := must(c.Webhooks.Create(ctx, treasury.CreateWebhookRequest{
		Url: receiver.URL + "/counterparties",
		Events: &[]treasury.CreateWebhookRequestEvents{treasury.CreateWebhookRequestEventsCounterpartyVerified,
			treasury.CreateWebhookRequestEventsCounterpartyVerificationFailed},
	}))(t)
	if !reflect.DeepEqual(wh.Events, []string{"counterparty.verified", "counterparty.verification_failed"}) || wh.Secret == nil {
		t.Fatalf("endpoint: %+v", wh)
	}

	request := func(kind, number string) treasury.CounterpartyRequest {
		return treasury.CounterpartyRequest{
			Name: "Initech LLC", AccountNumber: number, RoutingNumber: "021000021",
			AccountType: treasury.CounterpartyRequestAccountTypeChecking,
			Metadata:    &treasury.Metadata{"batch": batch, "kind": kind},
		}
	}
	// requireShape checks a counterparty against the request that made it.
	requireShape := func(t *testing.T, cp *treasury.Counterparty, req treasury.CounterpartyRequest) {
		t.Helper()
		if !regexp.MustCompile(`^cp_[0-9a-hjkmnp-tv-z]{26}$`).MatchString(cp.Id) || cp.Object != treasury.CounterpartyObjectCounterparty ||
			cp.Name != req.Name || cp.AccountNumberLast4 != req.AccountNumber[len(req.AccountNumber)-4:] ||
			cp.RoutingNumber != req.RoutingNumber || string(cp.AccountType) != string(req.AccountType) ||
			cp.Environment != treasury.CounterpartyEnvironmentSandbox || cp.CreatedAt.IsZero() ||
			!reflect.DeepEqual(cp.Metadata, *req.Metadata) {
			t.Fatalf("counterparty %+v, from %+v", cp, req)
		}
	}
	// noFullNumber checks that an answer's raw body never shows the whole
	// account number.
	noFullNumber := func(t *testing.T, body []byte, number string) {
		t.Helper()
		if strings.Contains(string(body), number) || !strings.Contains(string(body), number[len(number)-4:]) {
			t.Fatalf("an answer with the account number %s, or without its last four: %s", number, body)
		}
		var fields map[string]any
		if err := json.Unmarshal(body, &fields); err == nil {
			if _, has := fields["account_number"]; has {
				t.Fatalf("an answer with account_number: %s", body)
			}
		}
	}

	numbers := map[string]string{}
	var main, second, third, other, failing *treasury.Counterparty
	t.Run("create", func(t *testing.T) {
		numbers["main"] = accountNumber()
		req := request("main", numbers["main"])
		main = must(c.Counterparties.Create(ctx, req))(t)
		requireShape(t, main, req)
		if main.Verification.Status != treasury.CounterpartyVerificationStatusUnverified || main.Verification.Method != nil ||
			main.Verification.FailureCode != nil {
			t.Fatalf("a new counterparty's verification: %+v", main.Verification)
		}
		// The raw answers: last four only.
		r, err := c.Raw().GetCounterpartyWithResponse(ctx, main.Id, &api.GetCounterpartyParams{})
		if err != nil || r.StatusCode() != http.StatusOK {
			t.Fatalf("raw retrieve: %v %+v", err, r)
		}
		noFullNumber(t, r.Body, numbers["main"])
		if got := must(c.Counterparties.Retrieve(ctx, main.Id))(t); !reflect.DeepEqual(got, main) {
			t.Fatalf("retrieved %+v, created %+v", got, main)
		}
		numbers["second"], numbers["third"] = accountNumber(), accountNumber()
		second = must(c.Counterparties.Create(ctx, request("main", numbers["second"])))(t)
		third = must(c.Counterparties.Create(ctx, request("main", numbers["third"])))(t)
		numbers["other"] = accountNumber()
		raw, err := c.Raw().CreateCounterpartyWithResponse(ctx, &api.CreateCounterpartyParams{}, request("other", numbers["other"]))
		if err != nil || raw.StatusCode() != http.StatusCreated || raw.JSON201 == nil {
			t.Fatalf("raw create: %v %+v", err, raw)
		}
		noFullNumber(t, raw.Body, numbers["other"])
		other = raw.JSON201
		numbers["failing"] = "4000000003"
		failing = must(c.Counterparties.Create(ctx, request("failing", numbers["failing"])))(t)
		requireShape(t, failing, request("failing", numbers["failing"]))
		// A bad routing number names it.
		bad := request("bad", accountNumber())
		bad.RoutingNumber = "123456789"
		_, err = c.Counterparties.Create(ctx, bad)
		if e := requireAPIError(t, err, treasury.ErrBadRequest, treasury.KindBadRequest, 400, ""); e.Param != "routing_number" {
			t.Fatalf("a bad routing number: param %q", e.Param)
		}
	})
	if main == nil || second == nil || third == nil || other == nil || failing == nil {
		t.FailNow()
	}

	t.Run("idempotent create", func(t *testing.T) {
		idem := unique("idem-cp")
		req := request("idempotent", accountNumber())
		first := must(c.Counterparties.Create(ctx, req, treasury.WithIdempotencyKey(idem)))(t)
		again := must(c.Counterparties.Create(ctx, req, treasury.WithIdempotencyKey(idem)))(t)
		if again.Id != first.Id || !reflect.DeepEqual(again, first) {
			t.Fatalf("the replay answered %+v, the first %+v", again, first)
		}
		changed := req
		changed.Name = "Another Name"
		_, err := c.Counterparties.Create(ctx, changed, treasury.WithIdempotencyKey(idem))
		requireAPIError(t, err, treasury.ErrConflict, treasury.KindConflict, 409, "idempotency_conflict")
		n := 0
		for cp, err := range c.Counterparties.List(ctx, &treasury.ListCounterpartiesParams{
			Metadata: &treasury.MetadataFilter{"batch": batch, "kind": "idempotent"},
		}) {
			if err != nil {
				t.Fatal(err)
			}
			if cp.Id != first.Id {
				t.Fatalf("a second counterparty for one key: %+v", cp)
			}
			n++
		}
		if n != 1 {
			t.Fatalf("%d counterparties for one key, want 1", n)
		}
	})

	// listIDs walks the list with the filters, one per page, and counts the pages.
	listIDs := func(t *testing.T, params treasury.ListCounterpartiesParams) ([]string, int) {
		t.Helper()
		params.Limit = treasury.Ptr(1)
		before := len(answered(rec.snapshot()))
		var ids []string
		for cp, err := range c.Counterparties.List(ctx, &params) {
			if err != nil {
				t.Fatal(err)
			}
			if params.VerificationStatus != nil && string(cp.Verification.Status) != string(*params.VerificationStatus) {
				t.Fatalf("listed %+v for verification_status %s", cp, *params.VerificationStatus)
			}
			ids = append(ids, cp.Id)
		}
		pages := 0
		for _, a := range answered(rec.snapshot())[before:] {
			if a.method == http.MethodGet && a.path == "/counterparties" {
				pages++
			}
		}
		return ids, pages
	}

	t.Run("list", func(t *testing.T) {
		ids, pages := listIDs(t, treasury.ListCounterpartiesParams{Metadata: &treasury.MetadataFilter{"batch": batch, "kind": "main"}})
		if want := []string{third.Id, second.Id, main.Id}; !reflect.DeepEqual(ids, want) || pages < 3 {
			t.Fatalf("kind main: %v over %d pages, want %v (newest first) over 3 or more", ids, pages, want)
		}
		ids, _ = listIDs(t, treasury.ListCounterpartiesParams{
			Metadata:           &treasury.MetadataFilter{"batch": batch},
			VerificationStatus: treasury.Ptr(treasury.ListCounterpartiesParamsVerificationStatusUnverified),
		})
		if len(ids) != 6 {
			t.Fatalf("unverified of the batch: %v, want 6", ids)
		}
		ids, _ = listIDs(t, treasury.ListCounterpartiesParams{
			Metadata:           &treasury.MetadataFilter{"batch": batch},
			VerificationStatus: treasury.Ptr(treasury.ListCounterpartiesParamsVerificationStatusVerified),
		})
		if len(ids) != 0 {
			t.Fatalf("verified before any prenote: %v", ids)
		}
		// Another platform sees none of them.
		if got := must(treasury.Collect(stranger.Counterparties.List(ctx, &treasury.ListCounterpartiesParams{
			Metadata: &treasury.MetadataFilter{"batch": batch},
		})))(t); len(got) != 0 {
			t.Fatalf("another platform lists %+v", got)
		}
	})

	// waitVerification polls a counterparty until its verification status.
	waitVerification := func(t *testing.T, id string, want treasury.CounterpartyVerificationStatus) *treasury.Counterparty {
		t.Helper()
		var cp *treasury.Counterparty
		eventually(t, 20*time.Second, "counterparty "+id+" "+string(want), func() (bool, error) {
			var err error
			cp, err = c.Counterparties.Retrieve(ctx, id)
			return err == nil && cp.Verification.Status == want, err
		})
		return cp
	}

	t.Run("verify", func(t *testing.T) {
		pending := must(c.Counterparties.Verify(ctx, main.Id, treasury.VerifyCounterpartyRequest{
			Method: treasury.VerifyCounterpartyRequestMethodPrenote,
		}))(t)
		if pending.Id != main.Id || pending.Verification.Status != treasury.CounterpartyVerificationStatusPending ||
			pending.Verification.Method == nil || *pending.Verification.Method != treasury.CounterpartyVerificationMethodPrenote ||
			pending.Verification.FailureCode != nil {
			t.Fatalf("verify: %+v", pending.Verification)
		}
		// Not twice while pending.
		_, err := c.Counterparties.Verify(ctx, main.Id, treasury.VerifyCounterpartyRequest{})
		if e := requireAPIError(t, err, treasury.ErrConflict, treasury.KindConflict, 409, "invalid_state"); e.Status != 409 {
			t.Fatal(e)
		}
		failingPending := must(c.Counterparties.Verify(ctx, failing.Id, treasury.VerifyCounterpartyRequest{}))(t)
		if failingPending.Verification.Status != treasury.CounterpartyVerificationStatusPending {
			t.Fatalf("verify 4000000003: %+v", failingPending.Verification)
		}
		verified := waitVerification(t, main.Id, treasury.CounterpartyVerificationStatusVerified)
		if verified.Verification.Method == nil || *verified.Verification.Method != treasury.CounterpartyVerificationMethodPrenote ||
			verified.Verification.FailureCode != nil {
			t.Fatalf("verified: %+v", verified.Verification)
		}
		main = verified
		failed := waitVerification(t, failing.Id, treasury.CounterpartyVerificationStatusFailed)
		if failed.Verification.FailureCode == nil || *failed.Verification.FailureCode != "R03" {
			t.Fatalf("4000000003's verification: %+v", failed.Verification)
		}
		// Not once verified either.
		_, err = c.Counterparties.Verify(ctx, main.Id, treasury.VerifyCounterpartyRequest{})
		requireAPIError(t, err, treasury.ErrConflict, treasury.KindConflict, 409, "invalid_state")

		// The filters see the outcomes.
		ids, _ := listIDs(t, treasury.ListCounterpartiesParams{
			Metadata:           &treasury.MetadataFilter{"batch": batch},
			VerificationStatus: treasury.Ptr(treasury.ListCounterpartiesParamsVerificationStatusVerified),
		})
		if !reflect.DeepEqual(ids, []string{main.Id}) {
			t.Fatalf("verified: %v, want [%s]", ids, main.Id)
		}
		ids, _ = listIDs(t, treasury.ListCounterpartiesParams{
			Metadata:           &treasury.MetadataFilter{"batch": batch, "kind": "failing"},
			VerificationStatus: treasury.Ptr(treasury.ListCounterpartiesParamsVerificationStatusFailed),
		})
		if !reflect.DeepEqual(ids, []string{failing.Id}) {
			t.Fatalf("failed: %v, want [%s]", ids, failing.Id)
		}

		// A failed one may be verified again: pending, its failure code cleared.
		retried := must(c.Counterparties.Verify(ctx, failing.Id, treasury.VerifyCounterpartyRequest{}))(t)
		if retried.Verification.Status != treasury.CounterpartyVerificationStatusPending || retried.Verification.FailureCode != nil {
			t.Fatalf("verified again: %+v", retried.Verification)
		}
		failed = waitVerification(t, failing.Id, treasury.CounterpartyVerificationStatusFailed)
		if failed.Verification.FailureCode == nil || *failed.Verification.FailureCode != "R03" {
			t.Fatalf("failed again: %+v", failed.Verification)
		}
	})
	if main.Verification.Status != treasury.CounterpartyVerificationStatusVerified {
		t.FailNow()
	}

	t.Run("events and webhook", func(t *testing.T) {
		want := map[treasury.EventType]string{
			treasury.EventTypeCounterpartyVerified:           main.Id,
			treasury.EventTypeCounterpartyVerificationFailed: failing.Id,
		}
		for typ, id := range want {
			var events []treasury.Event
			eventually(t, 10*time.Second, string(typ)+" events", func() (bool, error) {
				var err error
				events, err = treasury.Collect(c.Events.List(ctx, &treasury.ListEventsParams{Type: treasury.Ptr(treasury.ListEventsParamsType(typ))}))
				return len(events) >= 1, err
			})
			for _, ev := range events {
				cp := objectAs[treasury.Counterparty](t, ev.Data.Object)
				if ev.Type != typ || cp.Id != id {
					t.Fatalf("%s events: %+v", typ, events)
				}
				if _, has := ev.Data.Object["account_number"]; has {
					t.Fatalf("an event with the account number: %+v", ev.Data.Object)
				}
				switch typ {
				case treasury.EventTypeCounterpartyVerified:
					if cp.Verification.Status != treasury.CounterpartyVerificationStatusVerified {
						t.Fatalf("counterparty.verified's counterparty: %+v", cp)
					}
				case treasury.EventTypeCounterpartyVerificationFailed:
					if cp.Verification.Status != treasury.CounterpartyVerificationStatusFailed ||
						cp.Verification.FailureCode == nil || *cp.Verification.FailureCode != "R03" {
						t.Fatalf("counterparty.verification_failed's counterparty: %+v", cp)
					}
				}
			}
		}
		missing := map[string]bool{}
		for typ, id := range want {
			missing[string(typ)+" "+id] = true
		}
		timeout := time.After(20 * time.Second)
		for len(missing) > 0 {
			select {
			case d := <-received:
				ev, err := webhooks.Verify(d.body, d.header, *wh.Secret)
				if err != nil {
					t.Fatalf("verify a delivery: %v", err)
				}
				if _, ok := want[ev.Type]; !ok {
					t.Fatalf("an endpoint of the counterparty events received %s", ev.Type)
				}
				if strings.Contains(string(d.body), numbers["main"]) {
					t.Fatalf("a delivery with the account number: %s", d.body)
				}
				delete(missing, string(ev.Type)+" "+fmt.Sprint(ev.Data.Object["id"]))
			case <-timeout:
				t.Fatalf("deliveries not received: %v", missing)
			}
		}
	})

	// An account to pay from.
	va := newAccount(t, ctx, c, plat.Id, unique("cp-payer"))
	approveKYB(t, ctx, c, va.Id)
	fund(t, ctx, c, va.Id, 100_000)
	payTo := func(cpID string) treasury.PaymentRequest {
		return treasury.PaymentRequest{VirtualAccountId: va.Id, Amount: 1_000, Rail: treasury.PaymentRequestRailRtp,
			CounterpartyId: treasury.Ptr(cpID), Description: treasury.Ptr("to a counterparty")}
	}

	t.Run("pay a counterparty", func(t *testing.T) {
		p := must(c.Payments.Create(ctx, payTo(main.Id)))(t)
		want := treasury.Destination{Name: main.Name, AccountNumber: numbers["main"], RoutingNumber: main.RoutingNumber}
		if p.CounterpartyId == nil || *p.CounterpartyId != main.Id || p.Destination != want {
			t.Fatalf("a payment to %s: %+v, destination %+v", main.Id, p, p.Destination)
		}
		if got := must(c.Payments.Retrieve(ctx, p.Id))(t); got.CounterpartyId == nil || *got.CounterpartyId != main.Id || got.Destination != want {
			t.Fatalf("retrieved %+v", got)
		}
		// A payment to a raw destination has none.
		raw := must(c.Payments.Create(ctx, treasury.PaymentRequest{VirtualAccountId: va.Id, Amount: 1_000,
			Rail: treasury.PaymentRequestRailRtp, Destination: &goodDestination}))(t)
		if raw.CounterpartyId != nil {
			t.Fatalf("a payment to a destination: %+v", raw)
		}
		// Both, or neither: 400 naming counterparty_id.
		both := payTo(main.Id)
		both.Destination = &goodDestination
		_, err := c.Payments.Create(ctx, both)
		if e := requireAPIError(t, err, treasury.ErrBadRequest, treasury.KindBadRequest, 400, ""); e.Param != "counterparty_id" {
			t.Fatalf("both: param %q", e.Param)
		}
		neither := payTo(main.Id)
		neither.CounterpartyId = nil
		_, err = c.Payments.Create(ctx, neither)
		if e := requireAPIError(t, err, treasury.ErrBadRequest, treasury.KindBadRequest, 400, ""); e.Param != "counterparty_id" {
			t.Fatalf("neither: param %q", e.Param)
		}
		// An unknown counterparty: 404.
		_, err = c.Payments.Create(ctx, payTo("cp_01jh3v9a2b3c4d5e6f7g8h9j0p"))
		if e := requireAPIError(t, err, treasury.ErrNotFound, treasury.KindNotFound, 404, "not_found"); e.Param != "counterparty_id" {
			t.Fatalf("an unknown counterparty: param %q", e.Param)
		}
	})

	t.Run("require_verified_counterparty", func(t *testing.T) {
		if s := must(c.Platform.Settings.Retrieve(ctx))(t); s.RequireVerifiedCounterparty {
			t.Fatalf("require_verified_counterparty on by default: %+v", s)
		}
		on := must(c.Platform.Settings.Update(ctx, treasury.UpdateSettingsRequest{RequireVerifiedCounterparty: treasury.Ptr(true)}))(t)
		restored := false
		t.Cleanup(func() {
			if !restored {
				_, _ = c.Platform.Settings.Update(context.Background(), treasury.UpdateSettingsRequest{RequireVerifiedCounterparty: treasury.Ptr(false)})
			}
		})
		if !on.RequireVerifiedCounterparty {
			t.Fatalf("settings: %+v", on)
		}
		_, err := c.Payments.Create(ctx, payTo(second.Id))
		e := requireAPIError(t, err, treasury.ErrUnprocessableEntity, treasury.KindUnprocessableEntity, 422, "counterparty_not_verified")
		if e.Param != "counterparty_id" || e.ResourceID != second.Id {
			t.Fatalf("an unverified counterparty: param %q, resource %q", e.Param, e.ResourceID)
		}
		_, err = c.Payments.Create(ctx, payTo(failing.Id))
		requireAPIError(t, err, treasury.ErrUnprocessableEntity, treasury.KindUnprocessableEntity, 422, "counterparty_not_verified")
		_, err = c.Payments.Create(ctx, treasury.PaymentRequest{VirtualAccountId: va.Id, Amount: 1_000,
			Rail: treasury.PaymentRequestRailRtp, Destination: &goodDestination})
		if e := requireAPIError(t, err, treasury.ErrUnprocessableEntity, treasury.KindUnprocessableEntity, 422, "counterparty_not_verified"); e.Param != "destination" {
			t.Fatalf("a raw destination: param %q", e.Param)
		}
		// A verified counterparty is paid.
		if p := must(c.Payments.Create(ctx, payTo(main.Id)))(t); p.CounterpartyId == nil || *p.CounterpartyId != main.Id {
			t.Fatalf("a payment to the verified counterparty: %+v", p)
		}
		off := must(c.Platform.Settings.Update(ctx, treasury.UpdateSettingsRequest{RequireVerifiedCounterparty: treasury.Ptr(false)}))(t)
		restored = true
		if off.RequireVerifiedCounterparty {
			t.Fatalf("settings: %+v", off)
		}
		if p := must(c.Payments.Create(ctx, payTo(second.Id)))(t); p.CounterpartyId == nil || *p.CounterpartyId != second.Id {
			t.Fatalf("a payment to an unverified counterparty, the setting off: %+v", p)
		}
	})

	t.Run("another platform", func(t *testing.T) {
		_, err := stranger.Counterparties.Retrieve(ctx, main.Id)
		requireAPIError(t, err, treasury.ErrNotFound, treasury.KindNotFound, 404, "not_found")
		_, err = stranger.Counterparties.Verify(ctx, second.Id, treasury.VerifyCounterpartyRequest{})
		requireAPIError(t, err, treasury.ErrNotFound, treasury.KindNotFound, 404, "not_found")
		_, err = stranger.Counterparties.Delete(ctx, main.Id)
		requireAPIError(t, err, treasury.ErrNotFound, treasury.KindNotFound, 404, "not_found")
		if got := must(c.Counterparties.Retrieve(ctx, main.Id))(t); got.Id != main.Id {
			t.Fatalf("after another platform's delete: %+v", got)
		}
	})

	t.Run("live", func(t *testing.T) {
		live := must(op.Platforms.EnableLive(ctx, plat.Id))(t)
		lc, lrec := newClient(t, *live.LiveApiKey.Secret)
		// The sandbox's counterparty is not the live environment's.
		_, err := lc.Counterparties.Retrieve(ctx, main.Id)
		requireAPIError(t, err, treasury.ErrNotFound, treasury.KindNotFound, 404, "not_found")
		number := accountNumber()
		req := request("live", number)
		lcp := must(lc.Counterparties.Create(ctx, req))(t)
		if lcp.Environment != treasury.CounterpartyEnvironmentLive || lcp.AccountNumberLast4 != number[len(number)-4:] {
			t.Fatalf("a live counterparty: %+v", lcp)
		}
		// A live prenote: pending at once, like the sandbox's (it leaves in the
		// next outbound ACH file, which nothing cuts and settles during a
		// test); again while pending, a 409 invalid_state, not retried.
		verifies := func() []int {
			var statuses []int
			for _, a := range answered(lrec.snapshot()) {
				if a.method == http.MethodPost && a.path == "/counterparties/"+lcp.Id+"/verify" {
					statuses = append(statuses, a.status)
				}
			}
			return statuses
		}
		pending := must(lc.Counterparties.Verify(ctx, lcp.Id, treasury.VerifyCounterpartyRequest{}))(t)
		if pending.Id != lcp.Id || pending.Environment != treasury.CounterpartyEnvironmentLive ||
			pending.Verification.Status != treasury.CounterpartyVerificationStatusPending ||
			pending.Verification.Method == nil || *pending.Verification.Method != treasury.CounterpartyVerificationMethodPrenote ||
			pending.Verification.FailureCode != nil {
			t.Fatalf("live verify: %+v %+v", pending, pending.Verification)
		}
		if got := verifies(); !reflect.DeepEqual(got, []int{http.StatusOK}) {
			t.Fatalf("live verify answered %v, want one 200", got)
		}
		_, err = lc.Counterparties.Verify(ctx, lcp.Id, treasury.VerifyCounterpartyRequest{Method: treasury.VerifyCounterpartyRequestMethodPrenote})
		if e := requireAPIError(t, err, treasury.ErrConflict, treasury.KindConflict, 409, "invalid_state"); e.ResourceID != lcp.Id {
			t.Fatalf("live verify twice: %+v", e)
		}
		if got := verifies(); !reflect.DeepEqual(got, []int{http.StatusOK, http.StatusConflict}) {
			t.Fatalf("live verifies answered %v, want 200 then one 409 (not retried)", got)
		}
		got := must(lc.Counterparties.Retrieve(ctx, lcp.Id))(t)
		if got.Verification.Status != treasury.CounterpartyVerificationStatusPending ||
			got.Verification.Method == nil || *got.Verification.Method != treasury.CounterpartyVerificationMethodPrenote {
			t.Fatalf("after the live verify: %+v", got.Verification)
		}
		var listed []string
		for cp, err := range lc.Counterparties.List(ctx, &treasury.ListCounterpartiesParams{
			VerificationStatus: treasury.Ptr(treasury.ListCounterpartiesParamsVerificationStatusPending),
		}) {
			if err != nil {
				t.Fatal(err)
			}
			listed = append(listed, cp.Id)
		}
		if !reflect.DeepEqual(listed, []string{lcp.Id}) {
			t.Fatalf("live pending counterparties: %v, want [%s]", listed, lcp.Id)
		}
		gone := must(lc.Counterparties.Delete(ctx, lcp.Id))(t)
		if gone.Id != lcp.Id || !bool(gone.Deleted) {
			t.Fatalf("live delete: %+v", gone)
		}
	})

	t.Run("delete", func(t *testing.T) {
		gone := must(c.Counterparties.Delete(ctx, third.Id))(t)
		if gone.Id != third.Id || gone.Object != treasury.DeletedCounterpartyObjectCounterparty || gone.Deleted != treasury.DeletedCounterpartyDeletedTrue {
			t.Fatalf("deleted: %+v", gone)
		}
		_, err := c.Counterparties.Retrieve(ctx, third.Id)
		requireAPIError(t, err, treasury.ErrNotFound, treasury.KindNotFound, 404, "not_found")
		_, err = c.Counterparties.Delete(ctx, third.Id)
		requireAPIError(t, err, treasury.ErrNotFound, treasury.KindNotFound, 404, "not_found")
		_, err = c.Counterparties.Verify(ctx, third.Id, treasury.VerifyCounterpartyRequest{})
		requireAPIError(t, err, treasury.ErrNotFound, treasury.KindNotFound, 404, "not_found")
		_, err = c.Payments.Create(ctx, payTo(third.Id))
		if e := requireAPIError(t, err, treasury.ErrNotFound, treasury.KindNotFound, 404, "not_found"); e.Param != "counterparty_id" {
			t.Fatalf("a payment to a deleted counterparty: param %q", e.Param)
		}
		ids, _ := listIDs(t, treasury.ListCounterpartiesParams{Metadata: &treasury.MetadataFilter{"batch": batch, "kind": "main"}})
		if want := []string{second.Id, main.Id}; !reflect.DeepEqual(ids, want) {
			t.Fatalf("after the delete: %v, want %v", ids, want)
		}
	})
}
