package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bowline-iot/bowline/cloud/adapters"
	"github.com/bowline-iot/bowline/cloud/fakes"
)

// TestDevFail: `bowline dev fail` breaks and heals a fake provider over its
// control endpoint, found through the provider's URL variable.
func TestDevFail(t *testing.T) {
	f, err := fakes.New(fakes.Notify)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	t.Setenv(adapters.NotifyURLEnv, srv.URL)
	call := func() int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/notifications", strings.NewReader(`{}`))
		req.Header.Set("Idempotency-Key", "k")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	var out bytes.Buffer
	if err := devFailCmd(context.Background(), []string{"notify", "400"}, &out); err != nil {
		t.Fatalf("dev fail notify 400: %v", err)
	}
	if a, b := call(), call(); a != 400 || b != 400 {
		t.Errorf("calls after `dev fail notify 400` answered %d, %d; want 400 every time", a, b)
	}
	if err := devFailCmd(context.Background(), []string{"notify", "ok"}, &out); err != nil {
		t.Fatalf("dev fail notify ok: %v", err)
	}
	if got := call(); got >= 300 {
		t.Errorf("call after `dev fail notify ok` answered %d; want success", got)
	}
	if err := devFailCmd(context.Background(), []string{"notify", "503", "--times", "1"}, &out); err != nil {
		t.Fatalf("dev fail notify 503 --times 1: %v", err)
	}
	if a, b := call(), call(); a != 503 || b >= 300 {
		t.Errorf("calls after `dev fail notify 503 --times 1` answered %d, %d; want 503 then success", a, b)
	}
	if !strings.Contains(out.String(), "notify fake healed") {
		t.Errorf("dev fail printed %q; want it to say what it did", out.String())
	}
}
