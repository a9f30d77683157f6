package webhooks_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/opentreasury/treasury/webhooks"
)

func TestPublicAddress(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"2606:4700:4700::1111", true},
		{"10.1.2.3", false},
		{"172.16.0.1", false},
		{"192.168.1.1", false},
		{"127.0.0.1", false},
		{"169.254.169.254", false},
		{"100.64.0.1", false},
		{"0.0.0.0", false},
		{"224.0.0.1", false},
		{"240.0.0.1", false},
		{"255.255.255.255", false},
		{"::1", false},
		{"fe80::1", false},
		{"fc00::1", false},
		{"ff02::1", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:10.0.0.1", false},
		{"2002:7f00:0001::", false},
		{"2002:0808:0808::", true},
		{"64:ff9b::7f00:1", false},
		{"64:ff9b::808:808", true},
		{"::127.0.0.1", false},
	} {
		a := netip.MustParseAddr(tc.addr)
		if got := webhooks.PublicAddress(a); got != tc.want {
			t.Errorf("PublicAddress(%s) = %v, want %v", tc.addr, got, tc.want)
		}
	}
	if webhooks.PublicAddress(netip.Addr{}) {
		t.Error("the zero Addr is public")
	}
}

func TestNewClientBlocksLoopback(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()

	res, err := webhooks.NewClient(false).Get(srv.URL)
	if err == nil {
		res.Body.Close()
		t.Fatalf("NewClient(false) reached %s: %s", srv.URL, res.Status)
	}
	if !errors.Is(err, webhooks.ErrBlockedAddress) {
		t.Fatalf("error %v does not wrap ErrBlockedAddress", err)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("%d requests reached the receiver", n)
	}

	res, err = webhooks.NewClient(true).Get(srv.URL)
	if err != nil {
		t.Fatalf("NewClient(true): %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || hits.Load() != 1 {
		t.Fatalf("NewClient(true): %s, %d hits", res.Status, hits.Load())
	}
}

func TestNewClientDoesNotFollowRedirects(t *testing.T) {
	var targetHits atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { targetHits.Add(1) }))
	defer target.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusFound)
	}))
	defer redirect.Close()

	res, err := webhooks.NewClient(true).Get(redirect.URL)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusFound || targetHits.Load() != 0 {
		t.Fatalf("NewClient(true): %s, target hit %d times", res.Status, targetHits.Load())
	}
	// The live client cannot reach loopback at all, so its redirect policy
	// is checked directly.
	for _, allow := range []bool{false, true} {
		c := webhooks.NewClient(allow)
		if c.CheckRedirect == nil {
			t.Fatalf("NewClient(%v) follows redirects (no CheckRedirect)", allow)
		}
		req := httptest.NewRequest(http.MethodGet, target.URL, nil)
		if err := c.CheckRedirect(req, []*http.Request{req}); !errors.Is(err, http.ErrUseLastResponse) {
			t.Fatalf("NewClient(%v).CheckRedirect = %v", allow, err)
		}
	}
}
