package agent

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bowline-iot/bowline/edge/detect"
	"github.com/bowline-iot/bowline/edge/outbox"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/firmware-bridge/bridge"
	"github.com/bowline-iot/bowline/firmware-bridge/frame"
)

// Appender is the outbox as the sink needs it.
type Appender interface {
	// Append makes entries and state durable in one transaction.
	Append(ctx context.Context, entries []outbox.Entry, state map[string][]byte) error
	// State returns a value stored by Append, or nil.
	State(key string) ([]byte, error)
}

var _ Appender = (*outbox.Outbox)(nil)

// Sample kinds written to the telemetry lane.
const (
	KindWeight       = "weight_g"
	KindTemperature  = "temperature_c"
	KindBattery      = "battery_pct"
	KindBatteryMV    = "battery_mv"
	KindLid          = "lid_open"
	KindTagRSSI      = "tag_rssi"
	TypeDeviceFault  = wire.TypeDeviceFault
	TypeCounterReset = wire.TypeCounterReset
)

// ErrDeviceRefused is a device whose records the sink will not store: it
// has no thing name that may be published (see ThingFunc). Deliver returns
// it, so the bridge acknowledges nothing and the readings stay on the MCU
// (docs/contract.md, "Thing names at the gateway").
var ErrDeviceRefused = errors.New("device refused")

// ThingFunc maps a device id to the thing name its records are published
// under, or returns an error saying why the device has none.
type ThingFunc func(device string) (string, error)

// maxRefusedLogged bounds the device ids remembered as already logged.
const maxRefusedLogged = 256

// Sink is the bridge.Sink that makes records durable in the outbox.
type Sink struct {
	out    Appender
	thing  ThingFunc
	detCfg detect.Config
	log    *slog.Logger

	refusedN atomic.Uint64 // deliveries refused (ErrDeviceRefused)

	mu      sync.Mutex
	devices map[string]*device
	logged  map[string]bool // refused device ids already logged
}

var _ bridge.Sink = (*Sink)(nil)

type device struct {
	mu      sync.Mutex // Deliver is never concurrent per device, but be safe
	thing   string
	hasLast bool
	epoch   uint32 // boot epoch of last (0: a firmware without epochs)
	last    uint32
	det     *detect.Detector
	seen    time.Time
}

// NewSink returns a Sink writing to out; thing maps a device id to its
// thing name (nil: the device id). Whatever thing returns must also pass
// wire.CheckName, or the device is refused.
func NewSink(out Appender, thing ThingFunc, detCfg detect.Config) (*Sink, error) {
	if thing == nil {
		thing = func(d string) (string, error) { return d, nil }
	}
	if _, err := detect.New(detCfg); err != nil {
		return nil, err
	}
	return &Sink{out: out, thing: thing, detCfg: detCfg, log: slog.Default(), devices: map[string]*device{}, logged: map[string]bool{}}, nil
}

// SetLogger sets where refused devices are logged. Default slog.Default().
func (s *Sink) SetLogger(l *slog.Logger) { s.log = l }

// Refused counts deliveries refused with ErrDeviceRefused (each retry of
// the bridge counts again).
func (s *Sink) Refused() uint64 { return s.refusedN.Load() }

// thingOf returns dev's thing name, or an error wrapping ErrDeviceRefused
// that names the device and the rule; it logs a device's first refusal.
func (s *Sink) thingOf(dev string) (string, error) {
	thing, err := s.thing(dev)
	if err == nil {
		err = wire.CheckName(fmt.Sprintf("thing of device %q", dev), thing)
	}
	if err == nil {
		return thing, nil
	}
	s.refusedN.Add(1)
	err = fmt.Errorf("device %q: %w: %w", dev, ErrDeviceRefused, err)
	if !s.logged[dev] { // s.mu is held
		if len(s.logged) < maxRefusedLogged {
			s.logged[dev] = true
		}
		s.log.Error("bowl refused: its records are not stored or acknowledged; name it in the things map", "device", dev, "err", err)
	}
	return "", err
}

