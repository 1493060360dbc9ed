package redrive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/inbox"
)

// QueueAPI is the part of the SQS client redrive uses.
type QueueAPI interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

// Inbox releases dead rows (inbox.Store).
type Inbox interface {
	ReleaseDead(ctx context.Context, eventID, subscription string) error
}

// DeadLetters finds and marks an event's letters (deadletter.Store).
type DeadLetters interface {
	ForEvent(ctx context.Context, tenant, eventID string) ([]deadletter.Letter, error)
	MarkRedriven(ctx context.Context, tenant, eventID, subscription string) error
}

var (
	_ QueueAPI    = (*sqs.Client)(nil)
	_ Inbox       = (*inbox.Store)(nil)
	_ DeadLetters = (*deadletter.Store)(nil)
)

// Config configures a Redriver.
type Config struct {
	Queue       QueueAPI
	QueueURL    string // the events queue, target
	DLQURL      string // its dead-letter queue, source
	Inbox       Inbox
	DeadLetters DeadLetters
	// Hold is how long a received DLQ message stays invisible while the run
	// works through the queue; the run renews it every Hold/2 for the
	// messages it keeps. Default 60s; at least 2s.
	Hold time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Validate checks the config.
func (c Config) Validate() error {
	if c.Queue == nil || c.QueueURL == "" || c.DLQURL == "" || c.Inbox == nil || c.DeadLetters == nil {
		return errors.New("redrive config: Queue, QueueURL, DLQURL, Inbox and DeadLetters are required")
	}
	if c.Hold < 0 || (c.Hold > 0 && c.Hold < 2*time.Second) {
		return fmt.Errorf("redrive config: Hold %v: want at least 2s (0: the default)", c.Hold)
	}
	return nil
}

// Options select what to move.
type Options struct {
	// EventIDs selects events by id; All selects every message.
	EventIDs []string
	All      bool
	// DryRun reports what would move without changing anything.
	DryRun bool
}

// Item is one DLQ message and what happened to it.
type Item struct {
	MessageID string `json:"message_id"`
	EventID   string `json:"event_id,omitempty"`
	Tenant    string `json:"tenant,omitempty"`
	Type      string `json:"type,omitempty"`
	// Released lists the subscriptions whose dead rows were released.
	Released []string `json:"released,omitempty"`
	// Reason says why an item was skipped, or notes about a moved one.
	Reason string `json:"reason,omitempty"`
}

// Result is what a run moved and skipped; NotFound lists selected event
// ids that are not in the DLQ (sorted).
type Result struct {
	DryRun   bool     `json:"dry_run"`
	Moved    []Item   `json:"moved"`
	Skipped  []Item   `json:"skipped"`
	NotFound []string `json:"not_found,omitempty"`
	// Walked lists the message groups the run walked to reach messages
	// queued behind others: their unselected messages are in the DLQ in
	// the same order, under new message ids.
	Walked []string `json:"walked,omitempty"`
}

// ErrNothingSelected: neither event ids nor All were given.
var ErrNothingSelected = errors.New("select events with ids or all")

// Redriver moves events from the DLQ back to the events queue.
type Redriver struct {
	cfg Config
	log *slog.Logger
}

// New returns a Redriver for cfg.
func New(cfg Config) (*Redriver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Hold == 0 {
		cfg.Hold = 60 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Redriver{cfg: cfg, log: cfg.Logger}, nil
}

// Run works through the DLQ once: every message when opts.All, else
// until every selected event is found or the whole DLQ has been seen. The
// package comment describes how it reaches a message queued behind others
// of its group without reordering them.
func (r *Redriver) Run(ctx context.Context, opts Options) (Result, error) {
	if !opts.All && len(opts.EventIDs) == 0 {
		return Result{}, ErrNothingSelected
	}
	w := &walk{r: r, opts: opts, want: map[string]bool{}, held: map[string]*heldMsg{},
		copies: map[string]string{}, groups: map[string]*groupState{},
		res: Result{DryRun: opts.DryRun, Moved: []Item{}, Skipped: []Item{}}}
	for _, id := range opts.EventIDs {
		w.want[id] = true
	}
	defer w.release(ctx)
	for crowded := 0; ; {
		w.keepHeld(ctx)
		got, fresh, err := w.receive(ctx)
		if err != nil {
			return w.res, err
		}
		if fresh > 0 {
			crowded = 0
			continue
		}
		// A full batch of messages held already (back after a long run
		// outlasted Hold) may hide others: look again, a bounded number
		// of times.
		if got == maxBatch && crowded <= len(w.held)/maxBatch {
			crowded++
			continue
		}
		// Every group is exhausted, or blocked by a message held here.
		started, err := w.walkBlocked(ctx)
		if err != nil {
			return w.res, err
		}
		if !started {
			break
		}
	}
	for id := range w.want {
		w.res.NotFound = append(w.res.NotFound, id)
	}
	slices.Sort(w.res.NotFound)
	return w.res, nil
}

// heldMsg is a DLQ message the run keeps invisible, to release at the end.
type heldMsg struct {
	id, receipt, group string
	body               *string
	order              int
}

// groupState is what the run knows of one message group of the DLQ.
type groupState struct {
	name string
	// held are the ids of its messages held, in group order.
	held []string
	// tenant is the tenant of its events, when one decoded.
	tenant string
	// walking: its unselected messages go to the back of the group until
	// the first of them comes round (done).
	walking, done bool
}

// walk is one Run.
type walk struct {
	r       *Redriver
	renewed time.Time // when the held messages' visibility was last renewed
	opts    Options
	want    map[string]bool
	res     Result
	held    map[string]*heldMsg
	nheld   int
	copies  map[string]string // message id of a copy sent to the DLQ -> its group
	groups  map[string]*groupState
	order   []string // groups in the order first seen
}

// keepHeld renews the visibility of every held message when half of Hold
// has passed since the last renewal, so their receipt handles stay
// current. A handle that went stale anyway is replaced when its message
// comes back (receive).
func (w *walk) keepHeld(ctx context.Context) {
	if time.Since(w.renewed) < w.r.cfg.Hold/2 {
		return
	}
	w.renewed = time.Now()
	var batch []sqstypes.ChangeMessageVisibilityBatchRequestEntry
	flush := func() {
		if len(batch) == 0 {
			return
		}
		if _, err := w.r.cfg.Queue.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{
			QueueUrl: aws.String(w.r.cfg.DLQURL), Entries: batch,
		}); err != nil {
			w.r.log.Warn("renew visibility of held dlq messages", "err", err)
		}
		batch = batch[:0]
	}
	for _, h := range w.held {
		batch = append(batch, sqstypes.ChangeMessageVisibilityBatchRequestEntry{
			Id: aws.String(fmt.Sprintf("m%d", h.order)), ReceiptHandle: aws.String(h.receipt),
			VisibilityTimeout: int32(w.r.cfg.Hold / time.Second),
		})
		if len(batch) == maxBatch {
			flush()
		}
	}
	flush()
}

func (w *walk) group(name string) *groupState {
	g, ok := w.groups[name]
	if !ok {
		g = &groupState{name: name}
		w.groups[name] = g
		w.order = append(w.order, name)
	}
	return g
}

func (w *walk) hold(m sqstypes.Message, g *groupState) {
	id := aws.ToString(m.MessageId)
	w.nheld++
	w.held[id] = &heldMsg{id: id, receipt: aws.ToString(m.ReceiptHandle), group: g.name, body: m.Body, order: w.nheld}
	g.held = append(g.held, id)
}

// maxBatch is the most messages a receive returns.
const maxBatch = 10

// receive takes one batch off the DLQ and handles it. got counts the
// messages received; fresh those not held already (a held message comes
// back when a run outlasts Hold, and is hidden again).
func (w *walk) receive(ctx context.Context) (got, fresh int, err error) {
	cfg := w.r.cfg
	out, err := cfg.Queue.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(cfg.DLQURL), MaxNumberOfMessages: maxBatch, WaitTimeSeconds: 1,
		VisibilityTimeout:           int32(cfg.Hold / time.Second),
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameMessageGroupId},
	})
	if err != nil {
		return 0, 0, fmt.Errorf("receive from dlq %s: %w", cfg.DLQURL, err)
	}
	got = len(out.Messages)
	for _, m := range out.Messages {
		id := aws.ToString(m.MessageId)
		if h, ok := w.held[id]; ok {
			// Back after Hold ran out: keep holding it, by its new handle.
			h.receipt = aws.ToString(m.ReceiptHandle)
			continue
		}
		fresh++
		name := m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)]
		if g, ok := w.copies[id]; ok {
			// A walked group came round to the first message the walk
			// sent to its back: the walk of that group is over.
			gs := w.group(g)
			gs.done = true
			w.hold(m, gs)
			continue
		}
		item, env, selected := w.inspect(m)
		if name == "" {
			name = env.Tenant
		}
		gs := w.group(name)
		if gs.tenant == "" {
			gs.tenant = env.Tenant
		}
		if selected {
			if w.opts.DryRun {
				w.res.Moved = append(w.res.Moved, item)
				delete(w.want, item.EventID)
				w.hold(m, gs)
				continue
			}
			moved, err := w.r.move(ctx, m, env, item, name)
			if err != nil {
				w.hold(m, gs)
				return got, fresh, err
			}
			w.res.Moved = append(w.res.Moved, moved)
			delete(w.want, item.EventID)
			continue
		}
		w.res.Skipped = append(w.res.Skipped, item)
		if gs.walking && !gs.done {
			if err := w.toBack(ctx, m, gs); err != nil {
				return got, fresh, err
			}
			continue
		}
		w.hold(m, gs)
	}
	return got, fresh, nil
}

