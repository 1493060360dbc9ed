package main

import (
	"log/slog"
	"os"
	"testing"
)

// asAgentEnv makes the test binary behave as bowline-edge, so the crash
// tests can run and SIGKILL a real agent process without a separate build.
const asAgentEnv = "BOWLINE_EDGE_TEST_AS_AGENT"

func TestMain(m *testing.M) {
	if os.Getenv(asAgentEnv) == "1" {
		os.Exit(app().Run(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
