package ingest

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/engine/deadletter"
)

// Errors of Replay.
var (
	// ErrNotIngestLetter: the letter was not written by ingest.
	ErrNotIngestLetter = errors.New("not an ingest dead letter")
	// ErrNotReplayable: the letter holds nothing Replay can feed back (a
	// telemetry message from before ingest took events only, or a letter
	// without its raw bytes).
	ErrNotReplayable = errors.New("dead letter cannot be replayed")
)

// Replayed says what a replay did.
type Replayed string

// Replay outcomes.
const (
	// ReplayEmitted: the event was emitted now.
	ReplayEmitted Replayed = "emitted"
	// ReplayDuplicate: the event had been emitted already (an earlier
	// replay, or a redelivery): nothing was emitted.
	ReplayDuplicate Replayed = "duplicate"
)

// LetterTopic returns the topic (as the rule saw it) an ingest dead letter's message
// arrived on.
func LetterTopic(l deadletter.Letter) (string, error) {
	if l.Subscription != LetterSubscription {
		return "", fmt.Errorf("letter %s (subscription %q): %w", l.Key(), l.Subscription, ErrNotIngestLetter)
	}
	topic := l.MessageID
	if l.Poison {
		topic, _, _ = strings.Cut(topic, "#") // topics hold no '#' (poisonMessageID)
	}
	return topic, nil
}

// Replay feeds an ingest dead letter's stored message back through what
// Handle does to a device event: topic, registry (read afresh, no cache),
// decode and emit, once the cause of its rejection is fixed (a thing
// registered, a catalog type added, a table or grant restored). Emit is
// idempotent on (thing, event id), so replaying a letter twice, or one
// whose message was redelivered and emitted meanwhile, emits once:
// ReplayDuplicate. A message still refused returns its *Rejection; a
// transient failure returns its error. Replay marks nothing; the caller
// marks the letter (deadletter.Store.MarkReplayed). Replay needs no Run.
func (in *Ingester) Replay(ctx context.Context, l deadletter.Letter) (Replayed, error) {
	topic, err := LetterTopic(l)
	if err != nil {
		return "", err
	}
	raw := l.Raw
	if raw == nil {
		return "", fmt.Errorf("letter %s has no raw message: %w", l.Key(), ErrNotReplayable)
	}
	if l.RawSize > len(raw) {
		return "", fmt.Errorf("letter %s keeps %d of the message's %d bytes: %w", l.Key(), len(raw), l.RawSize, ErrNotReplayable)
	}
	// A telemetry letter (written while ingest took telemetry too) is
	// refused as not replayable before ParseTopic would call it a bad topic.
	if tp, err := wire.ParseTopic(topic); err == nil && tp.Kind != wire.KindEvents {
		return "", fmt.Errorf("letter %s is a %s message: %w", l.Key(), tp.Kind, ErrNotReplayable)
	}
	tp, err := ParseTopic(topic)
	if err != nil {
		return "", err
	}
	in.devices.Forget(tp.Thing)
	if err := in.verifyTenant(ctx, tp); err != nil {
		return "", err
	}
	recv := l.At
	if recv.IsZero() {
		recv = in.cfg.Now()
	}
	ev, fix, err := decodeEvent(raw, tp.Thing, recv, in.cfg.limits())
	if err == nil {
		err = fix.correctEvent(&ev)
	}
	if err != nil {
		return "", err
	}
	outcome, err := in.emitEvent(ctx, tp.Tenant, ev, fix, raw)
	switch {
	case err != nil:
		return "", err
	case outcome == duplicate:
		in.cfg.Observer.Duplicate(ev.Type)
		return ReplayDuplicate, nil
	}
	in.cfg.Observer.Emitted(ev.Type)
	return ReplayEmitted, nil
}
