package api_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/cloud/app"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/resources"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// childEnv makes the test binary run childMain: the API as its own OS
// process, configured only from the environment like `bowline api`.
const childEnv = "BOWLINE_API_TEST_CHILD"

func childMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "child:", err); return 1 }
	settings, err := api.SettingsFromEnv()
	if err != nil {
		return fail(err)
	}
	names, err := resources.FromEnv()
	if err != nil {
		return fail(err)
	}
	cfg, err := awsenv.Load(ctx)
	if err != nil {
		return fail(err)
	}
	a, err := app.Open(app.Config{AWS: cfg, Names: names, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		return fail(err)
	}
	defer a.Close()
	srv, err := a.API(settings, nil)
	if err != nil {
		return fail(err)
	}
	if err := srv.Serve(ctx, "127.0.0.1:0", func(a net.Addr) { fmt.Printf("listening %s\n", a) }); err != nil {
		return fail(err)
	}
	return 0
}

// TestGracefulShutdownFinishesRequestsInFlight runs the API as a process,
// starts an order whose body is still arriving, sends SIGTERM, and then
// finishes the body: the order must be answered 201 (and committed) and the
// process must exit 0.
func TestGracefulShutdownFinishesRequestsInFlight(t *testing.T) {
	lstest.Stack(t)
	tenant, token := "tg-"+randHex(4), "tok-"+randHex(8)
	cmd := testkit.TestBinary("-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", api.TokensEnv+"="+token+"="+tenant, api.WebhookSecretEnv+"=whsec-"+randHex(8))
	cmd.Stderr = t.Output()
	child := testkit.StartChildLines(t, "api", cmd)
	var first string
	select {
	case l, ok := <-child.Lines():
		if !ok {
			t.Fatalf("child printed no address: %v", child.Err())
		}
		first = l
	case <-testkit.Context(t).Done():
		t.Fatal("child printed no address before the test's deadline")
	}
	addr, ok := strings.CutPrefix(first, "listening ")
	if !ok {
		t.Fatalf("child said %q; want listening <addr>", first)
	}
	base := "http://" + addr

	if resp, err := http.Get(base + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /healthz = %v %v; want 200", resp, err)
	}

	// The order's body arrives in two halves. With Expect: 100-continue the
	// client sends no body until the handler asks for it, so when the first
	// half is taken the request is certainly inside the handler. A fresh
	// connection, because an idle keep-alive one is fair game for Shutdown.
	client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute, DisableKeepAlives: true}}
	pr, pw := io.Pipe()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/orders", pr)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Expect", "100-continue")
	type result struct {
		status int
		err    error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := client.Do(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		resp.Body.Close()
		done <- result{status: resp.StatusCode}
	}()
	half := len(orderBody) / 2
	if _, err := pw.Write([]byte(orderBody[:half])); err != nil {
		t.Fatal(err)
	}
	if err := child.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Shutdown has begun once the listener refuses connections.
	guard := time.Now().Add(60 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(guard) {
			t.Fatal("the api kept accepting connections after SIGTERM")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := pw.Write([]byte(orderBody[half:])); err != nil {
		t.Fatal(err)
	}
	pw.Close()

	hang := time.After(60 * time.Second)
	select {
	case r := <-done:
		if r.err != nil || r.status != http.StatusCreated {
			t.Errorf("order in flight during shutdown = %d %v; want 201", r.status, r.err)
		}
	case <-hang:
		t.Fatal("order in flight never answered")
	}
	select {
	case <-child.Exited():
		err := child.Err()
		var ee *exec.ExitError
		if errors.As(err, &ee) || err != nil {
			t.Errorf("api process exit = %v; want status 0", err)
		}
	case <-hang:
		t.Fatal("api process did not exit after SIGTERM")
	}
	f := &fixture{t: t, db: newFixture(t).db}
	if got := types_(f.events(tenant)); len(got) != 1 {
		t.Errorf("events of %s = %v; want the one com.order_created", tenant, got)
	}
}
