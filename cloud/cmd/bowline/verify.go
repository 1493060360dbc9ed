package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/anchor"
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
		"bowline verify-chain (--tenant T [--tenant U ...] | --all) [--json]\n\n"+
			"Recomputes every hash of each tenant's chain, compares the head row, and checks that\n"+
			"the chain still passes through every anchor `bowline anchor` recorded for the tenant:\n"+
			"a row rewritten with every later hash and the head recomputed is reported as\n"+
			"anchor_mismatch at the first anchored seq it changed. --all finds tenants through the\n"+
			"anchors table's registry and every head or event row, so a deleted head hides none.\n"+
			"Exit status 1 when any chain is broken; 2 when a --tenant has no chain head, event or\n"+
			"anchor (an unknown tenant, named with the known ones). docs/chain.md has the rules.")
	var tenants multi
	fs.Var(&tenants, "tenant", "tenant to verify (repeatable)")
	all := fs.Bool("all", false, "verify every tenant with anchors, a head or an event row")
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
	verifier := engine.NewVerifier(stack.DynamoDB, stack.Names.EventsTable(), int32(*pageSize))
	ledger, err := anchor.New(anchor.Config{
		Client: stack.DynamoDB, Table: stack.Names.AnchorsTable(), Chains: verifier,
	})
	if err != nil {
		return err
	}
	if *all {
		if tenants, err = ledger.Tenants(ctx); err != nil {
			return err
		}
	}
	res := verifyResult{Tenants: []engine.ChainReport{}, Intact: true}
	broken := 0
	var unknown []string
	for _, t := range tenants {
		rep, err := ledger.Verify(ctx, t)
		if err != nil {
			return err
		}
		if !*all && emptyChain(rep) {
			unknown = append(unknown, t)
			continue
		}
		res.Tenants = append(res.Tenants, rep)
		if !rep.Intact {
			res.Intact = false
			broken++
		}
		if !*asJSON {
			if rep.Intact {
				fmt.Fprintf(stdout, "%s: intact, %d events, head seq %d, %d anchors (newest seq %d)\n", t, rep.Events, rep.HeadSeq, rep.Anchors, rep.AnchoredSeq)
			} else {
				fmt.Fprintf(stdout, "%s: BROKEN at seq %d: %s: %s (%d events checked)\n", t, rep.FirstBadSeq, rep.Reason, rep.Detail, rep.Events)
			}
		}
	}
	if len(unknown) > 0 {
		return unknownTenantError(ctx, verifier, stack.Names.Stack, unknown)
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
