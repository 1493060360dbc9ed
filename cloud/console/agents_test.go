package console

import (
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"
)

// TestAgentStatusGolden decodes the /status document the edge agent's
// real report code writes (edge/wire/testdata/status.json, checked against
// the agent's server by edge/status TestStatusDocumentGolden) with the
// console's poller, served as the agent serves it: what the console shows
// of an agent comes from the fields the agent fills.
func TestAgentStatusGolden(t *testing.T) {
	doc, err := os.ReadFile("../../edge/wire/testdata/status.json")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/status" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	}))
	t.Cleanup(srv.Close)
	p := newAgentPoller([]Agent{{Thing: "bowl-7f3a", Tenant: "t1", StatusURL: srv.URL}})
	p.poll(t.Context())
	v, ok := p.view("bowl-7f3a")
	if !ok || v.Err != "" {
		t.Fatalf("view = %+v, %t; want the document decoded", v, ok)
	}
	st := v.Status
	if st.Tenant != "t1" || st.Gateway != "gw-1" || st.Uptime != 90*time.Minute {
		t.Errorf("tenant, gateway, uptime = %q, %q, %v; want t1, gw-1, 1h30m", st.Tenant, st.Gateway, st.Uptime)
	}
	if !v.Up() || v.Backlog() != 122 || v.Oldest() != 1200 {
		t.Errorf("Up, Backlog, Oldest = %t, %d, %v; want true, 122 (2 events + 120 telemetry), 1200 s", v.Up(), v.Backlog(), v.Oldest())
	}
	if d := st.Lanes.Events.Dropped + st.Lanes.Telemetry.Dropped; d != 8 {
		t.Errorf("dropped = %d; want 8 (1 events + 7 telemetry)", d)
	}
	m := st.MQTT
	if m.Published != 12345 || m.Acked != 12343 || !m.LastPuback.Equal(time.Date(2026, 11, 29, 11, 59, 58, 0, time.UTC)) {
		t.Errorf("mqtt = %+v; want published 12345, acked 12343, last PUBACK 11:59:58", m)
	}
	if len(st.Bowls) != 3 || st.Bowls[1].Device != "bowl-7f3a" || !st.Bowls[1].Connected || st.Bowls[1].LastSeen.IsZero() || st.Bowls[2].LastError == "" {
		t.Errorf("bowls = %+v; want the input, the device bowl-7f3a (connected, last seen) and the failing input", st.Bowls)
	}
}

// An agent that answers badly is told apart from one that does not answer,
// by the kind of fetch error, not by words in the agent's answer: a 503
// whose body says "timeout" is still an answer.
func TestAgentProblemKinds(t *testing.T) {
	serve := func(status int, body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for _, tc := range []struct {
		name, url   string
		unreachable bool
		what        string
	}{
		{"nothing listens", closed.URL, true, "is unreachable (connection refused: nothing listens there)"},
		{"an error status", serve(http.StatusServiceUnavailable, "upstream timeout"), false, "answers with an error status"},
		{"not a status document", serve(http.StatusOK, "<html>router login</html>"), false, "answers with something that is not a status document (another program on that port?)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newAgentPoller([]Agent{{Thing: "gw-1", Tenant: "t1", StatusURL: tc.url}})
			p.poll(t.Context())
			v, _ := p.view("gw-1")
			pr := v.Problem()
			if pr == nil {
				t.Fatalf("Problem() = nil; want one (err %q)", v.Err)
			}
			if pr.What != tc.what || pr.Unreachable != tc.unreachable || v.Unreachable() != tc.unreachable {
				t.Errorf("Problem = %q, unreachable %t (view %t); want %q, %t", pr.What, pr.Unreachable, v.Unreachable(), tc.what, tc.unreachable)
			}
		})
	}
}
