package console_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/console"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/eventstore/pgtest"
	"github.com/opentreasury/treasury/projections/queries"
)

// Tests of the console's sessions and guards against a real PostgreSQL;
// the journeys in a browser are cmd/treasury's TestConsole.

const operatorKey = "op_test_key_0123456789abcdefghijklmnopqrstuvwxyz"

type rig struct {
	t   *testing.T
	ctx context.Context
	a   *app.App
	srv *httptest.Server
}

func newRig(t *testing.T) *rig {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	a := app.New(pgtest.Pool(t), nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	c, err := console.New(console.Config{App: a, OperatorKey: operatorKey})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return &rig{t: t, ctx: ctx, a: a, srv: srv}
}

// platform registers and approves a platform and opens an account: its
// sandbox key and the account's id.
func (r *rig) platform(name string) (key, accountID string, c app.Caller) {
	r.t.Helper()
	res, err := r.a.RegisterPlatform(r.ctx, app.Meta{}, nil, app.RegisterPlatform{Name: name, ContactEmail: "ops@example.com"})
	if err != nil {
		r.t.Fatal(err)
	}
	approved, err := r.a.ApprovePlatform(r.ctx, app.Meta{}, res.ID)
	if err != nil {
		r.t.Fatal(err)
	}
	c = app.Caller{PlatformID: res.ID, Environment: domain.Sandbox}
	open, err := r.a.OpenVirtualAccount(r.ctx, app.Meta{}, nil, c, app.OpenVirtualAccount{PlatformID: res.ID, EntityRef: name + "_biz", Type: "checking"})
	if err != nil {
		r.t.Fatal(err)
	}
	return approved.Secret, open.ID, c
}

// browser is a client with its own cookies that does not follow redirects.
type browser struct {
	t      *testing.T
	base   string
	client *http.Client
}

func (r *rig) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: r.t, base: r.srv.URL, client: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	status   int
	location string
	body     string
}

func (b *browser) do(method, path string, form url.Values, header map[string]string) page {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return page{res.StatusCode, res.Header.Get("Location"), string(data)}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the token of the first form on the page at path.
func (b *browser) csrf(path string) string {
	b.t.Helper()
	p := b.do("GET", path, nil, nil)
	m := csrfField.FindStringSubmatch(p.body)
	if m == nil {
		b.t.Fatalf("GET %s (%d): no form token in %s", path, p.status, p.body)
	}
	return m[1]
}

func (b *browser) signIn(key string) page {
	b.t.Helper()
	return b.do("POST", "/console/sign-in", url.Values{"csrf": {b.csrf("/console/sign-in")}, "key": {key}}, nil)
}

func TestSignInOutAndTheKeyThatEndsASession(t *testing.T) {
	r := newRig(t)
	key, va, c := r.platform("acme")
	b := r.browser()

	// Not signed in: every page sends the browser to sign in.
	if p := b.do("GET", "/console/accounts", nil, nil); p.status != http.StatusSeeOther || p.location != "/console/sign-in" {
		t.Fatalf("signed out: %d %s", p.status, p.location)
	}
	// A wrong key: 401, no session.
	if p := b.signIn("sk_sandbox_" + strings.Repeat("x", 40)); p.status != http.StatusUnauthorized || !strings.Contains(p.body, "not valid") {
		t.Fatalf("a wrong key: %d", p.status)
	}
	// The sign-in form's token must be there.
	if p := b.do("POST", "/console/sign-in", url.Values{"key": {key}}, nil); p.status != http.StatusForbidden {
		t.Fatalf("sign-in without its token: %d", p.status)
	}
	p := b.signIn(key)
	if p.status != http.StatusSeeOther || p.location != "/console/" {
		t.Fatalf("sign-in: %d %s %s", p.status, p.location, p.body)
	}
	home := b.do("GET", "/console/accounts", nil, nil)
	if home.status != http.StatusOK || !strings.Contains(home.body, va) || !strings.Contains(home.body, "sandbox") {
		t.Fatalf("accounts: %d %s", home.status, home.body)
	}
	if strings.Contains(home.body, key) {
		t.Error("the page shows the key")
	}
	// The operator's pages are not a platform's.
	if p := b.do("GET", "/console/platforms", nil, nil); p.status != http.StatusForbidden {
		t.Errorf("a platform session on the operator's page: %d", p.status)
	}

	// Revoking the key ends the session at its next request.
	cred, _, err := queries.CredentialByHash(r.ctx, r.a.Pool, app.HashSecret(key))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.a.RevokeAPIKey(r.ctx, app.Meta{}, c.PlatformID, domain.Sandbox, cred.KeyID); err != nil {
		t.Fatal(err)
	}
	if p := b.do("GET", "/console/accounts", nil, nil); p.status != http.StatusSeeOther || p.location != "/console/sign-in" {
		t.Errorf("after the key's revocation: %d %s", p.status, p.location)
	}
	if p := b.signIn(key); p.status != http.StatusUnauthorized {
		t.Errorf("a revoked key signs in: %d", p.status)
	}

	// Sign-out ends the session for good (the cookie replayed is refused).
	other := r.browser()
	if p := other.signIn(operatorKey); p.status != http.StatusSeeOther {
		t.Fatalf("operator sign-in: %d", p.status)
	}
	if p := other.do("GET", "/console/platforms", nil, nil); p.status != http.StatusOK || !strings.Contains(p.body, "acme") {
		t.Fatalf("platforms: %d", p.status)
	}
	u, _ := url.Parse(r.srv.URL + "/console/")
	saved := other.client.Jar.Cookies(u)
	if p := other.do("POST", "/console/sign-out", url.Values{"csrf": {other.csrf("/console/platforms")}}, nil); p.status != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", p.status)
	}
	other.client.Jar.SetCookies(u, saved)
	if p := other.do("GET", "/console/platforms", nil, nil); p.status != http.StatusSeeOther {
		t.Errorf("the cookie after sign-out: %d", p.status)
	}
}

