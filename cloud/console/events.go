package console

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/bowline-iot/bowline/engine"
)

// tenantLog is what the console knows of one tenant: its events in seq
// order (the tail read so far), its head row and its last verification.
type tenantLog struct {
	// events are the newest events read, seqs first..first+len-1; older
	// ones were dropped to keep the cache within its bounds.
	events   []engine.Envelope
	first    uint64
	bytes    int64 // estimated memory of events (envelopeSize)
	headSeq  uint64
	headHash string
	chain    engine.ChainReport
	chainAt  time.Time
	chainErr string
	// unsettled is -1 when not known.
	unsettled int
}

// next is the seq after the newest event read.
func (tl *tenantLog) next() uint64 { return tl.first + uint64(len(tl.events)) }

// drop forgets tl's n oldest events (a fresh slice, so their memory goes).
func (tl *tenantLog) drop(n int) int64 {
	n = min(n, len(tl.events))
	var freed int64
	for i := range n {
		freed += envelopeSize(&tl.events[i])
	}
	tl.events = slices.Clone(tl.events[n:])
	tl.first += uint64(n)
	tl.bytes -= freed
	return freed
}

// envelopeSize estimates what an envelope holds in memory: its strings,
// twice its payload's JSON (a decoded map costs more than its text) and a
// fixed overhead. It only needs to grow with what a tenant sends.
func envelopeSize(e *engine.Envelope) int64 {
	n := len(e.ID) + len(e.Tenant) + len(e.Type) + len(e.Actor) + len(e.Hash) + len(e.PrevHash) + len(e.CorrelationID)
	if b, err := json.Marshal(e.Payload); err == nil {
		n += 2 * len(b)
	}
	return int64(n) + 512
}

// eventLog keeps the newest events of every tenant in memory, tailed by
// refresh, within maxPerTenant events per tenant and maxBytes (estimated)
// in all.
type eventLog struct {
	log          *engine.Log
	maxPerTenant int
	maxBytes     int64

	mu      sync.RWMutex
	tenants map[string]*tenantLog
	order   []string // sorted tenant names
	bytes   int64    // sum of the tenants' bytes
	readAt  time.Time
}

func newEventLog(db DynamoDB, table string, maxPerTenant int, maxBytes int64) *eventLog {
	return &eventLog{log: engine.NewLog(db, table), maxPerTenant: maxPerTenant, maxBytes: maxBytes, tenants: map[string]*tenantLog{}}
}

// trim keeps the cache within its bounds (l.mu held): a tenant over
// maxPerTenant keeps its newest nine tenths; while the whole is over
// maxBytes, the tenant holding the most loses its older half, so one
// noisy tenant is trimmed before the quiet ones lose anything.
func (l *eventLog) trim(tl *tenantLog) {
	if over := len(tl.events) - l.maxPerTenant; over > 0 {
		l.bytes -= tl.drop(over + l.maxPerTenant/10)
	}
	for l.bytes > l.maxBytes {
		var big *tenantLog
		for _, t := range l.tenants {
			if big == nil || t.bytes > big.bytes {
				big = t
			}
		}
		if big == nil || len(big.events) == 0 {
			return
		}
		l.bytes -= big.drop(max(1, len(big.events)/2))
	}
}

// setTenants records the tenants that exist.
func (l *eventLog) setTenants(names []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range names {
		if _, ok := l.tenants[t]; !ok {
			l.tenants[t] = &tenantLog{first: 1, unsettled: -1}
			l.order = append(l.order, t)
		}
	}
	slices.Sort(l.order)
}

// tenantNames returns the known tenants, sorted.
func (l *eventLog) tenantNames() []string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return slices.Clone(l.order)
}

// tail reads every tenant's new events and head row.
func (l *eventLog) tail(ctx context.Context) error {
	for _, t := range l.tenantNames() {
		l.mu.RLock()
		last := l.tenants[t].next() - 1
		l.mu.RUnlock()
		fresh, err := l.readAfter(ctx, t, last)
		if err != nil {
			return err
		}
		seq, hash, err := l.readHead(ctx, t)
		if err != nil {
			return err
		}
		l.mu.Lock()
		tl := l.tenants[t]
		for _, e := range fresh {
			// Rows arrive in seq order; a gap (a row deleted) stops the
			// cache there, and verification names it.
			if e.Seq == tl.next() {
				tl.events = append(tl.events, e)
				n := envelopeSize(&e)
				tl.bytes += n
				l.bytes += n
			}
		}
		l.trim(tl)
		tl.headSeq, tl.headHash = seq, hash
		l.mu.Unlock()
	}
	l.mu.Lock()
	l.readAt = time.Now()
	l.mu.Unlock()
	return nil
}

// readAfter reads tenant's events with seq above after (strongly
// consistent, in DynamoDB's own pages).
func (l *eventLog) readAfter(ctx context.Context, tenant string, after uint64) ([]engine.Envelope, error) {
	var out []engine.Envelope
	for env, err := range l.log.After(ctx, tenant, after, engine.ReadOptions{}) {
		var row *engine.RowError
		switch {
		case errors.As(err, &row) && !row.KeyMismatch():
			// A malformed row: the cache stops before it; verification
			// shows why.
			return out, nil
		case err != nil && row == nil:
			return nil, err
		}
		// A row under another seq's key is kept as it says (tail keeps
		// only the next seq).
		out = append(out, env)
	}
	return out, nil
}

