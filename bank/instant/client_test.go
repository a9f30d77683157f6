package instant_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opentreasury/treasury/bank/instant"
)

// recorder is a bank whose first answers are replaced by fail: it records
// the MsgId of every request it reads.
type recorder struct {
	bank http.Handler
	fail func(n int, w http.ResponseWriter, r *http.Request) bool // true: answered

	mu     sync.Mutex
	msgIDs []string
	auth   []string
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	id := ""
	if p, err := instant.ReadCreditTransfer(body); err == nil {
		id = p.ID
	}
	rec.mu.Lock()
	rec.msgIDs = append(rec.msgIDs, id)
	rec.auth = append(rec.auth, r.Header.Get("Authorization"))
	n := len(rec.msgIDs)
	rec.mu.Unlock()
	if ct := r.Header.Get("Content-Type"); ct != "application/xml" {
		http.Error(w, "content type "+ct, http.StatusUnsupportedMediaType)
		return
	}
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	if rec.fail != nil && rec.fail(n, w, r) {
		return
	}
	rec.bank.ServeHTTP(w, r)
}

func (rec *recorder) ids() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]string(nil), rec.msgIDs...)
}

func fastClient(url, auth string) *instant.Client {
	return &instant.Client{BaseURL: url, Auth: auth, Timeout: 200 * time.Millisecond, Attempts: 3, Backoff: time.Millisecond}
}

func TestClientRetriesWithTheSameMsgId(t *testing.T) {
	cases := map[string]func(n int, w http.ResponseWriter, r *http.Request) bool{
		// The bank is down twice.
		"503 twice": func(n int, w http.ResponseWriter, r *http.Request) bool {
			if n <= 2 {
				http.Error(w, "down", http.StatusServiceUnavailable)
				return true
			}
			return false
		},
		// The first answer never comes: the bank took the payment, the
		// client timed out.
		"timeout": func(n int, w http.ResponseWriter, r *http.Request) bool {
			if n == 1 {
				time.Sleep(400 * time.Millisecond)
			}
			return false
		},
		// The bank took it; a proxy lost its answer.
		"answer lost": func(n int, w http.ResponseWriter, r *http.Request) bool {
			if n == 1 {
				rr := httptest.NewRecorder()
				bankOf(r).ServeHTTP(rr, r)
				http.Error(w, "bad gateway", http.StatusBadGateway)
				return true
			}
			return false
		},
		"429": func(n int, w http.ResponseWriter, r *http.Request) bool {
			if n == 1 {
				http.Error(w, "slow down", http.StatusTooManyRequests)
				return true
			}
			return false
		},
	}
	for name, fail := range cases {
		t.Run(name, func(t *testing.T) {
			sim := instant.NewSimulatedBank("Bearer k")
			rec := &recorder{bank: sim, fail: fail}
			srv := httptest.NewServer(withBank(rec, sim))
			defer srv.Close()
			st, err := fastClient(srv.URL, "Bearer k").Send(context.Background(), samplePayment())
			if err != nil || st.Outcome() != instant.Completed {
				t.Fatalf("Send = %+v, %v", st, err)
			}
			ids := rec.ids()
			if len(ids) < 2 {
				t.Fatalf("%d requests", len(ids))
			}
			for _, id := range ids {
				if id != payID {
					t.Errorf("MsgIds %v, want %s every time", ids, payID)
				}
			}
			if sim.Payments() != 1 {
				t.Errorf("the bank took %d payments", sim.Payments())
			}
		})
	}
}

type bankKey struct{}

// withBank lets a failure reach the bank behind the recorder.
func withBank(h http.Handler, bank http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), bankKey{}, bank)))
	})
}

func bankOf(r *http.Request) http.Handler { return r.Context().Value(bankKey{}).(http.Handler) }

func TestClientGivesUpAfterItsAttempts(t *testing.T) {
	var n int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		mu.Unlock()
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	_, err := fastClient(srv.URL, "").Send(context.Background(), samplePayment())
	var h *instant.HTTPError
	if !errors.As(err, &h) || h.StatusCode != 503 || !instant.Retryable(err) || n != 3 {
		t.Errorf("Send = %v after %d requests; want a 503 after 3", err, n)
	}
}

func TestClientDoesNotRetryARefusal(t *testing.T) {
	sim := instant.NewSimulatedBank("Bearer right")
	rec := &recorder{bank: sim}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	_, err := fastClient(srv.URL, "Bearer wrong").Send(context.Background(), samplePayment())
	var h *instant.HTTPError
	if !errors.As(err, &h) || h.StatusCode != http.StatusUnauthorized || instant.Retryable(err) {
		t.Fatalf("Send = %v, want a 401 not retried", err)
	}
	if ids := rec.ids(); len(ids) != 1 || rec.auth[0] != "Bearer wrong" || sim.Payments() != 0 {
		t.Errorf("%d requests (auth %q), %d payments", len(ids), rec.auth, sim.Payments())
	}
	// No Authorization header at all when none is configured.
	if _, err := fastClient(srv.URL, "").Send(context.Background(), samplePayment()); !errors.As(err, &h) || h.StatusCode != 401 {
		t.Errorf("Send with no auth = %v", err)
	}
	if rec.auth[1] != "" {
		t.Errorf("Authorization %q sent with none configured", rec.auth[1])
	}
}

func TestClientRefusesAnAnswerAboutAnotherPayment(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, pacs002("pay_other", "pay_other", "ACSC", ""))
	}))
	defer srv.Close()
	if st, err := fastClient(srv.URL, "").Send(context.Background(), samplePayment()); err == nil || instant.Retryable(err) {
		t.Errorf("Send = %+v, %v", st, err)
	}
}

func TestClientLimitsTheAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat(" ", instant.MaxAnswer+10))
	}))
	defer srv.Close()
	if _, err := fastClient(srv.URL, "").Send(context.Background(), samplePayment()); err == nil || !strings.Contains(err.Error(), "over") {
		t.Errorf("Send = %v", err)
	}
}

func TestClientStopsWithItsContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	c := fastClient(srv.URL, "")
	c.Attempts, c.Backoff = 100, time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := c.Send(ctx, samplePayment()); err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("Send = %v after %s", err, time.Since(start))
	}
}

// A redirect is not followed: a payment message goes to the configured
// address only.
func TestClientDoesNotFollowRedirects(t *testing.T) {
	elsewhere := 0
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere++ }))
	defer other.Close()
	srv := httptest.NewServer(http.RedirectHandler(other.URL+"/pacs.008", http.StatusTemporaryRedirect))
	defer srv.Close()
	c := &instant.Client{BaseURL: srv.URL, Timeout: time.Second, Attempts: 1}
	_, err := c.Send(context.Background(), samplePayment())
	var he *instant.HTTPError
	if !errors.As(err, &he) || he.StatusCode != http.StatusTemporaryRedirect || elsewhere != 0 {
		t.Errorf("Send = %v; the redirect's target got %d requests", err, elsewhere)
	}
}
