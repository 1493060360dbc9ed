package status

import (
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// hostAllowed reports whether r's Host names this endpoint: "localhost",
// a loopback address, the address the connection arrived on, or one of
// extra (case-insensitive). A DNS-rebinding page reaches a loopback port
// under its own domain name, which its Host header carries; refusing
// unknown names keeps such a page from reading /status.
func hostAllowed(r *http.Request, extra []string) bool {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if host == "" {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	for _, e := range extra {
		if strings.EqualFold(host, e) {
			return true
		}
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.Unmap().WithZone("")
	if ip.IsLoopback() {
		return true
	}
	// The address the request was sent to: a lab's open status endpoint
	// (insecure.open_status) reached by its IP.
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if ap, err := netip.ParseAddrPort(la.String()); err == nil && ap.Addr().Unmap().WithZone("") == ip {
			return true
		}
	}
	return false
}

// checkHost refuses a request whose Host is not allowed (hostAllowed)
// with 421 Misdirected Request.
func checkHost(next http.Handler, extra []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostAllowed(r, extra) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusMisdirectedRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": "host_not_allowed",
				"message": "this status endpoint answers only to localhost, loopback addresses and its configured names"}})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// RedactURL returns u without its password and query (either may hold a
// credential): "tcp://user:secret@host:1883?token=x" gives
// "tcp://user:xxxxx@host:1883". Text that is no URL comes back as
// "(unparsable URL)", since it may be a credential itself.
func RedactURL(u string) string {
	if u == "" {
		return ""
	}
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	if p.RawQuery != "" {
		p.RawQuery = "xxxxx"
	}
	p.Fragment, p.RawFragment = "", ""
	return p.Redacted()
}
