package main

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/bowline-iot/bowline/cloud/durable"
)

// streamCheck is what the whole telemetry stream holds, read back from
// the start of every shard with durable.DecodeRecord, against what the
// cloud acknowledged.
type streamCheck struct {
	Records, BadRecords int64
	// Samples are the stream's samples, Unique those distinct by (thing,
	// outbox, seq), Duplicates the rest.
	Samples, Unique, Duplicates int64
	// AckedSamples are the samples an ack named; AckedLost those of them
	// that are not in the stream. Must be 0.
	AckedSamples, AckedLost int64
	// LostExamples names a few lost samples.
	LostExamples []string `json:",omitempty"`
	// SentNotInStream are sent samples (acked or not) the stream lacks.
	SentNotInStream int64
	ReadSeconds     float64
}

// seen is a set of seqs of one (thing, outbox) as a bitmap.
type seen struct{ bits []uint64 }

// set marks seq and reports whether it was already marked.
func (s *seen) set(seq uint64) bool {
	w := seq / 64
	if int(w) >= len(s.bits) {
		s.bits = append(s.bits, make([]uint64, int(w)-len(s.bits)+1+len(s.bits)/2)...)
	}
	m := uint64(1) << (seq % 64)
	dup := s.bits[w]&m != 0
	s.bits[w] |= m
	return dup
}

func (s *seen) has(seq uint64) bool {
	w := seq / 64
	return int(w) < len(s.bits) && s.bits[w]&(1<<(seq%64)) != 0
}

// checkStream reads every record of stream and counts, per fleet result,
// the acknowledged samples missing from it.
func checkStream(ctx context.Context, client *kinesis.Client, stream string, fr fleetResult) (streamCheck, error) {
	start := time.Now()
	var c streamCheck
	shards, err := client.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(stream)})
	if err != nil {
		return c, fmt.Errorf("list shards of %s: %w", stream, err)
	}
	var mu sync.Mutex
	sets := map[string]*seen{} // thing + "\x00" + outbox
	data := make(chan []byte, 256)
	var wg sync.WaitGroup
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range data {
				r, err := durable.DecodeRecord(d)
				mu.Lock()
				c.Records++
				if err != nil {
					c.BadRecords++
					mu.Unlock()
					continue
				}
				for _, s := range r.Things {
					k := s.Thing + "\x00" + r.Outbox
					set := sets[k]
					if set == nil {
						set = &seen{}
						sets[k] = set
					}
					for _, x := range s.Samples {
						c.Samples++
						if set.set(x.Seq) {
							c.Duplicates++
						} else {
							c.Unique++
						}
					}
				}
				mu.Unlock()
			}
		}()
	}
	readErr := func() error {
		defer close(data)
		for _, sh := range shards.Shards {
			it, err := client.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(stream), ShardId: sh.ShardId, ShardIteratorType: ktypes.ShardIteratorTypeTrimHorizon})
			if err != nil {
				return fmt.Errorf("shard %s: %w", aws.ToString(sh.ShardId), err)
			}
			iter := it.ShardIterator
			for iter != nil {
				out, err := client.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(10000)})
				if err != nil {
					return fmt.Errorf("shard %s: %w", aws.ToString(sh.ShardId), err)
				}
				for _, r := range out.Records {
					data <- r.Data
				}
				iter = out.NextShardIterator
				if len(out.Records) == 0 && aws.ToInt64(out.MillisBehindLatest) == 0 {
					break
				}
			}
		}
		return nil
	}()
	wg.Wait()
	if readErr != nil {
		return c, readErr
	}
	outbox := func(thing string) string {
		gw, _, _ := strings.Cut(thing, ":")
		return "ob-" + gw
	}
	for thing, rs := range fr.Acked {
		set := sets[thing+"\x00"+outbox(thing)]
		for _, r := range rs {
			for seq := r.First; seq <= r.Last; seq++ {
				c.AckedSamples++
				if set == nil || !set.has(seq) {
					c.AckedLost++
					if len(c.LostExamples) < 5 {
						c.LostExamples = append(c.LostExamples, fmt.Sprintf("%s/%s/%d", thing, outbox(thing), seq))
					}
				}
			}
		}
	}
	for thing, last := range fr.Sent {
		set := sets[thing+"\x00"+outbox(thing)]
		for seq := uint64(1); seq <= last; seq++ {
			if set == nil || !set.has(seq) {
				c.SentNotInStream++
			}
		}
	}
	c.ReadSeconds = time.Since(start).Seconds()
	return c, nil
}
