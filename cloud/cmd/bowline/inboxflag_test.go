package main

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/bowline-iot/bowline/internal/cli"
)

// TestWorkerInboxFlag: --inbox takes bowline or seed; anything else is a
// usage error naming the value.
func TestWorkerInboxFlag(t *testing.T) {
	err := workerCmd(t.Context(), []string{"--inbox", "sqlite"}, io.Discard)
	if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), `"sqlite"`) {
		t.Errorf("worker --inbox sqlite = %v; want a usage error naming \"sqlite\"", err)
	}
}
