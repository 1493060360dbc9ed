package bridge_test

import (
	"context"
	"sync"

	"github.com/bowline-iot/bowline/firmware-bridge/bridge"
	"github.com/bowline-iot/bowline/firmware-bridge/frame"
)

// memSink records every delivered record in delivery order.
type memSink struct {
	mu      sync.Mutex
	records []bridge.Record
	calls   int
}

var _ bridge.Sink = (*memSink)(nil)

func (s *memSink) Deliver(_ context.Context, batch []bridge.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records = append(s.records, batch...)
	s.calls++
	return nil
}

func (s *memSink) snapshot() []bridge.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]bridge.Record(nil), s.records...)
}

// reading is the i-th reading of the test stream: all data frame types.
func reading(i int) frame.Body {
	switch i % 10 {
	case 3:
		return frame.Temperature{CentiCelsius: int16(2000 + i%500)}
	case 5:
		return frame.TagSeen{Tag: "900215000123456", RSSI: int8(-(i % 90))}
	case 7:
		return frame.Battery{Millivolts: uint16(3600 + i%600), Percent: uint8(i % 101), Charging: i%2 == 0}
	case 8:
		return frame.Lid{State: frame.LidState(i % 3)}
	case 9:
		if i%100 == 99 {
			return frame.Fault{Code: frame.FaultSensorDrift, Detail: "drift"}
		}
	}
	return frame.WeightBatch{RateHz: 50, Milligrams: []int32{int32(i), int32(i) + 1, int32(i) + 2, -int32(i), 412500}}
}
