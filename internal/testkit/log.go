package testkit

import (
	"log/slog"
	"testing"
)

// Logger returns a text logger that writes records at level and above to
// t.Output(): they appear with the test's other output (on failure, or
// always with -v), indented under its name, without t.Log's file:line
// prefix.
func Logger(t testing.TB, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: level}))
}
