package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"
)

// Kinesis limits of one PutRecords call and one record.
const (
	MaxPutRecords     = 500
	MaxPutBytes       = 5 << 20
	MaxKinesisRecord  = 1 << 20
	maxPartitionKeyLn = 256
)

// KinesisAPI is the part of the Kinesis client the producer uses. It must be
// safe for concurrent use; *kinesis.Client is.
type KinesisAPI interface {
	PutRecords(ctx context.Context, in *kinesis.PutRecordsInput, opts ...func(*kinesis.Options)) (*kinesis.PutRecordsOutput, error)
}

var _ KinesisAPI = (*kinesis.Client)(nil)

// ProducerConfig configures a Producer. Zero fields take the defaults.
type ProducerConfig struct {
	// Stream is the Kinesis stream name (resources.Names.TelemetryStream).
	// Required.
	Stream string
	// MaxRecords bounds the records of one PutRecords call; default and
	// maximum 500.
	MaxRecords int
	// MaxBytes bounds data plus partition keys of one call; default and
	// maximum 5 MiB.
	MaxBytes int
	// Linger is how long a batch waits for more records after its first;
	// default 20 ms.
	Linger time.Duration
	// MaxInFlight bounds concurrent PutRecords calls; default 4. The
	// producer starts there and adapts below it (AIMD, see limiter) when
	// Kinesis times out or throttles. When all are busy, Put blocks
	// (backpressure to MQTT).
	MaxInFlight int
	// BackoffBase and BackoffMax shape the full-jitter exponential backoff
	// between retries of failed or throttled records; defaults 50 ms, 5 s.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// MaxAttempts bounds the PutRecords calls that carry one record: a
	// record still refused (or whose calls all failed) after that many is
	// given up and its done callback gets ErrRetriesExhausted. Default 0:
	// no bound, a record is retried until Close (ingest acknowledges only
	// what Kinesis has, so it never gives up). The rules stand-in bounds it
	// and sends what it gives up on to its error queue.
	MaxAttempts int
	// CallTimeout bounds one PutRecords call; default 15 s. After a
	// timeout the next call gets twice as long, up to 8 times this; a
	// clean call resets it.
	CallTimeout time.Duration
	// Logger; default slog.Default().
	Logger *slog.Logger
	// Observer is told about calls and retries; default NopObserver.
	Observer Observer
}

// Observer observes the producer (metrics). Calls come from many
// goroutines and must not block. Embed NopObserver to observe only some
// calls.
type Observer interface {
	// PutRecords reports one call: records sent, bytes sent, records that
	// failed (per-record error codes) and the call error, if any.
	PutRecords(records, bytes, failed int, err error, took time.Duration)
	// RecordRetried reports a record sent again after code (an error code,
	// or "call_error").
	RecordRetried(code string)
	// InFlightLimit reports the producer's adaptive limit on calls in
	// flight whenever it changes (a gauge that shows Kinesis pushing
	// back).
	InFlightLimit(n int)
}

// NopObserver observes nothing; embed it to observe only some calls.
type NopObserver struct{}

var _ Observer = NopObserver{}

func (NopObserver) PutRecords(int, int, int, error, time.Duration) {}
func (NopObserver) RecordRetried(string)                           {}
func (NopObserver) InFlightLimit(int)                              {}

// setDefaults fills the zero fields with their defaults.
func (c *ProducerConfig) setDefaults() {
	if c.MaxRecords == 0 {
		c.MaxRecords = MaxPutRecords
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = MaxPutBytes
	}
	if c.Linger == 0 {
		c.Linger = 20 * time.Millisecond
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = 4
	}
	if c.BackoffBase == 0 {
		c.BackoffBase = 50 * time.Millisecond
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = 5 * time.Second
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = 15 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}
}

// Validate checks the configuration; it does not change it. Zero fields
// are valid: they stand for their defaults.
func (c ProducerConfig) Validate() error {
	c.setDefaults()
	if c.Stream == "" {
		return errors.New("telemetry producer: Stream is required")
	}
	if c.MaxRecords < 1 || c.MaxRecords > MaxPutRecords {
		return fmt.Errorf("telemetry producer: MaxRecords %d not in 1..%d", c.MaxRecords, MaxPutRecords)
	}
	if c.MaxBytes < MaxKinesisRecord+maxPartitionKeyLn || c.MaxBytes > MaxPutBytes {
		return fmt.Errorf("telemetry producer: MaxBytes %d not in %d..%d", c.MaxBytes, MaxKinesisRecord+maxPartitionKeyLn, MaxPutBytes)
	}
	if c.MaxAttempts < 0 {
		return fmt.Errorf("telemetry producer: MaxAttempts %d: want 0 (no bound) or more", c.MaxAttempts)
	}
	if c.Linger < 0 || c.MaxInFlight < 1 || c.BackoffBase < 0 || c.BackoffMax < c.BackoffBase || c.CallTimeout < 0 {
		return errors.New("telemetry producer: Linger, MaxInFlight, BackoffBase, BackoffMax and CallTimeout must be positive, BackoffMax >= BackoffBase")
	}
	return nil
}