func TestFormsNeedTheSessionsToken(t *testing.T) {
	r := newRig(t)
	key, va, _ := r.platform("acme")
	b := r.browser()
	if p := b.signIn(key); p.status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", p.status)
	}
	freeze := "/console/accounts/" + va + "/freeze"
	token := b.csrf("/console/accounts/" + va)
	for name, tc := range map[string]struct {
		form   url.Values
		header map[string]string
	}{
		"no token":                  {url.Values{}, nil},
		"another token":             {url.Values{"csrf": {strings.Repeat("A", len(token))}}, nil},
		"the token from elsewhere":  {url.Values{"csrf": {token}}, map[string]string{"Origin": "https://evil.example.com"}},
		"a header with a bad token": {url.Values{}, map[string]string{"X-CSRF-Token": "nope"}},
	} {
		if p := b.do("POST", freeze, tc.form, tc.header); p.status != http.StatusForbidden {
			t.Errorf("%s: %d", name, p.status)
		}
	}
	if p := b.do("GET", "/console/accounts/"+va, nil, nil); !strings.Contains(p.body, `data-testid="account-status">active<`) {
		t.Fatalf("refused forms changed the account: %s", p.body)
	}
	// The token, by form or by htmx's header: done.
	if p := b.do("POST", freeze, url.Values{"csrf": {token}}, nil); p.status != http.StatusSeeOther {
		t.Fatalf("freeze with the token: %d %s", p.status, p.body)
	}
	if p := b.do("POST", "/console/accounts/"+va+"/unfreeze", url.Values{}, map[string]string{"X-CSRF-Token": token, "Origin": strings.TrimPrefix(b.base, "http://")}); p.status != http.StatusForbidden {
		t.Errorf("an Origin that is not a URL: %d", p.status)
	}
	if p := b.do("POST", "/console/accounts/"+va+"/unfreeze", url.Values{}, map[string]string{"X-CSRF-Token": token, "Origin": b.base}); p.status != http.StatusSeeOther {
		t.Errorf("unfreeze by header: %d", p.status)
	}
}

