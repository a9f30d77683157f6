package webhooks

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// refused are the ranges a live webhook may never reach. Addresses that
// carry an IPv4 inside an IPv6 one are judged by that IPv4 (see embedded)
// or, where the embedding is unreliable, refused outright.
var refused = prefixes(
	// IPv4 special-purpose ranges (RFC 6890 and successors).
	"0.0.0.0/8",        // "this network"
	"10.0.0.0/8",       // private
	"100.64.0.0/10",    // carrier-grade NAT (holds Alibaba's 100.100.100.200 metadata)
	"127.0.0.0/8",      // loopback
	"169.254.0.0/16",   // link-local (holds the 169.254.169.254 cloud metadata)
	"172.16.0.0/12",    // private
	"192.0.0.0/24",     // IETF protocol assignments (holds Oracle's 192.0.0.192)
	"192.0.2.0/24",     // documentation
	"192.88.99.0/24",   // 6to4 relay anycast
	"192.168.0.0/16",   // private
	"198.18.0.0/15",    // benchmarking
	"198.51.100.0/24",  // documentation
	"203.0.113.0/24",   // documentation
	"224.0.0.0/4",      // multicast
	"240.0.0.0/4",      // reserved, and 255.255.255.255 broadcast
	"168.63.129.16/32", // Azure wire server: a public address that only the platform answers
	// IPv6.
	"::/96",           // unspecified, loopback and IPv4-compatible (::a.b.c.d)
	"::ffff:0:0/96",   // IPv4-mapped
	"::ffff:0:0:0/96", // IPv4-translated (RFC 2765)
	"64:ff9b:1::/48",  // NAT64 local use (RFC 8215): a private network's translator
	"100::/64",        // discard
	"2001::/23",       // IETF protocol assignments, with Teredo 2001::/32
	"2001:db8::/32",   // documentation
	"3fff::/20",       // documentation (RFC 9637)
	"5f00::/16",       // SRv6 segment identifiers
	"fc00::/7",        // unique local (holds AWS's fd00:ec2::254 metadata)
	"fe80::/10",       // link-local
	"fec0::/10",       // site-local (deprecated, still routed inside sites)
	"ff00::/8",        // multicast
)

// embedded are the IPv6 prefixes that carry a routable IPv4, and where it
// sits: such an address reaches that IPv4 host through a translator.
var embedded = []struct {
	prefix netip.Prefix
	at     int // byte offset of the IPv4 inside the IPv6 address
}{
	{netip.MustParsePrefix("64:ff9b::/96"), 12}, // NAT64 well-known prefix (RFC 6052)
	{netip.MustParsePrefix("2002::/16"), 2},     // 6to4 (RFC 3056)
}

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// ErrBlockedAddress is returned when a webhook host resolves to an address
// it may not reach.
var ErrBlockedAddress = errors.New("webhook address is not public")

// PublicAddress reports whether a may be reached by a live webhook. An
// IPv4 must be given in its 4-byte form: the IPv4-mapped form is refused,
// as no DNS answer or dialer should produce it.
func PublicAddress(a netip.Addr) bool {
	if !a.IsValid() || a.Zone() != "" { // a zone scopes an address to one link
		return false
	}
	for _, e := range embedded {
		if e.prefix.Contains(a) {
			b := a.As16()
			return PublicAddress(netip.AddrFrom4([4]byte(b[e.at : e.at+4])))
		}
	}
	for _, p := range refused {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// NewClient is the HTTP client of the sender: a 10 s limit, no redirects
// followed, and — unless allowPrivate — a dialer that checks every address
// it connects to (after DNS, so a name that resolves to a private address
// is refused too).
func NewClient(allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	if !allowPrivate {
		dialer.Control = func(network, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			a, err := netip.ParseAddr(host)
			if err != nil || !PublicAddress(a) {
				return fmt.Errorf("%w: %s", ErrBlockedAddress, host)
			}
			return nil
		}
	}
	transport := &http.Transport{
		Proxy:                 nil, // a proxy would bypass the address check
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: 10 * time.Second,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
	}
	return &http.Client{
		Timeout:   10 * time.Second,
		Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