// inspect decodes m and says whether the run selects it.
func (w *walk) inspect(m sqstypes.Message) (Item, engine.Envelope, bool) {
	item := Item{MessageID: aws.ToString(m.MessageId)}
	env, err := engine.DecodeImageJSON([]byte(aws.ToString(m.Body)))
	if err != nil {
		item.Reason = "body is not an event: " + err.Error()
		return item, engine.Envelope{}, false
	}
	item.EventID, item.Tenant, item.Type = env.ID, env.Tenant, env.Type
	if !w.opts.All && !w.want[env.ID] {
		item.Reason = "not selected"
		return item, env, false
	}
	return item, env, true
}

// walkBlocked starts walking the groups whose held messages may hide what
// the run still looks for, and reports whether it started any. A dry run
// never walks (a walk rewrites messages), nor does a run that found
// everything.
func (w *walk) walkBlocked(ctx context.Context) (bool, error) {
	if w.opts.DryRun || (!w.opts.All && len(w.want) == 0) {
		return false, nil
	}
	var blocked []*groupState
	for _, name := range w.order {
		if g := w.groups[name]; len(g.held) > 0 && !g.walking && g.name != "" {
			blocked = append(blocked, g)
		}
	}
	if len(blocked) == 0 {
		return false, nil
	}
	if !w.opts.All {
		// The dead letters name the tenant of an event they know: walk
		// those tenants' groups first, the others only if that is not
		// enough.
		var hinted []*groupState
		for _, g := range blocked {
			if g.tenant == "" {
				continue
			}
			for id := range w.want {
				letters, err := w.r.cfg.DeadLetters.ForEvent(ctx, g.tenant, id)
				if err != nil {
					return false, fmt.Errorf("dead letters of event %s: %w", id, err)
				}
				if len(letters) > 0 {
					hinted = append(hinted, g)
					break
				}
			}
		}
		if len(hinted) > 0 {
			blocked = hinted
		}
	}
	for _, g := range blocked {
		g.walking = true
		w.res.Walked = append(w.res.Walked, g.name)
		ids := g.held
		g.held = nil
		for _, id := range ids {
			w.keepHeld(ctx)
			h := w.held[id]
			delete(w.held, id)
			m := sqstypes.Message{MessageId: aws.String(id), ReceiptHandle: aws.String(h.receipt), Body: h.body}
			if err := w.toBack(ctx, m, g); err != nil {
				return false, err
			}
		}
	}
	return true, nil
}

