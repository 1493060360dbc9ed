package main

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/bowline-iot/bowline/internal/cli"
	"github.com/bowline-iot/bowline/internal/resources"
)

// TestUsage: bad flags, stray arguments and a bad BOWLINE_STACK are usage
// errors naming what is wrong, found before any AWS call.
func TestUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--inbox", "seed"}, "", "-inbox"},
		{[]string{"--wait", "soon"}, "", "-wait"},
		{[]string{"extra"}, "", `"extra"`},
		{nil, "Bad Stack!", resources.StackEnv},
	} {
		t.Run(strings.Join(c.args, " ")+c.env, func(t *testing.T) {
			if c.env != "" {
				t.Setenv(resources.StackEnv, c.env)
			}
			err := run(t.Context(), c.args, io.Discard)
			if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("seedworker %q (%s=%q) = %v; want a usage error naming %s", c.args, resources.StackEnv, c.env, err, c.want)
			}
		})
	}
}
