// Package lstest shares one local stack among all tests of a test binary:
// TestMain calls Main, which starts the emulators once, points the standard
// AWS_ENDPOINT_URL_* variables at them, provisions every resource under a
// unique BOWLINE_STACK prefix, runs the tests and stops everything.
//
// When the stack cannot start, tests that call Stack skip with the reason,
// except under CI=true, where they fail: CI never passes by skipping.
package lstest

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/resources"
	"github.com/bowline-iot/bowline/internal/testkit"
)

var (
	shared   *localstack.Scratch
	startErr error
	started  []localstack.Service
)

// Main starts services (all when none are named), provisions the
// resources they serve, runs m and exits. Call it from TestMain.
func Main(m *testing.M, services ...localstack.Service) {
	os.Exit(run(m, services))
}

func run(m *testing.M, services []localstack.Service) int {
	if len(services) == 0 {
		services = localstack.AllServices
	}
	started = services
	flag.Parse()
	level := slog.LevelWarn
	if testing.Verbose() {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	shared, startErr = localstack.StartScratch(ctx, localstack.Config{Services: services, Logger: log}, "t")
	cancel()
	if startErr != nil {
		fmt.Fprintf(os.Stderr, "lstest: local stack unavailable: %v\n", startErr)
	}
	code := m.Run()
	if shared != nil {
		if err := shared.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "lstest: stop local stack: %v\n", err)
		}
	}
	return code
}

// Stack returns the shared stack. When it is unavailable the test is
// skipped, or fails under CI=true.
func Stack(t testing.TB) *localstack.Stack {
	t.Helper()
	if shared == nil && startErr == nil {
		t.Fatal("lstest: Stack called without lstest.Main in TestMain")
	}
	if startErr != nil {
		testkit.Need(t, fmt.Errorf("local stack unavailable (run ./scripts/setup): %w", startErr))
	}
	return shared.Stack
}

// AWSConfig returns the SDK configuration for the shared stack.
func AWSConfig(t testing.TB) aws.Config {
	t.Helper()
	Stack(t)
	return shared.AWS
}

// Names returns the resource names provisioned for this test binary.
func Names(t testing.TB) resources.Names {
	t.Helper()
	Stack(t)
	return shared.Names
}

// Services returns the services Main was asked to start.
func Services() []localstack.Service { return started }
