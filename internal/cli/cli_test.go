package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

func testApp(out, errOut *bytes.Buffer) App {
	return App{
		Name: "prog", Summary: "a test program", Stdout: out, Stderr: errOut,
		Commands: []Command{
			{Name: "ok", Summary: "succeeds", Run: func(context.Context, []string) error { return nil }},
			{Name: "fail", Summary: "fails", Run: func(context.Context, []string) error { return errors.New("table x: boom") }},
			{Name: "flags", Summary: "parses flags", Run: func(_ context.Context, args []string) error {
				fs := NewFlags("prog flags", "parses flags", "prog flags [--n N]")
				fs.Int("n", 1, "a number")
				return Parse(fs, args)
			}},
		},
	}
}

func TestRunExitCodes(t *testing.T) {
	for _, c := range []struct {
		args       []string
		code       int
		wantStderr string
	}{
		{nil, 2, ""},
		{[]string{"--help"}, 0, ""},
		{[]string{"ok"}, 0, ""},
		{[]string{"fail"}, 1, "prog fail: table x: boom"},
		{[]string{"nope"}, 2, `unknown command "nope"`},
		{[]string{"flags", "--n", "x"}, 2, "invalid value"},
		{[]string{"flags", "--help"}, 0, ""},
	} {
		var out, errOut bytes.Buffer
		if got := testApp(&out, &errOut).Run(c.args); got != c.code {
			t.Errorf("Run(%q) = %d; want %d (stderr %q)", c.args, got, c.code, errOut.String())
		}
		if !strings.Contains(errOut.String(), c.wantStderr) {
			t.Errorf("Run(%q) stderr = %q; want it to contain %q", c.args, errOut.String(), c.wantStderr)
		}
	}
}

func TestUsageListsCommands(t *testing.T) {
	var out, errOut bytes.Buffer
	testApp(&out, &errOut).Run([]string{"--help"})
	for _, name := range []string{"ok", "fail", "flags"} {
		if !strings.Contains(out.String(), name) {
			t.Errorf("usage lacks command %q:\n%s", name, out.String())
		}
	}
}

// TestCommandName: a command's Run finds its own name in its context, so
// code it calls can say which command it runs for.
func TestCommandName(t *testing.T) {
	var got string
	a := App{Name: "prog", Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, Commands: []Command{
		{Name: "relay", Run: func(ctx context.Context, _ []string) error { got = CommandName(ctx); return nil }},
	}}
	if code := a.Run([]string{"relay"}); code != 0 || got != "relay" {
		t.Errorf("Run(relay) = %d with CommandName %q; want 0 and %q", code, got, "relay")
	}
	if n := CommandName(context.Background()); n != "" {
		t.Errorf("CommandName outside a command = %q; want empty", n)
	}
}
