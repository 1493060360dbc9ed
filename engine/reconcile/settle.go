package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/attr"
	"github.com/bowline-iot/bowline/engine/inbox"
)

// InboxDB is the part of the DynamoDB API the settlement check reads and
// keeps its progress with.
type InboxDB interface {
	ProgressDB
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

var _ InboxDB = (*dynamodb.Client)(nil)

// Settler reports a tenant's settlement (InboxCheck).
type Settler interface {
	Settle(ctx context.Context, tenant string) (Settlement, error)
}

// Unsettled counts a tenant's unsettled DURABLE work (InboxCheck).
type Unsettled interface {
	Unsettled(ctx context.Context, tenant string) (int, error)
}

var (
	_ Settler   = InboxCheck{}
	_ Unsettled = InboxCheck{}
)

// Settlement is one tenant's DURABLE work as InboxCheck found it.
type Settlement struct {
	// Unsettled counts (event, subscription) pairs older than the grace
	// period whose inbox row is pending, or absent while the row could
	// not yet have expired: work that was lost or is stuck.
	Unsettled int
	// SettledSeq: every event up to it is settled or counted in
	// Unsettled.
	SettledSeq uint64
	// Expired counts pairs this call found without an inbox row for an
	// event older than the inbox TTL: their rows may have been completed
	// and expired, so they are not counted as unsettled.
	Expired int
	// Behind is true when the call stopped at MaxEvents or MaxOpen before
	// the events in flight; the next call goes on.
	Behind bool
}

// InboxCheck finds DURABLE work that never settled: (event, subscription)
// pairs older than Grace whose inbox row is neither completed nor dead.
//
// It is incremental (docs/reconcile.md): a settled watermark per tenant
// (Progress rows in InboxTable) moves only over a contiguous prefix of the
// log whose pairs are settled; a pair found unsettled is kept in the
// tenant's open list (at most MaxOpen) and the watermark moves past it.
// A call re-reads the open pairs (one BatchGetItem per 100) and then at
// most MaxEvents events past the watermark, stopping at the first event
// younger than Grace. A pair settled once is never read again, so its row
// may expire. A pair without a row counts as unsettled only while its
// event is younger than InboxTTL: an older one may have completed and
// expired, and counts as Expired instead.
type InboxCheck struct {
	DB          InboxDB
	EventsTable string
	// InboxTable holds the inbox rows and the progress rows.
	InboxTable string
	// Subscriptions are the catalog's; the DURABLE ones define the work
	// each event owes.
	Subscriptions []engine.Subscription
	// Grace: events younger than this are in flight. Default 2 minutes.
	Grace time.Duration
	// InboxTTL is the inbox rows' TTL (inbox.Config.TTL). Default
	// inbox.DefaultTTL.
	InboxTTL time.Duration
	// MaxEvents bounds the events read past the watermark per call.
	// Default 5,000.
	MaxEvents int
	// MaxOpen bounds the unsettled pairs kept per tenant: past it the
	// watermark stops. Default 1,000.
	MaxOpen int
	// Now defaults to time.Now.
	Now func() time.Time
}

// Validate checks the required fields.
func (c InboxCheck) Validate() error {
	if c.DB == nil || c.EventsTable == "" || c.InboxTable == "" {
		return errors.New("inbox check: DB, EventsTable and InboxTable are required")
	}
	if c.Grace < 0 || c.InboxTTL < 0 || c.MaxEvents < 0 || c.MaxOpen < 0 {
		return errors.New("inbox check: Grace, InboxTTL, MaxEvents and MaxOpen must not be negative")
	}
	return nil
}

func (c *InboxCheck) defaults() {
	if c.Grace == 0 {
		c.Grace = 2 * time.Minute
	}
	if c.InboxTTL == 0 {
		c.InboxTTL = inbox.DefaultTTL
	}
	if c.MaxEvents == 0 {
		c.MaxEvents = 5000
	}
	if c.MaxOpen == 0 {
		c.MaxOpen = 1000
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Unsettled counts tenant's unsettled (event, subscription) pairs (Settle).
func (c InboxCheck) Unsettled(ctx context.Context, tenant string) (int, error) {
	s, err := c.Settle(ctx, tenant)
	return s.Unsettled, err
}

// pending is one event past the watermark and its DURABLE inbox keys.
type pending struct {
	seq  uint64
	at   time.Time
	keys []string
}

// Settle re-checks tenant's open pairs, moves its watermark over the
// events that settled since the last call and saves the result.
func (c InboxCheck) Settle(ctx context.Context, tenant string) (Settlement, error) {
	if err := c.Validate(); err != nil {
		return Settlement{}, err
	}
	c.defaults()
	prog := Progress{DB: c.DB, Table: c.InboxTable}
	old, err := prog.Load(ctx, tenant)
	if err != nil {
		return Settlement{}, err
	}
	now := c.Now()
	res := Settlement{SettledSeq: old.Settled}

	// The open pairs first: those that settled leave the list.
	status, err := c.statuses(ctx, old.Open)
	if err != nil {
		return Settlement{}, fmt.Errorf("inbox check of tenant %q: %w", tenant, err)
	}
	var open []string
	for _, k := range old.Open {
		if !settled(status[k]) {
			open = append(open, k)
		}
	}

	// Then the events past the watermark, a page at a time.
	if open, err = c.walk(ctx, tenant, old.Settled, open, now, &res); err != nil {
		return Settlement{}, err
	}
	res.Unsettled = len(open)
	if res.SettledSeq != old.Settled || len(open) != len(old.Open) {
		if _, err := prog.SaveSettled(ctx, tenant, old, res.SettledSeq, open); err != nil {
			return Settlement{}, err
		}
	}
	return res, nil
}

// walkPage is how many events walk reads in one Query and settles with
// one read of their inbox rows.
const walkPage = 100

// walk reads tenant's events past the watermark (strongly consistent, at
// most MaxEvents in pages of walkPage) and settles them a page at a time
// (settlePage), until an event younger than Grace, MaxOpen or MaxEvents
// stops it. It returns the open list with the pairs it found unsettled.
func (c InboxCheck) walk(ctx context.Context, tenant string, after uint64, open []string, now time.Time, res *Settlement) ([]string, error) {
	cutoff := now.Add(-c.Grace)
	var (
		page []pending
		read int
	)
	events := engine.NewLog(c.DB, c.EventsTable).After(ctx, tenant, after, engine.ReadOptions{Limit: c.MaxEvents, PageSize: walkPage})
	for env, err := range events {
		var row *engine.RowError
		if err != nil && !errors.As(err, &row) {
			return nil, err
		}
		read++
		p := pending{seq: env.Seq, at: env.OccurredAt}
		if row != nil {
			// A row that is not a well-formed event (the chain check
			// names it) is passed over under the seq its key names: no
			// worker can take it, so there is no work to wait for unless
			// it decoded and only its key is wrong.
			p.seq = row.Key
		}
		if !p.at.After(cutoff) {
			for _, s := range engine.Match(c.Subscriptions, engine.Durable, env.Type) {
				p.keys = append(p.keys, inbox.Key(env.ID, s.Name))
			}
		}
		page = append(page, p)
		if p.at.After(cutoff) || len(page) == walkPage {
			var stop bool
			if open, stop, err = c.settlePage(ctx, tenant, page, open, now, res); err != nil || stop {
				return open, err
			}
			page = page[:0] // (an event in flight always stops the walk)
		}
	}
	open, stop, err := c.settlePage(ctx, tenant, page, open, now, res)
	if err != nil || stop {
		return open, err
	}
	if read >= c.MaxEvents {
		res.Behind = true
	}
	return open, nil
}

// settlePage reads the inbox rows of page's pairs and moves the
// watermark (res.SettledSeq) over its events in order, adding the pairs
// still unsettled to open. It stops (stop true) at an event younger than
// Grace or where open would outgrow MaxOpen (res.Behind).
func (c InboxCheck) settlePage(ctx context.Context, tenant string, page []pending, open []string, now time.Time, res *Settlement) (_ []string, stop bool, _ error) {
	if len(page) == 0 {
		return open, false, nil
	}
	cutoff, expiry := now.Add(-c.Grace), now.Add(-c.InboxTTL)
	var keys []string
	for _, p := range page {
		keys = append(keys, p.keys...)
	}
	st, err := c.statuses(ctx, keys)
	if err != nil {
		return open, true, fmt.Errorf("inbox check of tenant %q: %w", tenant, err)
	}
	for _, p := range page {
		if p.at.After(cutoff) {
			return open, true, nil
		}
		var unsettled []string
		expired := 0
		for _, k := range p.keys {
			s, found := st[k]
			switch {
			case settled(s):
			case !found && !p.at.After(expiry):
				expired++
			default:
				unsettled = append(unsettled, k)
			}
		}
		if len(open)+len(unsettled) > c.MaxOpen {
			res.Behind = true
			return open, true, nil
		}
		open = append(open, unsettled...)
		res.Expired += expired
		res.SettledSeq = p.seq
	}
	return open, false, nil
}

// settled reports whether an inbox status is final for reconciliation:
// completed, or dead (a dead letter, counted on its own).
func settled(s inbox.Status) bool { return s == inbox.Completed || s == inbox.Dead }

// statuses reads the status of each inbox key; absent keys are missing
// from the map.
func (c InboxCheck) statuses(ctx context.Context, keys []string) (map[string]inbox.Status, error) {
	out := map[string]inbox.Status{}
	if len(keys) == 0 {
		return out, nil
	}
	req := make([]map[string]types.AttributeValue, len(keys))
	for i, k := range keys {
		req[i] = attr.HashKey(k)
	}
	items, err := batchGet(ctx, c.DB, c.InboxTable, req, "pk, #status", "#status", inbox.AttrStatus)
	if err != nil {
		return nil, fmt.Errorf("read inbox rows: %w", err)
	}
	for _, it := range items {
		out[attr.GetS(it, attr.PK)] = inbox.Status(attr.GetS(it, inbox.AttrStatus))
	}
	return out, nil
}
