package durable

import (
	"time"

	"github.com/bowline-iot/bowline/edge/wire/batch"
)

// batchCodec decodes gateway batches into the consumer's form; tests
// replace it to feed payloads the real codec refuses to encode.
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

// wireCodec is edge/wire/batch.
type wireCodec struct{}

var defaultCodec batchCodec = wireCodec{}

func (wireCodec) IsBatch(p []byte) bool { return batch.IsBatch(p) }

func (wireCodec) Decode(p []byte) (decodedBatch, error) {
	b, err := batch.Decode(p)
	if err != nil {
		return decodedBatch{}, err
	}
	d := decodedBatch{Outbox: b.Outbox, SentAt: b.SentAt, Things: make([]series, len(b.Things))}
	for i, s := range b.Things {
		ser := series{thing: s.Thing, samples: make([]sample, len(s.Samples))}
		for j, x := range s.Samples {
			ser.samples[j] = sample{seq: x.Seq, at: x.At, kind: x.Kind, value: x.Float()}
		}
		d.Things[i] = ser
	}
	return d, nil
}
