package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// AckVersion is the "v" of an AckMessage.
const AckVersion = 1

// MaxOutboxIDLen bounds an outbox instance id in bytes.
const MaxOutboxIDLen = 64

// The gateways' default telemetry timing (edge/forward's Config, the
// agent's telemetry.batch_interval and telemetry.ack_timeout). They are
// here, in the contract, because the cloud's consumer sizes its own
// defaults from them (cloud/durable: its ack cadence must be shorter
// than DefaultAckTimeout by more than a batch interval, and its gap
// grace must cover a lost resend, two DefaultAckTimeout), and cloud/ may
// import no other edge package.
const (
	// DefaultBatchInterval is how often a gateway sends a telemetry batch.
	DefaultBatchInterval = time.Minute
	// DefaultAckTimeout is how long telemetry a gateway sent may stay
	// unacknowledged by the cloud before it is sent again.
	DefaultAckTimeout = 45 * time.Minute
)

// AckMessage is what the cloud publishes on a gateway's acknowledgement
// topic (AckTopic): the telemetry seqs that are durable in the stream, per
// thing, for one outbox instance. Only then may the gateway delete them
// (docs/telemetry-path.md).
//
// An ack is idempotent and may repeat: it names ranges, never "up to N",
// so an old ack replayed later deletes nothing that was not already
// durable. A gateway ignores an ack whose Outbox is not its own outbox's
// instance id (a recreated outbox restarts its seqs), and deletes only seqs
// it has sent.
type AckMessage struct {
	V int `json:"v"`
	// Outbox is the instance id of the outbox whose seqs these are.
	Outbox string `json:"outbox"`
	// Things maps a thing to its durable seq ranges, sorted, disjoint and
	// not adjacent (merged).
	Things map[string][]Range `json:"things"`
	// At is the cloud's clock when it published the ack.
	At time.Time `json:"at"`
}

// Range is an inclusive seq range [First, Last], as a two-element JSON
// array.
type Range struct {
	First, Last uint64
}

// MarshalJSON writes [first,last].
func (r Range) MarshalJSON() ([]byte, error) {
	return json.Marshal([2]uint64{r.First, r.Last})
}

// UnmarshalJSON reads [first,last].
func (r *Range) UnmarshalJSON(b []byte) error {
	var a [2]uint64
	if err := json.Unmarshal(b, &a); err != nil {
		return fmt.Errorf("range: want [first,last]: %w", err)
	}
	r.First, r.Last = a[0], a[1]
	return nil
}

// Contains reports whether seq is in r.
func (r Range) Contains(seq uint64) bool { return r.First <= seq && seq <= r.Last }

// ErrBadAck matches every error of DecodeAck.
var ErrBadAck = errors.New("bad ack message")

// EncodeAck encodes m, setting V.
func EncodeAck(m AckMessage) ([]byte, error) {
	m.V = AckVersion
	if err := m.check(); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// DecodeAck decodes and checks an ack message: the version, an outbox id,
// valid thing names, and ranges that are well formed, sorted and disjoint.
func DecodeAck(b []byte) (AckMessage, error) {
	var m AckMessage
	if len(b) > MaxPayload {
		return m, fmt.Errorf("%w: %d bytes, more than %d", ErrBadAck, len(b), MaxPayload)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%w: %w", ErrBadAck, err)
	}
	if m.V != AckVersion {
		return m, fmt.Errorf("%w: version %d; want %d", ErrBadAck, m.V, AckVersion)
	}
	return m, m.check()
}

func (m AckMessage) check() error {
	if m.Outbox == "" || len(m.Outbox) > MaxOutboxIDLen || !ValidName(m.Outbox) {
		return fmt.Errorf("%w: outbox %q: want a name of at most %d bytes", ErrBadAck, m.Outbox, MaxOutboxIDLen)
	}
	things := make([]string, 0, len(m.Things))
	for t := range m.Things {
		things = append(things, t)
	}
	sort.Strings(things)
	for _, t := range things {
		if err := CheckName("thing", t); err != nil {
			return fmt.Errorf("%w: %w", ErrBadAck, err)
		}
		rs := m.Things[t]
		for i, r := range rs {
			if r.First == 0 || r.Last < r.First {
				return fmt.Errorf("%w: thing %s: range %d..%d: want 1 <= first <= last", ErrBadAck, t, r.First, r.Last)
			}
			if i > 0 && r.First <= rs[i-1].Last+1 {
				return fmt.Errorf("%w: thing %s: ranges %d..%d and %d..%d: want sorted, disjoint, merged", ErrBadAck, t, rs[i-1].First, rs[i-1].Last, r.First, r.Last)
			}
		}
	}
	return nil
}

// AckTopic is the acknowledgement topic of gateway gw of tenant:
// cmd/bowline/<tenant>/<gw>/ack. The gateway IoT policy lets a gateway
// subscribe to its own only.
func AckTopic(tenant, gw string) string {
	return cmdPrefix + tenant + "/" + gw + "/" + KindAck
}

// cmdPrefix starts every topic the cloud publishes to a gateway.
const cmdPrefix = "cmd/bowline/"

// ParseAckTopic returns the tenant and gateway of an acknowledgement topic.
func ParseAckTopic(topic string) (tenant, gw string, err error) {
	parts := strings.Split(topic, "/")
	if len(parts) != 5 || parts[0]+"/"+parts[1]+"/" != cmdPrefix || parts[4] != KindAck {
		return "", "", fmt.Errorf("%w: topic %q: want cmd/bowline/<tenant>/<gateway>/ack", ErrBadTopic, topic)
	}
	if err := CheckName("tenant", parts[2]); err != nil {
		return "", "", fmt.Errorf("%w: topic %q: %w", ErrBadTopic, topic, err)
	}
	if err := CheckName("gateway", parts[3]); err != nil {
		return "", "", fmt.Errorf("%w: topic %q: %w", ErrBadTopic, topic, err)
	}
	return parts[2], parts[3], nil
}
