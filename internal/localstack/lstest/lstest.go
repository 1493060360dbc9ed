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
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/provision"
	"github.com/bowline-iot/bowline/internal/resources"
)

var (
	shared   *localstack.Stack
	startErr error
	names    resources.Names
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
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	flag.Parse()
	level := slog.LevelWarn
	if testing.Verbose() {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	shared, startErr = localstack.Start(ctx, localstack.Config{Services: services, Logger: log})
	if startErr == nil {
		startErr = setup(ctx, services)
	}
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

func setup(ctx context.Context, services []localstack.Service) error {
	if err := shared.Setenv(); err != nil {
		return err
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	var err error
	names, err = resources.New("t" + hex.EncodeToString(b[:]))
	if err != nil {
		return err
	}
	if err := os.Setenv(resources.StackEnv, names.Stack); err != nil {
		return err
	}
	var parts []provision.Part
	if slices.Contains(services, localstack.DynamoDB) {
		parts = append(parts, provision.Tables)
	}
	if slices.Contains(services, localstack.SQS) {
		parts = append(parts, provision.Queues)
	}
	if slices.Contains(services, localstack.Kinesis) {
		parts = append(parts, provision.Streams)
	}
	if len(parts) == 0 {
		return nil
	}
	cfg, err := awsenv.Load(ctx)
	if err != nil {
		return err
	}
	if _, err := provision.Provision(ctx, cfg, names, provision.Options{Parts: parts}); err != nil {
		return fmt.Errorf("provision %s: %w", names.Stack, err)
	}
	return nil
}

// Stack returns the shared stack. When it is unavailable the test is
// skipped, or fails under CI=true.
func Stack(t testing.TB) *localstack.Stack {
	t.Helper()
	if shared == nil && startErr == nil {
		t.Fatal("lstest: Stack called without lstest.Main in TestMain")
	}
	if startErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("local stack unavailable (CI=true, so this fails instead of skipping): %v", startErr)
		}
		t.Skipf("local stack unavailable (run ./scripts/setup): %v", startErr)
	}
	return shared
}

// AWSConfig returns the SDK configuration for the shared stack.
func AWSConfig(t testing.TB) aws.Config {
	t.Helper()
	Stack(t)
	cfg, err := awsenv.Load(context.Background())
	if err != nil {
		t.Fatalf("load aws config: %v", err)
	}
	return cfg
}

// Names returns the resource names provisioned for this test binary.
func Names(t testing.TB) resources.Names {
	t.Helper()
	Stack(t)
	return names
}

// Services returns the services Main was asked to start.
func Services() []localstack.Service { return started }
