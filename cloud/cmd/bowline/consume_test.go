package main

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/bowline-iot/bowline/internal/cli"
)

// `bowline consume --help` documents every flag; bad flags
// are usage errors, refused before any AWS call.
func TestConsumeFlags(t *testing.T) {
	var out bytes.Buffer
	if err := consumeCmd(t.Context(), []string{"--help"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("consume --help = %v; want flag.ErrHelp", err)
	}
	for _, args := range [][]string{
		{"--poll", "100ms"},
		{"--shard-refresh", "0s"},
		{"--invoke-timeout", "-1s"},
		{"extra"},
	} {
		if err := consumeCmd(t.Context(), args, &out); !errors.Is(err, cli.ErrUsage) {
			t.Errorf("consume %s = %v; want a usage error", strings.Join(args, " "), err)
		}
	}
}
