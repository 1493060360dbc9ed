package guard

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/realclientip/realclientip-go"
)

// ProxiesEnv names the trusted proxies of SettingsFromEnv-style readers
// (bowline api, bowline dev): a comma-separated list of addresses and
// CIDR ranges, "10.0.0.0/24,10.0.1.0/24".
const ProxiesEnv = "BOWLINE_TRUSTED_PROXIES"

// ErrBadProxies: a trusted proxy entry is not an address or a CIDR range.
var ErrBadProxies = errors.New("trusted proxies")

// Proxies are the peers whose forwarding headers are believed. The zero
// value trusts nobody: the client is always the TCP peer.
type Proxies struct {
	ranges []net.IPNet
	xff    realclientip.Strategy
	text   string
}

// ParseProxies parses "addr,cidr,..." (spaces ignored; "" trusts nobody).
// An entry that is neither an address nor a CIDR range is an error naming
// it and wrapping ErrBadProxies.
func ParseProxies(s string) (Proxies, error) {
	var items []string
	for it := range strings.SplitSeq(s, ",") {
		if it = strings.TrimSpace(it); it != "" {
			items = append(items, it)
		}
	}
	if len(items) == 0 {
		return Proxies{}, nil
	}
	for _, it := range items {
		_, perr := netip.ParsePrefix(it)
		_, aerr := netip.ParseAddr(it)
		if perr != nil && aerr != nil {
			return Proxies{}, fmt.Errorf("%s entry %q: want an address or a CIDR range (10.0.0.0/24): %w", ProxiesEnv, it, ErrBadProxies)
		}
	}
	ranges, err := realclientip.AddressesAndRangesToIPNets(items...)
	if err != nil {
		return Proxies{}, fmt.Errorf("%s %q: %v: %w", ProxiesEnv, s, err, ErrBadProxies)
	}
	xff, err := realclientip.NewRightmostTrustedRangeStrategy("X-Forwarded-For", ranges)
	if err != nil {
		return Proxies{}, fmt.Errorf("%s: %v: %w", ProxiesEnv, err, ErrBadProxies)
	}
	return Proxies{ranges: ranges, xff: xff, text: strings.Join(items, ",")}, nil
}

// MustParseProxies is ParseProxies for constants in tests; it panics on
// an error.
func MustParseProxies(s string) Proxies {
	p, err := ParseProxies(s)
	if err != nil {
		panic(err)
	}
	return p
}

// String lists the trusted proxies as parsed ("" for none).
func (p Proxies) String() string { return p.text }

// trustedPeer reports whether the request's TCP peer is a trusted proxy.
func (p Proxies) trustedPeer(r *http.Request) bool {
	if len(p.ranges) == 0 {
		return false
	}
	ip := net.ParseIP(realclientip.RemoteAddrStrategy{}.ClientIP(nil, r.RemoteAddr))
	if ip == nil {
		return false
	}
	for _, n := range p.ranges {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// Client returns the client address of r: the peer, or when the peer is a
// trusted proxy, the rightmost X-Forwarded-For address that is not a
// trusted proxy (the peer when the header names none). "" only for a peer
// that is no IP address (a unix socket).
func (p Proxies) Client(r *http.Request) string {
	peer := realclientip.RemoteAddrStrategy{}.ClientIP(nil, r.RemoteAddr)
	if !p.trustedPeer(r) {
		return peer
	}
	if ip := p.xff.ClientIP(r.Header, r.RemoteAddr); ip != "" {
		return ip
	}
	return peer
}

// HTTPS reports whether the client reached us over HTTPS: TLS on this
// connection, or "X-Forwarded-Proto: https" set by a trusted proxy (the
// load balancer ends TLS). The header of any other peer is ignored.
func (p Proxies) HTTPS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	if !p.trustedPeer(r) {
		return false
	}
	// A proxy appends; the last value is the one closest to us.
	v := r.Header.Values("X-Forwarded-Proto")
	if len(v) == 0 {
		return false
	}
	last := v[len(v)-1]
	if i := strings.LastIndexByte(last, ','); i >= 0 {
		last = last[i+1:]
	}
	return strings.EqualFold(strings.TrimSpace(last), "https")
}

// source is the key failures are counted under: the client address, with
// an IPv6 address cut to its /64 (one host usually holds a whole /64, so
// per-address counting would give it 2^64 fresh starts).
func source(client string) string {
	a, err := netip.ParseAddr(client)
	if err != nil {
		return client
	}
	a = a.Unmap()
	if a.Is4() {
		return a.String()
	}
	pfx, err := a.WithZone("").Prefix(64)
	if err != nil {
		return client
	}
	return pfx.String()
}
