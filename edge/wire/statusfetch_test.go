package wire

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// TestFetchStatus serves testdata/status.json and the ways an endpoint
// fails; every failure names the URL read and the problem, with the
// sentinel the callers (console, chaos, bowline-edge status) branch on.
func TestFetchStatus(t *testing.T) {
	doc, err := os.ReadFile("testdata/status.json")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	serve := func(path string, code int, body []byte) {
		mux.HandleFunc("GET "+path+StatusPath, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(code)
			_, _ = w.Write(body)
		})
	}
	serve("/ok", http.StatusOK, doc)
	serve("/down", http.StatusServiceUnavailable, []byte(`{"error":"report failed"}`))
	serve("/html", http.StatusOK, []byte("<html>a proxy's page</html>"))
	serve("/big", http.StatusOK, doc)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	st, raw, err := FetchStatus(t.Context(), srv.Client(), srv.URL+"/ok/", int64(len(doc)))
	if err != nil {
		t.Fatalf("FetchStatus(ok) = %v; want the document", err)
	}
	if st.Gateway != "gw-1" || !bytes.Equal(raw, doc) {
		t.Errorf("FetchStatus(ok) gateway %q, raw %d bytes; want gw-1 and the %d bytes served", st.Gateway, len(raw), len(doc))
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "http://" + l.Addr().String()
	l.Close()

	for _, tc := range []struct {
		name, base string
		limit      int64
		want       error
		says       string // a part of the message besides the URL
	}{
		{"unreachable", gone, 1 << 20, ErrStatusUnreachable, "unreachable"},
		{"non-200", srv.URL + "/down", 1 << 20, ErrStatusAnswer, "answered 503 Service Unavailable: {\"error\":\"report failed\"}"},
		{"not a document", srv.URL + "/html", 1 << 20, ErrNotStatus, "not a status document: invalid character '<'"},
		{"over the limit", srv.URL + "/big", int64(len(doc)) - 1, ErrStatusTooLarge, "too large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := FetchStatus(t.Context(), nil, tc.base, tc.limit)
			if !errors.Is(err, tc.want) {
				t.Fatalf("FetchStatus(%s) = %v; want %v", tc.base, err, tc.want)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.base+StatusPath) || !strings.Contains(msg, tc.says) {
				t.Errorf("FetchStatus(%s) error %q; want it to name %s and say %q", tc.base, msg, tc.base+StatusPath, tc.says)
			}
		})
	}
}