// toBack moves m to the back of its group in the DLQ: a copy is sent
// (same body and group, a fresh deduplication id), then m is deleted. A
// failed delete leaves m held and a duplicate behind it; a second replay
// of an event is harmless (the inbox).
func (w *walk) toBack(ctx context.Context, m sqstypes.Message, g *groupState) error {
	cfg := w.r.cfg
	out, err := cfg.Queue.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(cfg.DLQURL), MessageBody: m.Body, MessageGroupId: aws.String(g.name),
		MessageDeduplicationId: aws.String("walk-" + ulid.Make().String()),
	})
	if err != nil {
		w.hold(m, g)
		return fmt.Errorf("send message %s to the back of group %s: %w", aws.ToString(m.MessageId), g.name, err)
	}
	w.copies[aws.ToString(out.MessageId)] = g.name
	if _, err := cfg.Queue.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(cfg.DLQURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
		w.hold(m, g)
		return fmt.Errorf("delete message %s after copying it to the back of group %s: %w", aws.ToString(m.MessageId), g.name, err)
	}
	return nil
}

// release makes every held message visible again, the last held first:
// SQS keeps a group's order whatever the order of the calls, and an
// emulator that puts a released message back at the head of its group
// (fauxqs) ends up with the same order.
func (w *walk) release(ctx context.Context) {
	hs := make([]*heldMsg, 0, len(w.held))
	for _, h := range w.held {
		hs = append(hs, h)
	}
	slices.SortFunc(hs, func(a, b *heldMsg) int { return b.order - a.order })
	for _, h := range hs {
		_, err := w.r.cfg.Queue.ChangeMessageVisibility(context.WithoutCancel(ctx), &sqs.ChangeMessageVisibilityInput{
			QueueUrl: aws.String(w.r.cfg.DLQURL), ReceiptHandle: aws.String(h.receipt), VisibilityTimeout: 0,
		})
		if err != nil {
			w.r.log.Warn("release dlq message", "message_id", h.id, "err", err)
		}
	}
}

