package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/cli"
)

// headLister lists the tenants that have a chain head
// (engine.Verifier.HeadTenants).
type headLister interface {
	HeadTenants(ctx context.Context) ([]string, error)
}

// unknownTenantError is the usage error (exit 2) for tenants that have
// nothing in the stack: it names them and lists the tenants there are, so a
// typo is not read as "intact" or "no dead letters".
func unknownTenantError(ctx context.Context, heads headLister, stack string, unknown []string) error {
	known, err := heads.HeadTenants(ctx)
	if err != nil {
		return fmt.Errorf("%w: unknown tenant %s (listing the known ones failed: %v)", cli.ErrUsage, quote(unknown), err)
	}
	noun := "tenant"
	if len(unknown) > 1 {
		noun = "tenants"
	}
	return fmt.Errorf("%w: unknown %s %s: no chain head, event or anchor in stack %q; known tenants: %s",
		cli.ErrUsage, noun, quote(unknown), stack, listSome(known, 20))
}

// listSome joins up to n of names, saying how many more there are.
func listSome(names []string, n int) string {
	if len(names) == 0 {
		return "none"
	}
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// emptyChain reports whether rep is of a tenant with no event, head or
// anchor: one that does not exist.
func emptyChain(rep engine.ChainReport) bool {
	return rep.Intact && rep.Events == 0 && rep.HeadSeq == 0 && rep.Anchors == 0
}
