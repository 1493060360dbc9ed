package main

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/bowline-iot/bowline/edge/wire/batch"
)

// source makes one gateway's batches with edge/wire/batch, as its
// forwarder sends them: every bowl's weight_g samples of one interval in
// one batch, integer milligrams at scale 3, seqs contiguous per bowl. A
// bowl's reading is a slow drift with 0.1 g rms noise, rounded to 0.1 g
// (the figures of the firmware-bridge/sim load-cell model).
type source struct {
	outbox string
	bowls  []string
	hz     float64
	rng    *rand.Rand
	at     time.Time
	seq    map[string]uint64
	grams  map[string]float64
}

func newSource(gw string, bowls []string, hz float64, seed uint64, start time.Time) *source {
	s := &source{outbox: "ob-" + gw, bowls: bowls, hz: hz, rng: rand.New(rand.NewPCG(seed, 7)), at: start,
		seq: map[string]uint64{}, grams: map[string]float64{}}
	for _, b := range bowls {
		s.grams[b] = 200 + 300*s.rng.Float64()
	}
	return s
}

// next encodes the batch of the interval after the previous one.
func (s *source) next(interval time.Duration) ([]byte, batch.Batch, error) {
	n := max(1, int(math.Round(s.hz*interval.Seconds())))
	step := time.Duration(float64(time.Second) / s.hz)
	b := batch.Batch{Outbox: s.outbox, SentAt: s.at.Add(interval)}
	for _, bowl := range s.bowls {
		series := batch.Series{Thing: bowl, Samples: make([]batch.Sample, n)}
		for i := range series.Samples {
			s.seq[bowl]++
			s.grams[bowl] += s.rng.NormFloat64() * 0.002
			reading := math.Round((s.grams[bowl]+s.rng.NormFloat64()*0.1)*10) / 10
			series.Samples[i] = batch.Sample{Seq: s.seq[bowl], At: s.at.Add(time.Duration(i) * step), Kind: "weight_g",
				Value: int64(math.Round(reading * 1000)), Scale: 3}
		}
		b.Things = append(b.Things, series)
	}
	s.at = s.at.Add(interval)
	payload, err := batch.Encode(b)
	return payload, b, err
}
