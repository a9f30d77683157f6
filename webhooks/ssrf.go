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

// blocked are the ranges a live webhook may never reach: private,
// loopback, link-local, CGNAT, multicast, reserved and documentation
// networks, and the IPv6 forms that carry IPv4 (checked on the IPv4 inside).
var blocked = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
		"203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32",
		"::/128", "::1/128", "fc00::/7", "fe80::/10", "ff00::/8", "2001:db8::/32", "100::/64", "2001::/23",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

var (
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	nat64l = netip.MustParsePrefix("64:ff9b:1::/48")
	sixTo4 = netip.MustParsePrefix("2002::/16")
)

// ErrBlockedAddress is returned when a webhook host resolves to an address
// it may not reach.
var ErrBlockedAddress = errors.New("webhook address is not public")

// PublicAddress reports whether a may be reached by a live webhook.
func PublicAddress(a netip.Addr) bool {
	a = a.Unmap() // IPv4-mapped IPv6 (::ffff:a.b.c.d) is the IPv4 inside
	if !a.IsValid() {
		return false
	}
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a), nat64l.Contains(a): // NAT64: the IPv4 in the last 32 bits
			return PublicAddress(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
		case sixTo4.Contains(a): // 6to4: the IPv4 in bits 16..47
			return PublicAddress(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
		}
		if a.Is4In6() {
			return PublicAddress(a.Unmap())
		}
		// IPv4-compatible (::a.b.c.d, deprecated) carries an IPv4 as well.
		if b[0]|b[1]|b[2]|b[3]|b[4]|b[5]|b[6]|b[7]|b[8]|b[9]|b[10]|b[11] == 0 {
			return false
		}
	}
	for _, p := range blocked {
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
