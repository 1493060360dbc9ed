package durable

import (
	"encoding/json"
	"errors"
	"time"
)

// batchCodec decodes gateway batches (edge/wire/batch) into the consumer's
// form.
type batchCodec interface {
	// IsBatch reports whether p starts like a batch.
	IsBatch(p []byte) bool
	// Decode decodes a batch.
	Decode(p []byte) (decodedBatch, error)
}

// decodedBatch is a batch as the consumer reads it.
type decodedBatch struct {
	Outbox string
	SentAt time.Time
	Things []series
}

// stubCodec stands in for edge/wire/batch until that package is merged:
// format byte 0x02 then JSON of stubBatch. Tests encode with it.
type stubCodec struct{}

type stubBatch struct {
	Outbox string       `json:"outbox"`
	SentAt time.Time    `json:"sent_at"`
	Things []stubSeries `json:"things"`
}

type stubSeries struct {
	Thing   string       `json:"thing"`
	Samples []stubSample `json:"samples"`
}

type stubSample struct {
	Seq   uint64    `json:"seq"`
	At    time.Time `json:"at"`
	Kind  string    `json:"kind"`
	Value float64   `json:"value"`
}

func (stubCodec) IsBatch(p []byte) bool { return len(p) > 0 && p[0] == 0x02 }

func (stubCodec) Decode(p []byte) (decodedBatch, error) {
	if len(p) == 0 || p[0] != 0x02 {
		return decodedBatch{}, errors.New("not a batch")
	}
	var b stubBatch
	if err := json.Unmarshal(p[1:], &b); err != nil {
		return decodedBatch{}, err
	}
	d := decodedBatch{Outbox: b.Outbox, SentAt: b.SentAt}
	for _, s := range b.Things {
		ser := series{thing: s.Thing}
		for _, x := range s.Samples {
			ser.samples = append(ser.samples, sample{seq: x.Seq, at: x.At, kind: x.Kind, value: x.Value})
		}
		d.Things = append(d.Things, ser)
	}
	return d, nil
}
