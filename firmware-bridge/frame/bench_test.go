package frame

import (
	"bytes"
	"testing"
)

// benchStream is n encoded frames: weight batches of 50 samples (one
// second of a 50 Hz load cell) with a temperature frame every tenth.
func benchStream(b *testing.B, n int) (stream []byte, samples int) {
	b.Helper()
	for i := 0; i < n; i++ {
		f := Frame{Seq: uint32(i), UptimeMillis: uint32(i * 1000), Body: WeightBatch{RateHz: 50, Milligrams: fullBatch()}}
		if i%10 == 9 {
			f.Body = Temperature{CentiCelsius: 2150}
		} else {
			samples += MaxSamples
		}
		var err error
		if stream, err = AppendEncoded(stream, f); err != nil {
			b.Fatal(err)
		}
	}
	return stream, samples
}

// BenchmarkDecoder measures the stream decoder (COBS, CRC-32C, body
// parsing) per frame; it reports frames/s and samples/s on one core.
func BenchmarkDecoder(b *testing.B) {
	const perLoop = 1000
	stream, samples := benchStream(b, perLoop)
	r := bytes.NewReader(stream)
	d := NewDecoder(r)
	b.SetBytes(int64(len(stream)) / perLoop)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%perLoop == 0 {
			r.Reset(stream)
		}
		if _, err := d.Next(); err != nil {
			b.Fatal(err)
		}
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N)/sec, "frames/s")
	b.ReportMetric(float64(b.N)*float64(samples)/perLoop/sec, "samples/s")
}

// BenchmarkEncode measures AppendEncoded of a full weight batch.
func BenchmarkEncode(b *testing.B) {
	f := Frame{Seq: 1, UptimeMillis: 1000, Body: WeightBatch{RateHz: 50, Milligrams: fullBatch()}}
	buf := make([]byte, 0, MaxEncoded+1)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		var err error
		if buf, err = AppendEncoded(buf[:0], f); err != nil {
			b.Fatal(err)
		}
	}
}
