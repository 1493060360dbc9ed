package status

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bowline-iot/bowline/edge/wire"
)

// serve starts an endpoint reporting a broker URL with a password and a
// token; it returns the bound address.
func serve(t *testing.T, hosts []string) string {
	t.Helper()
	s, err := Listen(Config{Addr: "127.0.0.1:0", Gatherer: prometheus.NewRegistry(), Hosts: hosts, Report: func(context.Context) (wire.GatewayStatus, error) {
		return wire.GatewayStatus{Tenant: "t1", MQTT: wire.MQTTStatus{Broker: "ssl://bowl:hunter2secret@broker.example:8883/?token=tok-abc123"}}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return s.Addr()
}

// getHost sends GET path to addr with the given Host header.
func getHost(t *testing.T, addr, host, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s (Host %s): %v", path, host, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHostCheckRefusesDNSRebinding: a page on evil.example that rebinds
// its name to 127.0.0.1 sends Host: evil.example:9110; the endpoint
// answers only localhost, loopback addresses and configured names.
func TestHostCheckRefusesDNSRebinding(t *testing.T) {
	addr := serve(t, []string{"gw-7.lan"})
	_, port, _ := net.SplitHostPort(addr)
	for _, host := range []string{"evil.example:" + port, "evil.example", "127.0.0.1.evil.example:" + port, "localhost.evil.example:" + port, "10.0.0.9:" + port} {
		for _, path := range []string{"/status", "/metrics", "/healthz"} {
			if code, body := getHost(t, addr, host, path); code != http.StatusMisdirectedRequest {
				t.Errorf("Host %s %s = %d %.80q; want 421", host, path, code, body)
			}
		}
	}
	for _, host := range []string{addr, "localhost:" + port, "LOCALHOST", "[::1]:" + port, "127.0.0.2:" + port, "gw-7.lan:" + port, "GW-7.LAN"} {
		if code, _ := getHost(t, addr, host, "/status"); code != http.StatusOK {
			t.Errorf("Host %s /status = %d; want 200", host, code)
		}
	}
}

// TestBrokerURLIsRedacted: /status shows the broker's host, never its
// password or query.
func TestBrokerURLIsRedacted(t *testing.T) {
	addr := serve(t, nil)
	code, body := getHost(t, addr, addr, "/status")
	if code != http.StatusOK {
		t.Fatalf("/status = %d", code)
	}
	if strings.Contains(body, "hunter2secret") || strings.Contains(body, "tok-abc123") {
		t.Fatalf("/status shows a broker credential:\n%s", body)
	}
	if !strings.Contains(body, "broker.example:8883") {
		t.Fatalf("/status lost the broker's host:\n%s", body)
	}
	for in, want := range map[string]string{
		"tcp://127.0.0.1:1883":         "tcp://127.0.0.1:1883",
		"tcp://u:p@h:1883":             "tcp://u:xxxxx@h:1883",
		"ssl://h:8883?x-amz-token=abc": "ssl://h:8883?xxxxx",
		"":                             "",
		"%zz://secret":                 "(unparsable URL)",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q; want %q", in, got, want)
		}
	}
}
