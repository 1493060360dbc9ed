package durable

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/edge/wire/batch"
)

// FuzzHandle feeds Handle arbitrary record bytes and payloads (seeded with
// the golden batches of edge/wire/testdata): whatever
// they hold, a record is taken in or dead-lettered, never retried, and
// nothing panics.
func FuzzHandle(f *testing.F) {
	f.Add([]byte(`{"v":2,"tenant":"acme","gateway":"gw-1","received_at":1,"payload":"e30="}`), []byte(nil))
	f.Add([]byte("not json"), []byte(nil))
	f.Add([]byte(nil), encode(f, "ob1", t0, weights("gw-1:a", 1, 3, t0)))
	f.Add([]byte(nil), v1(f, "gw-1", 1, 2, t0))
	f.Add([]byte(nil), []byte{2, 0xff})
	golden, err := batch.LoadGolden("../../edge/wire/testdata")
	if err != nil {
		f.Fatal(err)
	}
	for _, g := range golden {
		f.Add([]byte(nil), g.Payload)
	}
	f.Fuzz(func(t *testing.T, data, payload []byte) {
		r := newRig(t, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil)); c.RollupEvery = 0 })
		if payload != nil {
			data, _ = json.Marshal(envelope{V: RecordVersion, Tenant: tenant, Gateway: "gw-1", ReceivedAt: t0.Add(time.Minute).UnixMilli(), Payload: payload})
		}
		res, err := r.c.Handle(context.Background(), []Record{{Data: data, SequenceNumber: "1", ShardID: "s", PartitionKey: "gw-1"}})
		if err != nil || len(res.BatchItemFailures) != 0 {
			t.Fatalf("Handle = %v, %v; want the record taken in or dead-lettered", res, err)
		}
	})
}