// readHead reads tenant's head: seq 0 and no hash without a head row or
// with a malformed one (verification shows why).
func (l *eventLog) readHead(ctx context.Context, tenant string) (uint64, string, error) {
	h, err := l.log.Head(ctx, tenant)
	switch {
	case errors.Is(err, engine.ErrBadRow):
		return 0, "", nil
	case err != nil:
		return 0, "", err
	case !h.Found:
		return 0, "", nil
	}
	return h.Seq, h.Hash, nil
}

// readEvent reads one event row as stored now (not from the cache: a
// tampered row shows as it is).
func (l *eventLog) readEvent(ctx context.Context, tenant string, seq uint64) (engine.Envelope, bool, error) {
	env, found, err := l.log.Event(ctx, tenant, seq)
	if row := (*engine.RowError)(nil); errors.As(err, &row) && row.KeyMismatch() {
		return env, true, nil // shown as it is
	}
	if err != nil {
		return engine.Envelope{}, false, err
	}
	return env, found, nil
}

// tenantView is a copy of one tenant's state for a page.
type tenantView struct {
	Tenant string
	// Events is the seq of the newest event read; Oldest the seq of the
	// oldest still held in memory (older ones were dropped).
	Events    int
	Oldest    uint64
	HeadSeq   uint64
	HeadHash  string
	Chain     engine.ChainReport
	ChainAt   time.Time
	ChainErr  string
	Unsettled int
}

// Checked reports whether a verification has finished.
func (v tenantView) Checked() bool { return !v.ChainAt.IsZero() }

func (l *eventLog) view(tenant string) (tenantView, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	tl, ok := l.tenants[tenant]
	if !ok {
		return tenantView{}, false
	}
	return tenantView{Tenant: tenant, Events: int(tl.next() - 1), Oldest: tl.first, HeadSeq: tl.headSeq, HeadHash: tl.headHash,
		Chain: tl.chain, ChainAt: tl.chainAt, ChainErr: tl.chainErr, Unsettled: tl.unsettled}, true
}

func (l *eventLog) views() []tenantView {
	var out []tenantView
	for _, t := range l.tenantNames() {
		if v, ok := l.view(t); ok {
			out = append(out, v)
		}
	}
	return out
}

// events returns tenant's cached events matching keep, in seq order. The
// envelopes are shared: callers must not change them.
func (l *eventLog) events(tenant string, keep func(*engine.Envelope) bool) []engine.Envelope {
	l.mu.RLock()
	defer l.mu.RUnlock()
	tl, ok := l.tenants[tenant]
	if !ok {
		return nil
	}
	var out []engine.Envelope
	for i := range tl.events {
		if keep == nil || keep(&tl.events[i]) {
			out = append(out, tl.events[i])
		}
	}
	return out
}

// window returns up to n events of tenant with seq <= before (0: the
// newest), newest first, and the seq of the next older page (0: none
// held in memory).
func (l *eventLog) window(tenant string, before uint64, n int) ([]engine.Envelope, uint64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	tl, ok := l.tenants[tenant]
	if !ok || len(tl.events) == 0 {
		return nil, 0
	}
	end := len(tl.events) // exclusive index
	if before > 0 && before < tl.next() {
		if before < tl.first {
			return nil, 0
		}
		end = int(before-tl.first) + 1
	}
	start := max(0, end-n)
	out := make([]engine.Envelope, 0, end-start)
	for i := end - 1; i >= start; i-- {
		out = append(out, tl.events[i])
	}
	var next uint64
	if start > 0 {
		next = tl.first + uint64(start) - 1
	}
	return out, next
}

// unsettledEvery is how many verification passes run per count of
// unsettled work (it reads every event and its inbox rows).
const unsettledEvery = 6

// verifyAll runs one verification of every tenant, and every
// unsettledEvery-th pass the unsettled-work count too.
func (c *Console) verifyAll(ctx context.Context, pass int) {
	for _, t := range c.log.tenantNames() {
		c.verifyTenant(ctx, t, pass%unsettledEvery == 0)
	}
}

func (c *Console) verifyTenant(ctx context.Context, tenant string, withUnsettled bool) {
	rep, err := c.cfg.Chains.VerifyChain(ctx, tenant)
	if v, ok := c.log.view(tenant); ok && v.Unsettled < 0 {
		withUnsettled = true // not counted yet: a new tenant
	}
	unsettled := -1
	if err == nil && withUnsettled && c.cfg.Unsettled != nil {
		if n, uerr := c.cfg.Unsettled.Unsettled(ctx, tenant); uerr == nil {
			unsettled = n
		}
	}
	c.log.mu.Lock()
	defer c.log.mu.Unlock()
	tl, ok := c.log.tenants[tenant]
	if !ok {
		return
	}
	if err != nil {
		tl.chainErr = err.Error()
		return
	}
	tl.chain, tl.chainAt, tl.chainErr = rep, time.Now(), ""
	if unsettled >= 0 {
		tl.unsettled = unsettled
	}
}