func lastKey(dev string) string   { return "last_seq/" + dev }
func detectKey(dev string) string { return "detect/" + dev }

func (s *Sink) device(dev string) (*device, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.devices[dev]; ok {
		return d, nil
	}
	thing, err := s.thingOf(dev)
	if err != nil {
		return nil, err
	}
	d := &device{thing: thing}
	det, err := detect.New(s.detCfg)
	if err != nil {
		return nil, err
	}
	d.det = det
	if v, err := s.out.State(lastKey(dev)); err != nil {
		return nil, fmt.Errorf("load last seq of %s: %w", dev, err)
	} else {
		d.hasLast, d.epoch, d.last = decodeLast(v)
	}
	if v, err := s.out.State(detectKey(dev)); err != nil {
		return nil, fmt.Errorf("load detector state of %s: %w", dev, err)
	} else if v != nil {
		if err := d.det.Restore(v); err != nil {
			return nil, fmt.Errorf("device %s: %w", dev, err)
		}
	}
	s.devices[dev] = d
	return d, nil
}

// LastSeen returns when each device last delivered a record.
func (s *Sink) LastSeen() map[string]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]time.Time{}
	for k, d := range s.devices {
		d.mu.Lock()
		out[k] = d.seen
		d.mu.Unlock()
	}
	return out
}

// Deliver implements bridge.Sink.
func (s *Sink) Deliver(ctx context.Context, batch []bridge.Record) error {
	// The bridge runs one device per link; group anyway in case.
	for start := 0; start < len(batch); {
		end := start + 1
		for end < len(batch) && batch[end].Device == batch[start].Device {
			end++
		}
		if err := s.deliverDevice(ctx, batch[start].Device, batch[start:end]); err != nil {
			return err
		}
		start = end
	}
	return nil
}

func (s *Sink) deliverDevice(ctx context.Context, dev string, recs []bridge.Record) error {
	d, err := s.device(dev)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	det := d.det.Clone()
	hasLast, epoch, last := d.hasLast, d.epoch, d.last
	var entries []outbox.Entry
	for _, r := range recs {
		if hasLast {
			if !sameCounter(epoch, last, r) {
				entries = append(entries, counterReset(d.thing, epoch, last, r))
			} else if int32(r.Seq-last) <= 0 {
				continue // stored before a restart; the MCU sent it again
			}
		}
		hasLast, epoch, last = true, r.Epoch, r.Seq
		entries = s.convert(entries, d.thing, det, r)
	}
	if !hasLast || (d.hasLast && last == d.last && epoch == d.epoch) {
		return nil // only duplicates
	}
	snap, err := det.Snapshot()
	if err != nil {
		return fmt.Errorf("device %s: snapshot detector: %w", dev, err)
	}
	state := map[string][]byte{lastKey(dev): encodeLast(epoch, last), detectKey(dev): snap}
	if err := s.out.Append(ctx, entries, state); err != nil {
		return fmt.Errorf("device %s: append %d records: %w", dev, len(entries), err)
	}
	d.det, d.hasLast, d.epoch, d.last, d.seen = det, true, epoch, last, time.Now()
	return nil
}

// encodeLast is the stored dedup watermark: the seq alone (4 bytes, as
// before boot epochs) for epoch 0, else epoch and seq (8 bytes).
func encodeLast(epoch, seq uint32) []byte {
	if epoch == 0 {
		return binary.BigEndian.AppendUint32(nil, seq)
	}
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, epoch), seq)
}

func decodeLast(v []byte) (ok bool, epoch, seq uint32) {
	switch len(v) {
	case 4:
		return true, 0, binary.BigEndian.Uint32(v)
	case 8:
		return true, binary.BigEndian.Uint32(v), binary.BigEndian.Uint32(v[4:])
	}
	return false, 0, 0
}

