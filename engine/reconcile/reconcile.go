package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
)

// Chains finds tenants (a bounded stretch of the heads index scan) and
// verifies their chains from a checkpoint (*engine.Verifier).
type Chains interface {
	HeadTenantsFrom(ctx context.Context, cursor string, maxItems int) ([]string, string, error)
	VerifyFrom(ctx context.Context, tenant string, from engine.ChainPoint, limit int) (engine.ChainReport, error)
}

// DeadLetters reads letters and unmatched counters (deadletter.Store).
type DeadLetters interface {
	All(ctx context.Context) ([]deadletter.Letter, error)
	Unmatched(ctx context.Context) (map[string]int, error)
}

// QueueAPI reads queue depth.
type QueueAPI interface {
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

var (
	_ Chains      = (*engine.Verifier)(nil)
	_ DeadLetters = (*deadletter.Store)(nil)
	_ QueueAPI    = (*sqs.Client)(nil)
)

// Config configures Reconcile. All fields but Unsettled, MaxEvents and
// ScanBudget are required.
type Config struct {
	Chains Chains
	// Progress keeps each tenant's verified and settled positions and the
	// tenant registry between calls.
	Progress    Progress
	DeadLetters DeadLetters
	Queue       QueueAPI
	DLQURL      string
	// Unsettled, when set, adds each tenant's unsettled work to the report
	// (InboxCheck).
	Unsettled Settler
	// MaxEvents bounds the event rows each tenant's chain verification
	// reads per call. Default 5,000.
	MaxEvents int
	// ScanBudget bounds the items of the heads index (one per tenant) the
	// tenant discovery scan reads per call. Default 20,000.
	ScanBudget int
}

// Validate checks the config.
func (c Config) Validate() error {
	if c.Chains == nil || c.DeadLetters == nil || c.Queue == nil || c.DLQURL == "" {
		return errors.New("reconcile config: Chains, Progress, DeadLetters, Queue and DLQURL are required")
	}
	if err := c.Progress.Validate(); err != nil {
		return fmt.Errorf("reconcile config: %w", err)
	}
	if c.MaxEvents < 0 || c.ScanBudget < 0 {
		return errors.New("reconcile config: MaxEvents and ScanBudget must not be negative")
	}
	return nil
}

// Tenant is one tenant's line of the report.
type Tenant struct {
	Tenant string `json:"tenant"`
	// Events is the head's last sequence: how many events the log holds.
	Events      int  `json:"events"`
	ChainIntact bool `json:"chain_intact"`
	// VerifiedSeq: the chain is verified through this sequence.
	VerifiedSeq uint64 `json:"verified_seq"`
	// FirstBadSeq and Reason say where and why a broken chain breaks.
	FirstBadSeq uint64 `json:"first_bad_seq,omitempty"`
	Reason      string `json:"reason,omitempty"`
	DeadLetters int    `json:"dead_letters"`
	// Unsettled counts DURABLE work older than the grace period that is
	// neither completed nor dead (only with Config.Unsettled).
	Unsettled int `json:"unsettled"`
	// SettledSeq: every event through it is settled or counted in
	// Unsettled (only with Config.Unsettled).
	SettledSeq uint64 `json:"settled_seq"`
	// Expired counts work of events older than the inbox TTL found with
	// no inbox row in this call: done and expired, or never done; it
	// cannot tell, so it does not count them as unsettled.
	Expired int `json:"expired,omitempty"`
	// Behind is true when this call stopped at a bound before the head
	// (chain) or the events in flight (settlement); the next goes on.
	Behind bool `json:"behind,omitempty"`
}

// Report is the reconciliation, the body of GET /v1/ops/reconcile
// (docs/contract.md, "HTTP API").
type Report struct {
	Tenants []Tenant `json:"tenants"`
	// DeadLetters counts open (not redriven) tenant dead letters.
	DeadLetters int `json:"dead_letters"`
	PoisonPills int `json:"poison_pills"`
	DLQDepth    int `json:"dlq_depth"`
	// Unmatched counts events that matched no durable subscription.
	Unmatched       int            `json:"unmatched"`
	UnmatchedByType map[string]int `json:"unmatched_by_type,omitempty"`
	// Unsettled sums the tenants' unsettled work: lost or stuck deliveries.
	Unsettled int `json:"unsettled"`
	// Behind counts tenants this call could not bring up to date (Tenant.Behind).
	Behind int `json:"behind"`
	// TenantScanCycles counts completed passes of the tenant discovery
	// scan over the events table; until the first one ends, tenants may be
	// missing from the report.
	TenantScanCycles int `json:"tenant_scan_cycles"`
}

// OK reports whether nothing needs an operator.
func (r Report) OK() bool {
	for _, t := range r.Tenants {
		if !t.ChainIntact {
			return false
		}
	}
	return r.DeadLetters == 0 && r.PoisonPills == 0 && r.DLQDepth == 0 && r.Unmatched == 0 && r.Unsettled == 0
}

// Reconcile builds the report. Per call it reads (docs/reconcile.md,
// "Bounds"): the registry (one BatchGetItem), at most ScanBudget items of
// the discovery scan, the dead letters table (a Scan), the DLQ's depth,
// and per tenant its progress row and head, at most MaxEvents new event
// rows for the chain and what the Unsettled check reads.
func Reconcile(ctx context.Context, cfg Config) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	if cfg.MaxEvents == 0 {
		cfg.MaxEvents = 5000
	}
	if cfg.ScanBudget == 0 {
		cfg.ScanBudget = 20000
	}
	tenants, cycles, err := discover(ctx, cfg)
	if err != nil {
		return Report{}, err
	}
	letters, err := cfg.DeadLetters.All(ctx)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Tenants: []Tenant{}, TenantScanCycles: cycles}
	open := map[string]int{}
	for _, l := range letters {
		switch {
		case l.Poison:
			rep.PoisonPills++
		case l.Open():
			rep.DeadLetters++
			open[l.Tenant]++
		}
	}
	seen := map[string]bool{}
	for _, t := range tenants {
		seen[t] = true
		line, err := reconcileTenant(ctx, cfg, t)
		if err != nil {
			return Report{}, err
		}
		line.DeadLetters = open[t]
		rep.Unsettled += line.Unsettled
		if line.Behind {
			rep.Behind++
		}
		rep.Tenants = append(rep.Tenants, line)
	}
	// Dead letters of a tenant without a chain still show up.
	for t, n := range open {
		if !seen[t] {
			rep.Tenants = append(rep.Tenants, Tenant{Tenant: t, ChainIntact: true, DeadLetters: n})
		}
	}
	sort.Slice(rep.Tenants, func(i, j int) bool { return rep.Tenants[i].Tenant < rep.Tenants[j].Tenant })
	if rep.UnmatchedByType, err = cfg.DeadLetters.Unmatched(ctx); err != nil {
		return Report{}, err
	}
	for _, n := range rep.UnmatchedByType {
		rep.Unmatched += n
	}
	if rep.DLQDepth, err = depth(ctx, cfg.Queue, cfg.DLQURL); err != nil {
		return Report{}, err
	}
	return rep, nil
}

