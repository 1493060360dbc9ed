package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/cli"
)

// verifySummary is the one-line description of `bowline verify-chain`.
const verifySummary = "verify tenants' hash chains"

// errChainBroken is returned (exit status 1) when any verified chain is
// broken.
var errChainBroken = fmt.Errorf("chain broken")

// verifyResult is the --json output of `bowline verify-chain`.
type verifyResult struct {
	Tenants []engine.ChainReport `json:"tenants"`
	// Intact is true when every listed chain is intact.
	Intact bool `json:"chain_intact"`
}

func runVerifyChain(ctx context.Context, args []string) error {
	return verifyChainCmd(ctx, args, os.Stdout)
}

// verifyChainCmd runs `bowline verify-chain --tenant T | --all [--json]`: it
// prints one result per tenant and fails with errChainBroken if any chain is
// broken.
func verifyChainCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := cli.NewFlags("bowline verify-chain", verifySummary,
		"bowline verify-chain (--tenant T [--tenant U ...] | --all) [--json]")
	var tenants multi
	fs.Var(&tenants, "tenant", "tenant to verify (repeatable)")
	all := fs.Bool("all", false, "verify every tenant with a chain head")
	asJSON := fs.Bool("json", false, "print the results as JSON")
	pageSize := fs.Int("page-size", 500, "events read per query page")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	case *all == (len(tenants) > 0):
		return fmt.Errorf("%w: give --tenant or --all (exactly one)", cli.ErrUsage)
	case *pageSize < 1 || *pageSize > 10000:
		return fmt.Errorf("%w: --page-size %d: want 1 to 10000", cli.ErrUsage, *pageSize)
	}
	stack, err := openApp(ctx, nil, nil)
	if err != nil {
		return err
	}
	defer stack.Close()
	v := engine.NewVerifier(stack.DynamoDB, stack.Names.EventsTable(), int32(*pageSize))
	if *all {
		if tenants, err = v.Tenants(ctx); err != nil {
			return err
		}
	}
	res := verifyResult{Tenants: []engine.ChainReport{}, Intact: true}
	broken := 0
	for _, t := range tenants {
		rep, err := v.VerifyChain(ctx, t)
		if err != nil {
			return err
		}
		res.Tenants = append(res.Tenants, rep)
		if !rep.Intact {
			res.Intact = false
			broken++
		}
		if !*asJSON {
			if rep.Intact {
				fmt.Fprintf(stdout, "%s: intact, %d events, head seq %d\n", t, rep.Events, rep.HeadSeq)
			} else {
				fmt.Fprintf(stdout, "%s: BROKEN at seq %d: %s: %s (%d events checked)\n", t, rep.FirstBadSeq, rep.Reason, rep.Detail, rep.Events)
			}
		}
	}
	if *asJSON {
		if err := writeJSON(stdout, res); err != nil {
			return err
		}
	}
	if broken > 0 {
		return fmt.Errorf("%w: %d of %d tenants", errChainBroken, broken, len(tenants))
	}
	return nil
}

// multi is a repeatable string flag.
type multi []string

func (m *multi) String() string { return quote(*m) }

func (m *multi) Set(v string) error {
	if !engine.ValidTenant(v) {
		return fmt.Errorf("tenant %q: want letters, digits, '_', '.', ':' or '-'", v)
	}
	*m = append(*m, v)
	return nil
}