// sameCounter reports whether r continues the counter whose last stored
// seq is last in epoch. The same epoch does. Another epoch is a reset (a
// new board or a flash erase started the counter again), except a change
// to or from epoch 0 whose seq moved forward: that is a firmware update
// that adopted (or dropped) boot epochs and kept its counter in flash.
// A rebooted MCU always resumes above the seqs it sent (PROTOCOL.md), so
// a seq that went back under a new epoch cannot be a retransmission.
func sameCounter(epoch, last uint32, r bridge.Record) bool {
	if r.Epoch == epoch {
		return true
	}
	return (epoch == 0 || r.Epoch == 0) && int32(r.Seq-last) > 0
}

// counterReset is the bowl.counter_reset event raised before the first
// record of a new counter.
func counterReset(thing string, oldEpoch, lastSeq uint32, r bridge.Record) outbox.Entry {
	d := wire.CounterReset{OldEpoch: uint64(oldEpoch), NewEpoch: uint64(r.Epoch), LastSeq: uint64(lastSeq), FirstSeq: uint64(r.Seq)}
	data, _ := json.Marshal(d) // 32-bit numbers only: cannot fail, within every bound
	return outbox.Entry{Lane: outbox.Events, Thing: thing, At: r.At, Type: d.EventType(),
		ID: fmt.Sprintf("counter_reset-%08x-%d", r.Epoch, r.Seq), Data: data}
}

// epochID makes an event id derived from seqs unique across counters: ids
// of a record with a boot epoch carry it ("meal-17.0-e9abc0def"), so the
// meals of a reset counter do not collide with the old counter's in the
// cloud's dedup by (thing, id). Epoch 0 keeps the ids of before.
func epochID(id string, epoch uint32) string {
	if epoch == 0 {
		return id
	}
	return fmt.Sprintf("%s-e%08x", id, epoch)
}

func (s *Sink) convert(entries []outbox.Entry, thing string, det *detect.Detector, r bridge.Record) []outbox.Entry {
	tel := func(at time.Time, kind string, v float64) {
		entries = append(entries, outbox.Entry{Lane: outbox.Telemetry, Thing: thing, At: at, Type: kind, Value: v})
	}
	event := func(at time.Time, id string, d wire.Data) {
		data, err := wire.Encode(d)
		if err != nil {
			// A detector bug: the cloud would dead-letter it; say so here.
			s.log.Error("bowl event not stored: its data breaks the contract", "thing", thing, "id", id, "err", err)
			return
		}
		entries = append(entries, outbox.Entry{Lane: outbox.Events, Thing: thing, At: at, Type: d.EventType(), ID: id, Data: data})
	}
	events := func(evs []detect.Event) {
		for _, e := range evs {
			event(e.At, epochID(e.ID, r.Epoch), e.Data)
		}
	}
	switch b := r.Body.(type) {
	case frame.WeightBatch:
		rate := max(1, int(b.RateHz))
		for i, mg := range b.Milligrams {
			at := r.At.Add(time.Duration(i) * time.Second / time.Duration(rate))
			g := float64(mg) / 1000
			tel(at, KindWeight, g)
			events(det.Weight(detect.Ref{Seq: r.Seq, Index: uint16(i)}, at, g))
		}
	case frame.TagSeen:
		tel(r.At, KindTagRSSI, float64(b.RSSI))
		events(det.Tag(detect.Ref{Seq: r.Seq}, r.At, b.Tag))
	case frame.Temperature:
		tel(r.At, KindTemperature, float64(b.CentiCelsius)/100)
	case frame.Battery:
		tel(r.At, KindBattery, float64(b.Percent))
		tel(r.At, KindBatteryMV, float64(b.Millivolts))
	case frame.Lid:
		tel(r.At, KindLid, float64(b.State))
	case frame.Fault:
		event(r.At, epochID("fault-"+strconv.FormatUint(uint64(r.Seq), 10), r.Epoch), wire.DeviceFault{Code: wire.NumericFault(uint64(b.Code)), Detail: cleanDetail(b.Detail)})
	}
	return entries
}
