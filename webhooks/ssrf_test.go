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
		why  string
	}{
		{"8.8.8.8", true, "public IPv4"},
		{"1.1.1.1", true, "public IPv4"},
		{"93.184.216.34", true, "public IPv4"},
		{"2606:4700:4700::1111", true, "public IPv6"},
		{"2a00:1450:4001:80b::200e", true, "public IPv6"},
		{"64:ff9b::808:808", true, "NAT64 of a public IPv4"},
		{"2002:0808:0808::", true, "6to4 of a public IPv4"},

		{"0.0.0.0", false, "unspecified"},
		{"0.1.2.3", false, "this network 0.0.0.0/8"},
		{"10.1.2.3", false, "private"},
		{"172.16.0.1", false, "private"},
		{"172.31.255.255", false, "private"},
		{"192.168.1.1", false, "private"},
		{"127.0.0.1", false, "loopback"},
		{"127.255.255.254", false, "loopback"},
		{"169.254.169.254", false, "link-local cloud metadata"},
		{"169.254.170.2", false, "link-local container metadata"},
		{"100.64.0.1", false, "CGNAT"},
		{"100.100.100.200", false, "Alibaba metadata, in CGNAT"},
		{"100.127.255.255", false, "CGNAT"},
		{"192.0.0.1", false, "IETF protocol assignments"},
		{"192.0.0.192", false, "Oracle metadata, in 192.0.0.0/24"},
		{"192.0.2.1", false, "documentation"},
		{"198.51.100.7", false, "documentation"},
		{"203.0.113.9", false, "documentation"},
		{"192.88.99.1", false, "6to4 relay anycast"},
		{"198.18.0.1", false, "benchmarking"},
		{"198.19.255.255", false, "benchmarking"},
		{"224.0.0.1", false, "multicast"},
		{"239.255.255.250", false, "multicast"},
		{"240.0.0.1", false, "reserved"},
		{"255.255.255.255", false, "broadcast"},
		{"168.63.129.16", false, "Azure wire server"},

		{"::", false, "IPv6 unspecified"},
		{"::1", false, "IPv6 loopback"},
		{"::127.0.0.1", false, "IPv4-compatible"},
		{"::8.8.8.8", false, "IPv4-compatible (deprecated) even of a public IPv4"},
		{"::ffff:127.0.0.1", false, "IPv4-mapped loopback"},
		{"::ffff:10.0.0.1", false, "IPv4-mapped private"},
		{"::ffff:169.254.169.254", false, "IPv4-mapped metadata"},
		{"::ffff:8.8.8.8", false, "IPv4-mapped, refused in any case"},
		{"::ffff:0:a9fe:a9fe", false, "IPv4-translated metadata (RFC 2765)"},
		{"::ffff:0:808:808", false, "IPv4-translated, refused in any case"},
		{"64:ff9b::7f00:1", false, "NAT64 of loopback"},
		{"64:ff9b::a9fe:a9fe", false, "NAT64 of metadata"},
		{"64:ff9b::a00:1", false, "NAT64 of private"},
		{"64:ff9b:1::808:808", false, "NAT64 local use"},
		{"64:ff9b:1:ffff::1", false, "NAT64 local use"},
		{"2002:7f00:0001::", false, "6to4 of loopback"},
		{"2002:a9fe:a9fe::1", false, "6to4 of metadata"},
		{"2002:c0a8:0101::", false, "6to4 of private"},
		{"2001::1", false, "Teredo"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", false, "Teredo"},
		{"2001:db8::1", false, "documentation"},
		{"3fff::1", false, "documentation (RFC 9637)"},
		{"100::1", false, "discard"},
		{"5f00::1", false, "SRv6 SID"},
		{"fc00::1", false, "unique local"},
		{"fd00:ec2::254", false, "AWS IPv6 metadata, unique local"},
		{"fec0::1", false, "site-local"},
		{"fefe::1", false, "site-local"},
		{"fe80::1", false, "link-local"},
		{"fe80::1%eth0", false, "link-local with a zone"},
		{"2606:4700:4700::1111%eth0", false, "a zone scopes the address to a link"},
		{"ff02::1", false, "multicast"},
		{"ff0e::1", false, "global multicast"},
	} {
		a := netip.MustParseAddr(tc.addr)
		if got := webhooks.PublicAddress(a); got != tc.want {
			t.Errorf("PublicAddress(%s) = %v, want %v (%s)", tc.addr, got, tc.want, tc.why)
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
