package app_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
)

// theConsole stands in for App.Console's: these tests are about where it
// is served, not what it serves.
var theConsole = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "the console") })

// openApp opens an App for one API (an API registers its metrics on the
// App's registry: one per App).
func openApp(t *testing.T) *app.App {
	t.Helper()
	a, err := app.Open(app.Config{AWS: lstest.AWSConfig(t), Names: lstest.Names(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

// get serves GET path on h and returns the status and body.
func get(h http.Handler, path string) (int, string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

// TestConsoleCanBeOffTheAPIListener: APIWithConsole mounts the console
// under /console/ on the API's listener by default, the refusal (403)
// when there is none, and nothing when api.Settings.ConsoleAddr is "off"
// or an address of its own: the API's listener then answers 404.
func TestConsoleCanBeOffTheAPIListener(t *testing.T) {
	for _, addr := range []string{api.ConsoleOff, "127.0.0.1:0"} {
		settings := apiSettings()
		settings.ConsoleAddr = addr
		srv, err := openApp(t).APIWithConsole(settings, theConsole, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/console/login", "/console/", "/console"} {
			if code, body := get(srv, path); code != http.StatusNotFound || strings.Contains(body, "the console") {
				t.Errorf("ConsoleAddr %q: %s on the API's listener = %d %q; want 404", addr, path, code, body)
			}
		}
	}
	srv, err := openApp(t).APIWithConsole(apiSettings(), theConsole, nil)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := get(srv, "/console/login"); code != http.StatusOK || body != "the console" {
		t.Errorf("default: /console/login = %d %q; want the console", code, body)
	}
	if code, _ := get(srv, "/console"); code != http.StatusMovedPermanently {
		t.Errorf("default: /console = %d; want a redirect to /console/", code)
	}
	srv, err = openApp(t).API(apiSettings(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := get(srv, "/console/"); code != http.StatusForbidden || !strings.Contains(body, api.OpsTokenEnv) {
		t.Errorf("no console: /console/ = %d %q; want 403 naming %s", code, body, api.OpsTokenEnv)
	}
}

// TestServeConsoleOnItsOwnListener: with ConsoleAddr an address, the
// console answers on a listener of its own (the API's ServeHandler, as
// bowline api --console-addr serves it) and not on the API's.
func TestServeConsoleOnItsOwnListener(t *testing.T) {
	a := openApp(t)
	settings := apiSettings()
	settings.ConsoleAddr = "127.0.0.1:0"
	srv, err := a.APIWithConsole(settings, theConsole, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrc, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- srv.ServeHandler(ctx, "console", settings.ConsoleAddr, theConsole, func(a net.Addr) { addrc <- a.String() })
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeHandler: %v", err)
		}
	}()
	resp, err := http.Get("http://" + <-addrc + "/console/login")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "the console" {
		t.Fatalf("the console's own listener: %d %q; want the console", resp.StatusCode, body)
	}
	if code, _ := get(srv, "/console/login"); code != http.StatusNotFound {
		t.Fatalf("the API's listener: /console/login = %d; want 404", code)
	}
}