// discover returns the registered tenants plus those the next stretch of
// the discovery scan finds (registering them), and the completed passes.
func discover(ctx context.Context, cfg Config) ([]string, int, error) {
	reg, err := cfg.Progress.Registry(ctx)
	if err != nil {
		return nil, 0, err
	}
	found, next, err := cfg.Chains.HeadTenantsFrom(ctx, reg.Cursor, cfg.ScanBudget)
	if err != nil {
		return nil, 0, fmt.Errorf("discover tenants: %w", err)
	}
	known := map[string]bool{}
	for _, t := range reg.Tenants {
		known[t] = true
	}
	var added []string
	for _, t := range found {
		if !known[t] {
			known[t] = true
			added = append(added, t)
		}
	}
	if len(added) > 0 {
		if err := cfg.Progress.AddTenants(ctx, added); err != nil {
			return nil, 0, err
		}
	}
	cycles := reg.Cycles
	if ok, err := cfg.Progress.SaveScan(ctx, reg, next, next == ""); err != nil {
		return nil, 0, err
	} else if ok && next == "" {
		cycles++
	}
	all := append(reg.Tenants, added...)
	sort.Strings(all)
	return all, cycles, nil
}

// reconcileTenant verifies tenant's chain from its checkpoint, saves the
// new checkpoint and adds its settlement.
func reconcileTenant(ctx context.Context, cfg Config, t string) (Tenant, error) {
	prog, err := cfg.Progress.Load(ctx, t)
	if err != nil {
		return Tenant{}, err
	}
	cr, err := cfg.Chains.VerifyFrom(ctx, t, prog.Chain, cfg.MaxEvents)
	if err != nil {
		return Tenant{}, fmt.Errorf("verify chain of tenant %q: %w", t, err)
	}
	if cr.Intact && cr.Verified != prog.Chain {
		if _, err := cfg.Progress.SaveChain(ctx, t, prog.Chain, cr.Verified); err != nil {
			return Tenant{}, err
		}
	}
	line := Tenant{
		Tenant: t, Events: int(cr.HeadSeq), ChainIntact: cr.Intact, VerifiedSeq: cr.Verified.Seq,
		FirstBadSeq: cr.FirstBadSeq, Reason: string(cr.Reason), Behind: cr.Partial,
	}
	if cfg.Unsettled != nil {
		s, err := cfg.Unsettled.Settle(ctx, t)
		if err != nil {
			return Tenant{}, err
		}
		line.Unsettled, line.SettledSeq, line.Expired = s.Unsettled, s.SettledSeq, s.Expired
		line.Behind = line.Behind || s.Behind
	}
	return line, nil
}

func depth(ctx context.Context, q QueueAPI, url string) (int, error) {
	out, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
	}})
	if err != nil {
		return 0, fmt.Errorf("depth of queue %s: %w", url, err)
	}
	n := 0
	for _, k := range []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible} {
		v, err := strconv.Atoi(out.Attributes[string(k)])
		if err != nil {
			return 0, fmt.Errorf("depth of queue %s: attribute %s = %q", url, k, out.Attributes[string(k)])
		}
		n += v
	}
	return n, nil
}
