// Package cli is the small subcommand runner shared by the bowline and
// bowline-edge mains: a table of commands, --help for each, signal-aware
// contexts and exit codes (0 ok, 1 failure, 2 usage).
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// ErrUsage marks an error caused by how the command was called; it exits 2.
var ErrUsage = errors.New("usage")

// Command is one subcommand.
type Command struct {
	Name    string
	Summary string
	// Run receives the arguments after the subcommand name. It should build
	// its own flag.FlagSet with NewFlags so --help works the same everywhere.
	Run func(ctx context.Context, args []string) error
}

// App is a program made of subcommands.
type App struct {
	Name     string
	Summary  string
	Commands []Command
	Stdout   io.Writer
	Stderr   io.Writer
}

// Main runs the app with os.Args and exits with its status.
func (a App) Main() {
	os.Exit(a.Run(os.Args[1:]))
}

// Run dispatches args[0] and returns the exit status.
func (a App) Run(args []string) int {
	if a.Stdout == nil {
		a.Stdout = os.Stdout
	}
	if a.Stderr == nil {
		a.Stderr = os.Stderr
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		a.usage(a.Stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	var cmd *Command
	for i := range a.Commands {
		if a.Commands[i].Name == args[0] {
			cmd = &a.Commands[i]
		}
	}
	if cmd == nil {
		fmt.Fprintf(a.Stderr, "%s: unknown command %q\n\n", a.Name, args[0])
		a.usage(a.Stderr)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := cmd.Run(context.WithValue(ctx, commandKey{}, cmd.Name), args[1:])
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, ErrUsage):
		fmt.Fprintf(a.Stderr, "%s %s: %v\n", a.Name, cmd.Name, err)
		return 2
	default:
		fmt.Fprintf(a.Stderr, "%s %s: %v\n", a.Name, cmd.Name, err)
		return 1
	}
}

// commandKey carries the running command's name in its context.
type commandKey struct{}

// CommandName returns the name of the subcommand App.Run is running under
// ctx ("" outside one).
func CommandName(ctx context.Context) string {
	name, _ := ctx.Value(commandKey{}).(string)
	return name
}

func (a App) usage(w io.Writer) {
	fmt.Fprintf(w, "%s: %s\n\nUsage: %s <command> [flags]\n\nCommands:\n", a.Name, a.Summary, a.Name)
	cmds := append([]Command(nil), a.Commands...)
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-14s %s\n", c.Name, c.Summary)
	}
	fmt.Fprintf(w, "\nRun '%s <command> --help' for a command's flags.\n", a.Name)
}

// NewFlags returns a FlagSet for a subcommand whose --help prints the
// summary, the usage line and every flag with its default.
func NewFlags(prog, summary, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(prog, flag.ContinueOnError)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "%s: %s\n\nUsage: %s\n", prog, summary, usage)
		var has bool
		fs.VisitAll(func(*flag.Flag) { has = true })
		if has {
			fmt.Fprintln(w, "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// Parse parses args with fs and turns a bad flag into an ErrUsage error;
// --help yields flag.ErrHelp, which exits 0.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	return nil
}

// EnvDefault returns $name, or def when it is unset or empty.
func EnvDefault(name, def string) string {
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return v
	}
	return def
}
