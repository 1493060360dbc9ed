package worker

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// message is one message this worker holds: received and not yet deleted
// or given back. id, group, body and lane are set once; the other fields
// are guarded by pool.mu.
type message struct {
	id, group, body string
	lane            *lane // the lane that handles it

	// receipt is the handle of the latest receive: SQS accepts no other
	// for a delete or a visibility change. receives is that receive's
	// ApproximateReceiveCount.
	receipt  string
	receives int
	// visibleAt is when SQS makes the message visible again, as far as
	// this worker knows (conservatively early).
	visibleAt time.Time
	// running counts handler runs in progress; overdueAt is when the
	// latest of them passes MaxRunTime plus a heartbeat.
	running   int
	overdueAt time.Time
	// gone: the message left the pool (deleted, given back or abandoned);
	// its slot is free again.
	gone bool
	// parked: its lane waits to retry a failed handler, and it holds a
	// parked place (pool.parked) instead of a slot.
	parked bool
}

// lane is one message group's queue in this worker: the messages of that
// group it holds, handled one after another, in the order SQS gave them.
type lane struct {
	group string
	queue []*message
	// abandoned: a handler overran MaxRunTime; the lane's messages were
	// left to lapse and the goroutine stops at its next step.
	abandoned bool
}

// pool tracks the messages in flight and the lanes that run them. A slot
// of slots is held for every message from its receive until it is gone.
type pool struct {
	mu    sync.Mutex
	msgs  map[string]*message
	lanes map[string]*lane
	slots chan struct{}
	wg    sync.WaitGroup // lane goroutines
	// parked counts the messages of lanes waiting to retry a failed
	// handler, which hold no slot; at most maxParked.
	parked, maxParked int
}

func newPool(maxInFlight, maxParked int) *pool {
	return &pool{msgs: map[string]*message{}, lanes: map[string]*lane{}, slots: make(chan struct{}, maxInFlight), maxParked: maxParked}
}

// park moves m and the messages queued behind it in its lane from their
// slots to parked places, when there is room for all of them: a lane that
// waits to retry its head in place then leaves its slots to the pollers,
// so other groups keep being received while it waits. It reports whether
// it parked them.
func (p *pool) park(m *message) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m.gone || m.parked {
		return m.parked
	}
	held := append([]*message{m}, m.lane.queue...)
	n := 0
	for _, q := range held {
		if !q.parked && !q.gone {
			n++
		}
	}
	if p.parked+n > p.maxParked {
		return false
	}
	for _, q := range held {
		if !q.parked && !q.gone {
			q.parked = true
			p.parked++
			<-p.slots
		}
	}
	return true
}

// acquire blocks until at least one slot is free (or ctx ends, returning
// 0), then takes up to want.
func (p *pool) acquire(ctx context.Context, want int) int {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return 0
	}
	if ctx.Err() != nil { // both were ready
		<-p.slots
		return 0
	}
	n := 1
	for n < want {
		select {
		case p.slots <- struct{}{}:
			n++
		default:
			return n
		}
	}
	return n
}

func (p *pool) release(n int) {
	for range n {
		<-p.slots
	}
}

// add files received messages (each holding one acquired slot) into their
// lanes, starting a lane goroutine with start where a group has none. A
// message this worker already holds (SQS gave it again after its
// visibility lapsed) only gets its new receipt handle and count: the lane
// that holds it still runs it once, in order.
func (p *pool) add(msgs []sqstypes.Message, receivedAt time.Time, visibility time.Duration, start func(*lane)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	dup := 0
	for _, sm := range msgs {
		id := aws.ToString(sm.MessageId)
		receives, _ := strconv.Atoi(sm.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
		if m, ok := p.msgs[id]; ok {
			m.receipt, m.receives, m.visibleAt = aws.ToString(sm.ReceiptHandle), receives, receivedAt.Add(visibility)
			dup++
			continue
		}
		group := sm.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)]
		m := &message{
			id: id, group: group, body: aws.ToString(sm.Body),
			receipt: aws.ToString(sm.ReceiptHandle), receives: receives, visibleAt: receivedAt.Add(visibility),
		}
		p.msgs[id] = m
		l, ok := p.lanes[group]
		if !ok {
			l = &lane{group: group}
			p.lanes[group] = l
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				start(l)
			}()
		}
		m.lane = l
		l.queue = append(l.queue, m)
	}
	p.releaseLocked(dup)
}

func (p *pool) releaseLocked(n int) {
	for range n {
		<-p.slots
	}
}

// next pops the lane's next message; ok is false when the lane is empty or
// abandoned, and the lane is then closed (removed from the pool).
func (p *pool) next(l *lane) (*message, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l.abandoned {
		return nil, false
	}
	if len(l.queue) == 0 {
		if p.lanes[l.group] == l {
			delete(p.lanes, l.group)
		}
		return nil, false
	}
	m := l.queue[0]
	l.queue = l.queue[1:]
	return m, true
}

// drain takes every message still queued in the lane.
func (p *pool) drain(l *lane) []*message {
	p.mu.Lock()
	defer p.mu.Unlock()
	rest := l.queue
	l.queue = nil
	return rest
}

// done removes m from the pool and frees its slot; it reports false when m
// was already gone.
func (p *pool) done(m *message) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.doneLocked(m)
}

func (p *pool) doneLocked(m *message) bool {
	if m.gone {
		return false
	}
	m.gone = true
	if p.msgs[m.id] == m {
		delete(p.msgs, m.id)
	}
	if m.parked {
		p.parked--
		return true
	}
	<-p.slots
	return true
}

// snapshot returns m's current receipt handle and receive count, and
// whether it is still held.
func (p *pool) snapshot(m *message) (receipt string, receives int, held bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return m.receipt, m.receives, !m.gone
}

// startRun notes a handler run of m that must end by deadline.
func (p *pool) startRun(m *message, deadline time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m.running++
	if deadline.After(m.overdueAt) {
		m.overdueAt = deadline
	}
}

func (p *pool) endRun(m *message) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m.running--
}

// abandonLocked gives up the lane of an overdue handler: its messages
// leave the pool without a visibility change, so they lapse and SQS
// redelivers the group, and the lane goroutine stops at its next step.
// It returns the messages abandoned.
func (p *pool) abandonLocked(l *lane, current *message) []*message {
	l.abandoned = true
	if p.lanes[l.group] == l {
		delete(p.lanes, l.group)
	}
	out := append([]*message{current}, l.queue...)
	l.queue = nil
	for _, m := range out {
		p.doneLocked(m)
	}
	return out
}
