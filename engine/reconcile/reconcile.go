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

// Chains lists tenants and verifies their chains (engine.Verifier).
type Chains interface {
	Tenants(ctx context.Context) ([]string, error)
	VerifyChain(ctx context.Context, tenant string) (engine.ChainReport, error)
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

// Unsettled counts a tenant's DURABLE work that reached no final inbox
// state (InboxCheck).
type Unsettled interface {
	Unsettled(ctx context.Context, tenant string) (int, error)
}

var _ Unsettled = InboxCheck{}

// Config configures Reconcile. All fields but Unsettled are required.
type Config struct {
	Chains      Chains
	DeadLetters DeadLetters
	Queue       QueueAPI
	DLQURL      string
	// Unsettled, when set, adds each tenant's unsettled work to the report.
	Unsettled Unsettled
}

// Validate checks the config.
func (c Config) Validate() error {
	if c.Chains == nil || c.DeadLetters == nil || c.Queue == nil || c.DLQURL == "" {
		return errors.New("reconcile config: Chains, DeadLetters, Queue and DLQURL are required")
	}
	return nil
}

// Tenant is one tenant's line of the report.
type Tenant struct {
	Tenant      string `json:"tenant"`
	Events      int    `json:"events"`
	ChainIntact bool   `json:"chain_intact"`
	// FirstBadSeq and Reason say where and why a broken chain breaks.
	FirstBadSeq uint64 `json:"first_bad_seq,omitempty"`
	Reason      string `json:"reason,omitempty"`
	DeadLetters int    `json:"dead_letters"`
	// Unsettled counts DURABLE work older than the grace period that is
	// neither completed nor dead (only with Config.Unsettled).
	Unsettled int `json:"unsettled"`
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

// Reconcile builds the report.
func Reconcile(ctx context.Context, cfg Config) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	tenants, err := cfg.Chains.Tenants(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("list tenants: %w", err)
	}
	letters, err := cfg.DeadLetters.All(ctx)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Tenants: []Tenant{}}
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
		cr, err := cfg.Chains.VerifyChain(ctx, t)
		if err != nil {
			return Report{}, fmt.Errorf("verify chain of tenant %q: %w", t, err)
		}
		line := Tenant{
			Tenant: t, Events: cr.Events, ChainIntact: cr.Intact, FirstBadSeq: cr.FirstBadSeq,
			Reason: string(cr.Reason), DeadLetters: open[t],
		}
		if cfg.Unsettled != nil {
			if line.Unsettled, err = cfg.Unsettled.Unsettled(ctx, t); err != nil {
				return Report{}, err
			}
			rep.Unsettled += line.Unsettled
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
