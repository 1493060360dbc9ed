package redrive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	// works through the queue. Default 60s.
	Hold time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Validate checks the config.
func (c Config) Validate() error {
	if c.Queue == nil || c.QueueURL == "" || c.DLQURL == "" || c.Inbox == nil || c.DeadLetters == nil {
		return errors.New("redrive config: Queue, QueueURL, DLQURL, Inbox and DeadLetters are required")
	}
	if c.Hold < 0 {
		return errors.New("redrive config: negative Hold")
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
// ids that were not reached in the DLQ.
type Result struct {
	DryRun   bool     `json:"dry_run"`
	Moved    []Item   `json:"moved"`
	Skipped  []Item   `json:"skipped"`
	NotFound []string `json:"not_found,omitempty"`
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

// Run works through the DLQ once.
func (r *Redriver) Run(ctx context.Context, opts Options) (Result, error) {
	if !opts.All && len(opts.EventIDs) == 0 {
		return Result{}, ErrNothingSelected
	}
	want := map[string]bool{}
	for _, id := range opts.EventIDs {
		want[id] = true
	}
	res := Result{DryRun: opts.DryRun, Moved: []Item{}, Skipped: []Item{}}
	seen := map[string]bool{}
	var held []sqstypes.Message // left in the DLQ: made visible again at the end
	defer func() {
		for _, m := range held {
			_, _ = r.cfg.Queue.ChangeMessageVisibility(context.WithoutCancel(ctx), &sqs.ChangeMessageVisibilityInput{
				QueueUrl: aws.String(r.cfg.DLQURL), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0,
			})
		}
	}()
	for {
		out, err := r.cfg.Queue.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(r.cfg.DLQURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			VisibilityTimeout:           int32(r.cfg.Hold / time.Second),
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameMessageGroupId},
		})
		if err != nil {
			return res, fmt.Errorf("receive from dlq %s: %w", r.cfg.DLQURL, err)
		}
		fresh := 0
		for _, m := range out.Messages {
			id := aws.ToString(m.MessageId)
			if seen[id] {
				continue
			}
			seen[id] = true
			fresh++
			item, moved, err := r.one(ctx, m, opts, want)
			if err != nil {
				held = append(held, m)
				return res, err
			}
			if moved {
				res.Moved = append(res.Moved, item)
				delete(want, item.EventID)
				if opts.DryRun {
					held = append(held, m)
				}
			} else {
				res.Skipped = append(res.Skipped, item)
				held = append(held, m)
			}
		}
		if fresh == 0 {
			break
		}
	}
	for id := range want {
		res.NotFound = append(res.NotFound, id)
	}
	return res, nil
}

func (r *Redriver) one(ctx context.Context, m sqstypes.Message, opts Options, want map[string]bool) (Item, bool, error) {
	item := Item{MessageID: aws.ToString(m.MessageId)}
	env, err := engine.DecodeImageJSON([]byte(aws.ToString(m.Body)))
	if err != nil {
		item.Reason = "body is not an event: " + err.Error()
		return item, false, nil
	}
	item.EventID, item.Tenant, item.Type = env.ID, env.Tenant, env.Type
	if !opts.All && !want[env.ID] {
		item.Reason = "not selected"
		return item, false, nil
	}
	letters, err := r.cfg.DeadLetters.ForEvent(ctx, env.Tenant, env.ID)
	if err != nil {
		return item, false, fmt.Errorf("dead letters of event %s: %w", env.ID, err)
	}
	for _, l := range letters {
		item.Released = append(item.Released, l.Subscription)
	}
	if len(letters) == 0 {
		item.Reason = "no dead letters: moved back as it is"
	}
	if opts.DryRun {
		return item, true, nil
	}
	for _, l := range letters {
		if err := r.cfg.Inbox.ReleaseDead(ctx, env.ID, l.Subscription); err != nil && !errors.Is(err, inbox.ErrNotDead) {
			return item, false, fmt.Errorf("release event %s for %s: %w", env.ID, l.Subscription, err)
		}
		if err := r.cfg.DeadLetters.MarkRedriven(ctx, env.Tenant, env.ID, l.Subscription); err != nil {
			return item, false, err
		}
	}
	group := m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)]
	if group == "" {
		group = env.Tenant
	}
	_, err = r.cfg.Queue.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(r.cfg.QueueURL), MessageBody: m.Body, MessageGroupId: aws.String(group),
		MessageDeduplicationId: aws.String(env.ID + "-redrive-" + ulid.Make().String()),
	})
	if err != nil {
		return item, false, fmt.Errorf("send event %s back to %s: %w", env.ID, r.cfg.QueueURL, err)
	}
	if _, err := r.cfg.Queue.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(r.cfg.DLQURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
		// The event is already back in the queue; a copy stays in the DLQ
		// and the inbox makes a second replay harmless.
		r.log.Warn("delete from dlq failed after moving; a copy remains", "event_id", env.ID, "err", err)
	}
	r.log.Info("redriven", "event_id", env.ID, "tenant", env.Tenant, "released", item.Released)
	return item, true, nil
}
