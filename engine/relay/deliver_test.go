package relay

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/enginetest"
)

// TestRelayDeliversOrDeadLettersEveryEvent runs the relay on the emulators
// with a tenant's two awkward events: a 300,000-byte row (DynamoDB takes up
// to 400 KB, SQS 262,144 bytes) and a payload holding U+FFFE and U+FFFF
// (SQS refuses them raw). The first becomes a dead letter naming it, the
// second arrives escaped, decodes to the same event and its hash verifies.
// Neither is skipped in silence.
func TestRelayDeliversOrDeadLettersEveryEvent(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	tenant := "t" + strings.ToLower(ulid.Make().String())
	big := enginetest.Envelope(t, tenant, "bowl.refilled", 1, map[string]any{"pad": strings.Repeat("x", 300000)})
	odd := enginetest.Envelope(t, tenant, "bowl.refilled", 2, map[string]any{"customer_id": "c\uFFFE-\uFFFF"})
	for _, env := range []engine.Envelope{big, odd} {
		if err := enginetest.PutEventRow(ctx, f.ddb, f.names.EventsTable(), env); err != nil {
			t.Fatal(err)
		}
	}
	r := f.relay(t, "events-dl-"+ulid.Make().String())
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(runCtx) }()
	defer func() { stop(); <-done }()

	var got *engine.Envelope
	enginetest.Drain(ctx, t, f.sqs, f.queue, func(ms []enginetest.Drained) bool {
		for _, m := range ms {
			if m.GroupID != tenant {
				continue
			}
			if i := strings.IndexFunc(m.Body, func(r rune) bool { return !enginetest.ValidBodyRune(r) }); i >= 0 {
				t.Fatalf("body holds a character SQS refuses at byte %d", i)
			}
			env, err := engine.DecodeImageJSON([]byte(m.Body))
			if err != nil {
				t.Fatalf("decode body: %v", err)
			}
			if env.ID == big.ID {
				t.Fatalf("the %d-byte event reached the queue; want it dead-lettered", len(m.Body))
			}
			got = &env
		}
		return got != nil
	})
	if got.Payload["customer_id"] != odd.Payload["customer_id"] {
		t.Errorf("customer_id = %q; want %q", got.Payload["customer_id"], odd.Payload["customer_id"])
	}
	if h, err := engine.ChainHash(got.PrevHash, *got); err != nil || h != odd.Hash {
		t.Errorf("hash of the delivered event = %s (%v); want %s", h, err, odd.Hash)
	}
	var letters []DeadLetter
	enginetest.Drain(ctx, t, f.sqs, r.cfg.DeadLetterURL, func(ms []enginetest.Drained) bool {
		letters = letters[:0]
		for _, m := range ms {
			var dl DeadLetter
			if err := json.Unmarshal([]byte(m.Body), &dl); err != nil {
				t.Fatalf("dead letter %s: %v", m.Body, err)
			}
			if dl.GroupID == tenant { // the events table is shared by the package's tests
				letters = append(letters, dl)
			}
		}
		return len(letters) > 0
	})
	if len(letters) != 1 || letters[0].DedupID != big.ID || letters[0].GroupID != tenant || letters[0].Condition != ConditionUnsendable || letters[0].BatchInfo.ShardID == "" {
		t.Errorf("dead letters = %+v; want one, %s for event %s of %s with its shard", letters, ConditionUnsendable, big.ID, tenant)
	}
}