// One platform's session never reaches another's objects: they are not
// found, as the API answers.
func TestAPlatformSeesOnlyItsOwn(t *testing.T) {
	r := newRig(t)
	key, _, _ := r.platform("acme")
	theirKey, theirs, them := r.platform("globex")
	b := r.browser()
	b.signIn(key)
	hookURL := "https://hooks.globex.example.com/treasury"
	hook, err := r.a.CreateWebhook(r.ctx, app.Meta{}, nil, them, app.WebhookInput{URL: &hookURL})
	if err != nil {
		t.Fatal(err)
	}
	cred, _, err := queries.CredentialByHash(r.ctx, r.a.Pool, app.HashSecret(theirKey))
	if err != nil {
		t.Fatal(err)
	}
	token := b.csrf("/console/accounts")
	for _, req := range []struct{ method, path string }{
		{"GET", "/console/webhooks/" + hook.ID},
		{"POST", "/console/webhooks/" + hook.ID + "/test"},
		{"POST", "/console/webhooks/" + hook.ID + "/rotate-secret"},
		{"POST", "/console/keys/" + cred.KeyID + "/revoke"},
		{"POST", "/console/keys/" + cred.KeyID + "/roll"},
		{"GET", "/console/accounts/" + theirs + "/statements/2026-01.csv"},
		{"POST", "/console/accounts/" + theirs + "/simulate-inbound"},
	} {
		var form url.Values
		if req.method == "POST" {
			form = url.Values{"csrf": {token}, "amount": {"10"}, "rail": {"rtp"}, "originator": {"X"}}
		}
		if p := b.do(req.method, req.path, form, nil); p.status != http.StatusNotFound || strings.Contains(p.body, "globex") {
			t.Errorf("%s %s: %d", req.method, req.path, p.status)
		}
	}
	if _, found, _ := queries.CredentialByHash(r.ctx, r.a.Pool, app.HashSecret(theirKey)); !found {
		t.Error("another platform's key was revoked")
	}
	for _, path := range []string{"/console/accounts/" + theirs} {
		if p := b.do("GET", path, nil, nil); p.status != http.StatusNotFound || strings.Contains(p.body, "globex_biz") {
			t.Errorf("GET %s: %d", path, p.status)
		}
	}
	if p := b.do("POST", "/console/accounts/"+theirs+"/freeze", url.Values{"csrf": {b.csrf("/console/accounts")}}, nil); p.status != http.StatusNotFound {
		t.Errorf("freeze another's account: %d", p.status)
	}
	if p := b.do("GET", "/console/accounts", nil, nil); strings.Contains(p.body, theirs) || strings.Contains(p.body, "globex") {
		t.Error("the list shows another platform's account")
	}
}

// Failed sign-ins from one address are limited: after 20 in a minute the
// next is refused before the key is looked at, even a good one.
func TestFailedSignInsAreLimited(t *testing.T) {
	r := newRig(t)
	key, _, _ := r.platform("acme")
	b := r.browser()
	// 60 at once: the limit is taken before the key is looked up, so that
	// no more than 20 are looked at, however they race.
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := r.browser().signIn("sk_sandbox_" + strings.Repeat("y", 40))
			mu.Lock()
			statuses[p.status]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if statuses[http.StatusUnauthorized] != 20 || statuses[http.StatusTooManyRequests] != 40 {
		t.Errorf("60 wrong keys at once: %v, want 20 refused as unknown and 40 as too many", statuses)
	}
	if p := b.signIn(key); p.status != http.StatusTooManyRequests {
		t.Errorf("the 21st sign-in within a minute: %d", p.status)
	}
}

// A creating form sent twice (a double click, a reload) does it once: its
// idempotency key was made with the page.
func TestACreatingFormSentTwiceCreatesOnce(t *testing.T) {
	r := newRig(t)
	key, _, c := r.platform("acme")
	b := r.browser()
	b.signIn(key)
	page := b.do("GET", "/console/keys", nil, nil)
	form := regexp.MustCompile(`name="idempotency_key" value="([^"]+)"`).FindStringSubmatch(page.body)
	if form == nil {
		t.Fatalf("the create form has no idempotency key: %s", page.body)
	}
	values := url.Values{"csrf": {csrfField.FindStringSubmatch(page.body)[1]}, "idempotency_key": {form[1]}, "name": {"Twice"}}
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.do("POST", "/console/keys", values, nil)
		}()
	}
	wg.Wait()
	keys, err := queries.ListAPIKeys(r.ctx, r.a.Pool, c.PlatformID, domain.Sandbox, queries.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, k := range keys.Data {
		if k.Name == "Twice" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d keys made by five submissions of one form, want 1", n)
	}
}

