package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/cli"
)

// catalogSummary is the one-line description of `bowline catalog`.
const catalogSummary = "print the event catalog, or check the contract"

// errContract is returned (exit status 1) when `bowline catalog --check`
// finds violations.
var errContract = errors.New("catalog contract violated")

// catalogResult is the --json output of `bowline catalog`.
type catalogResult struct {
	Entries    []engine.Entry `json:"entries,omitempty"`
	Violations []string       `json:"violations"`
	OK         bool           `json:"ok"`
}

func runCatalog(ctx context.Context, args []string) error { return catalogCmd(ctx, args, os.Stdout) }

// catalogCmd runs `bowline catalog [--check] [--json | --markdown]` on
// Bowline's catalog.
func catalogCmd(ctx context.Context, args []string, stdout io.Writer) error {
	return catalogOf(ctx, catalog.Bowline(), args, stdout)
}

// catalogOf is catalogCmd for any catalog c.
func catalogOf(_ context.Context, c engine.Catalog, args []string, stdout io.Writer) error {
	fs := cli.NewFlags("bowline catalog", catalogSummary, "bowline catalog [--check] [--json | --markdown]")
	check := fs.Bool("check", false, "check the contract instead of printing the catalog; exit 1 on violations")
	asJSON := fs.Bool("json", false, "print JSON")
	asMarkdown := fs.Bool("markdown", false, "print the event types (payload type, fields, producers) and the subscriptions as the Markdown tables of docs/contract.md, \"Event catalog\"")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	case *asMarkdown && (*check || *asJSON):
		return fmt.Errorf("%w: --markdown prints the catalog; it cannot be combined with --check or --json", cli.ErrUsage)
	case *asMarkdown:
		return catalog.WriteMarkdown(stdout, c)
	}
	res := catalogResult{Violations: []string{}, OK: true}
	if *check {
		err := c.Check()
		var joined interface{ Unwrap() []error }
		if errors.As(err, &joined) {
			for _, e := range joined.Unwrap() {
				res.Violations = append(res.Violations, e.Error())
			}
		} else if err != nil {
			res.Violations = append(res.Violations, err.Error())
		}
		res.OK = len(res.Violations) == 0
	} else {
		res.Entries = c.Entries()
	}
	switch {
	case *asJSON:
		if err := writeJSON(stdout, res); err != nil {
			return err
		}
	case *check:
		for _, v := range res.Violations {
			fmt.Fprintln(stdout, v)
		}
		if res.OK {
			fmt.Fprintf(stdout, "catalog ok: %d types, %d producers, %d subscriptions\n", len(c.Types), len(c.Producers), len(c.Subscriptions))
		}
	default:
		if err := c.WriteText(stdout); err != nil {
			return err
		}
	}
	if !res.OK {
		return fmt.Errorf("%w: %d violations", errContract, len(res.Violations))
	}
	return nil
}
