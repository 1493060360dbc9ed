// Package lstest shares one local stack among all tests of a test binary.
// TestMain calls Main with the services the package needs; the first test
// that asks for the stack (Stack, AWSConfig or Names) starts them, points
// the standard AWS_ENDPOINT_URL_* variables at them, provisions every
// resource under a unique BOWLINE_STACK prefix, and Main stops them after
// the last test. A run whose selected tests never ask (pure unit tests in
// a package that also has emulator tests) starts nothing: it needs no
// Java or Node and pays no start-up.
//
// When the stack cannot start, tests that ask for it skip with the
// reason, except under CI=true, where they fail: CI never passes by
// skipping. The stack is started at most once per binary, so every later
// test sees the same error without retrying.
//
// # Caveats
//
// The environment variables are set when the stack starts, so a test that
// reads them (awsenv.Load, resources.FromEnv, or os.Environ() for a child
// process) calls Stack first. A test must not t.Setenv one of them before
// its first call: the restore at its end would undo the stack's value for
// later tests.
package lstest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/resources"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// startTimeout bounds the start and provisioning of the stack.
const startTimeout = 3 * time.Minute

// The binary's stack: its services (set by Main) and, once the first test
// asked, the started stack or why it could not start.
var (
	mu       sync.Mutex
	inMain   bool
	started  []localstack.Service
	tried    bool
	shared   *localstack.Scratch
	startErr error
)

// Main records services (all when none are named) as the ones this test
// binary uses, runs m, stops the stack if a test started it, and exits.
// Call it from TestMain.
func Main(m *testing.M, services ...localstack.Service) {
	os.Exit(run(m, services))
}

func run(m *testing.M, services []localstack.Service) int {
	if len(services) == 0 {
		services = localstack.AllServices
	}
	mu.Lock()
	inMain, started = true, services
	mu.Unlock()
	code := m.Run()
	mu.Lock()
	defer mu.Unlock()
	if shared != nil {
		if err := shared.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "lstest: stop local stack: %v\n", err)
		}
		shared = nil
	}
	return code
}

// start starts the stack on the first call and returns it, or why it
// could not start, on every call. Callers wait while it starts.
func start() (*localstack.Scratch, error) {
	mu.Lock()
	defer mu.Unlock()
	if tried {
		return shared, startErr
	}
	tried = true
	level := slog.LevelWarn
	if testing.Verbose() {
		level = slog.LevelInfo
	}
	// The stack outlives the test that starts it: it logs to the binary's
	// stderr, and its start is bounded by its own context.
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	shared, startErr = localstack.StartScratch(ctx, localstack.Config{Services: started, Logger: log}, "t")
	if startErr != nil {
		fmt.Fprintf(os.Stderr, "lstest: local stack unavailable: %v\n", startErr)
	}
	return shared, startErr
}

// scratch returns the started stack, starting it on first use. When it
// is unavailable the test is skipped, or fails under CI=true.
func scratch(t testing.TB) *localstack.Scratch {
	t.Helper()
	mu.Lock()
	ok := inMain
	mu.Unlock()
	if !ok {
		t.Fatal("lstest: the stack was asked for without lstest.Main in TestMain")
	}
	sc, err := start()
	if err != nil {
		testkit.Need(t, fmt.Errorf("local stack unavailable (run ./scripts/setup): %w", err))
	}
	return sc
}

// Stack returns the shared stack, starting it on first use. When it is
// unavailable the test is skipped, or fails under CI=true.
func Stack(t testing.TB) *localstack.Stack {
	t.Helper()
	return scratch(t).Stack
}

// AWSConfig returns the SDK configuration for the shared stack, starting
// it on first use.
func AWSConfig(t testing.TB) aws.Config {
	t.Helper()
	return scratch(t).AWS
}

// Names returns the resource names provisioned for this test binary,
// starting the stack on first use.
func Names(t testing.TB) resources.Names {
	t.Helper()
	return scratch(t).Names
}

// Services returns the services Main was asked to start.
func Services() []localstack.Service {
	mu.Lock()
	defer mu.Unlock()
	return started
}

// Started reports whether a test of this binary has started the stack
// (or tried to).
func Started() bool {
	mu.Lock()
	defer mu.Unlock()
	return tried
}