// The session cookie is Secure everywhere but on this machine over plain
// HTTP (make run's localhost).
func TestTheSessionCookieIsSecureOutsideLocalhost(t *testing.T) {
	r := newRig(t)
	key, _, _ := r.platform("acme")
	for host, secure := range map[string]bool{"localhost:8080": false, "127.0.0.1:8080": false, "[::1]:8080": false,
		"treasury.example.com": true, "10.0.0.5:8080": true} {
		b := r.browser()
		get, _ := http.NewRequest("GET", r.srv.URL+"/console/sign-in", nil)
		get.Host = host
		res, err := b.client.Do(get)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		signin := cookieNamed(res, "treasury_console_signin")
		if signin == nil || signin.Secure != secure || !signin.HttpOnly || signin.SameSite != http.SameSiteStrictMode {
			t.Errorf("host %s: the sign-in cookie %+v, want Secure %v", host, signin, secure)
			continue
		}
		form := url.Values{"csrf": {signin.Value}, "key": {key}}
		post, _ := http.NewRequest("POST", r.srv.URL+"/console/sign-in", strings.NewReader(form.Encode()))
		post.Host = host
		post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		post.AddCookie(signin)
		res, err = b.client.Do(post)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		session := cookieNamed(res, "treasury_console")
		if res.StatusCode != http.StatusSeeOther || session == nil || session.Secure != secure || !session.HttpOnly ||
			session.SameSite != http.SameSiteStrictMode || session.Path != "/console" {
			t.Errorf("host %s: sign-in %d, the session cookie %+v, want Secure %v", host, res.StatusCode, session, secure)
		}
	}
}

// Text PostgreSQL cannot hold (a NUL, bytes that are not UTF-8), in the
// path or a form, is a 400 that changes nothing, never the database's 500.
func TestInputPostgreSQLCannotHoldIsA400(t *testing.T) {
	r := newRig(t)
	key, va, c := r.platform("acme")
	b := r.browser()
	b.signIn(key)
	token := b.csrf("/console/keys")
	for _, req := range []struct {
		method, path string
		form         url.Values
	}{
		{"GET", "/console/accounts/va%00x", nil},
		{"GET", "/console/accounts/%ff", nil},
		{"GET", "/console/payments?status=%00", nil},
		{"POST", "/console/keys", url.Values{"csrf": {token}, "name": {"a\x00"}}},
		{"POST", "/console/keys", url.Values{"csrf": {token}, "name": {"a\xff"}}},
		{"POST", "/console/accounts/" + va + "/freeze", url.Values{"csrf": {token}, "x\x00": {"1"}}},
	} {
		if p := b.do(req.method, req.path, req.form, nil); p.status != http.StatusBadRequest {
			t.Errorf("%s %s: %d", req.method, req.path, p.status)
		}
	}
	keys, err := queries.ListAPIKeys(r.ctx, r.a.Pool, c.PlatformID, domain.Sandbox, queries.Page{Limit: 100})
	if err != nil || len(keys.Data) != 1 {
		t.Errorf("keys after refused forms: %d, %v", len(keys.Data), err)
	}
	if p := b.do("GET", "/console/accounts/"+va, nil, nil); !strings.Contains(p.body, `data-testid="account-status">active<`) {
		t.Error("a refused form froze the account")
	}
}

// The banner says only what the console itself signed: a link with words
// of its own shows none of them.
func TestTheBannerShowsOnlyTheConsolesOwnWords(t *testing.T) {
	r := newRig(t)
	key, va, _ := r.platform("acme")
	b := r.browser()
	b.signIn(key)
	if p := b.do("GET", "/console/accounts?done=Your+key+leaked&sig=00", nil, nil); strings.Contains(p.body, "Your key leaked") {
		t.Error("a forged banner was shown")
	}
	done := b.do("POST", "/console/accounts/"+va+"/freeze", url.Values{"csrf": {b.csrf("/console/accounts/" + va)}}, nil)
	if done.status != http.StatusSeeOther {
		t.Fatalf("freeze: %d", done.status)
	}
	if p := b.do("GET", done.location, nil, nil); !strings.Contains(p.body, "Account frozen.") {
		t.Errorf("the console's own banner is missing at %s", done.location)
	}
}

// cookieNamed is the cookie res sets under name, or nil.
func cookieNamed(res *http.Response, name string) *http.Cookie {
	for _, c := range res.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}