// move releases env's dead inbox rows, marks its letters redriven, sends m
// back to the events queue in group with a fresh deduplication id and
// deletes it from the DLQ.
func (r *Redriver) move(ctx context.Context, m sqstypes.Message, env engine.Envelope, item Item, group string) (Item, error) {
	letters, err := r.cfg.DeadLetters.ForEvent(ctx, env.Tenant, env.ID)
	if err != nil {
		return item, fmt.Errorf("dead letters of event %s: %w", env.ID, err)
	}
	for _, l := range letters {
		item.Released = append(item.Released, l.Subscription)
	}
	if len(letters) == 0 {
		item.Reason = "no dead letters: moved back as it is"
	}
	for _, l := range letters {
		if err := r.cfg.Inbox.ReleaseDead(ctx, env.ID, l.Subscription); err != nil && !errors.Is(err, inbox.ErrNotDead) {
			return item, fmt.Errorf("release event %s for %s: %w", env.ID, l.Subscription, err)
		}
		if err := r.cfg.DeadLetters.MarkRedriven(ctx, env.Tenant, env.ID, l.Subscription); err != nil {
			return item, err
		}
	}
	if group == "" {
		group = env.Tenant
	}
	_, err = r.cfg.Queue.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(r.cfg.QueueURL), MessageBody: m.Body, MessageGroupId: aws.String(group),
		MessageDeduplicationId: aws.String(env.ID + "-redrive-" + ulid.Make().String()),
	})
	if err != nil {
		return item, fmt.Errorf("send event %s back to %s: %w", env.ID, r.cfg.QueueURL, err)
	}
	if _, err := r.cfg.Queue.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(r.cfg.DLQURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
		// The event is already back in the queue; a copy stays in the DLQ
		// and the inbox makes a second replay harmless.
		r.log.Warn("delete from dlq failed after moving; a copy remains", "event_id", env.ID, "err", err)
	}
	r.log.Info("redriven", "event_id", env.ID, "tenant", env.Tenant, "released", item.Released)
	return item, nil
}
