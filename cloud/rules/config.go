package rules

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/bowline-iot/bowline/cloud/telemetry"
)

// SQSAPI is the part of the SQS client the error action uses. It must be
// safe for concurrent use; *sqs.Client is.
type SQSAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

var _ SQSAPI = (*sqs.Client)(nil)

// Config configures a Runner. cloud/app's App.Rules fills the AWS fields.
type Config struct {
	// Broker is the MQTT broker URL (tcp://, ssl://). Required.
	Broker string
	// ClientID is the stand-in's MQTT client id, with a persistent
	// session; default "bowline-rules-<stack>". Run one process per id.
	ClientID string
	// Username and Password, when set, authenticate to the broker.
	Username, Password string
	// TLS, when set, is the client's TLS configuration.
	TLS *tls.Config
	// Stack scopes the rule names (resources.Names.Stack). Required.
	Stack string
	// Rules are the rules to run; default All(). Leave TelemetryV1 out to
	// run as a stack whose LegacyTelemetryV1 is "false".
	Rules []Spec
	// Kinesis and Stream are the action's stream. Required.
	Kinesis telemetry.KinesisAPI
	Stream  string
	// Streams, when set, maps a rule's base name to the stream its action
	// writes (Spec.Stream); a rule not in it writes Stream.
	Streams map[string]string
	// Producer tunes the Kinesis producers (one per stream); their Stream
	// and Logger are filled from here. MaxAttempts defaults to 4 (a record
	// refused four times goes to the error queue), MaxInFlight to 2 calls
	// and CallTimeout to 1 minute (kinesis-local; setDefaults says why).
	// Records of several messages share a PutRecords call; each message is
	// still one record, acknowledged once that record is in.
	Producer telemetry.ProducerConfig
	// SQS and ErrorQueueURL are the error action's queue
	// (resources.Names.RuleErrorsQueue). Required.
	SQS           SQSAPI
	ErrorQueueURL string
	// MaxInFlight bounds the messages taken from the broker and not yet
	// settled (record in Kinesis, error message in the queue, or left for
	// redelivery); default 1000. A message past it waits in the broker's
	// session: give the broker a per-client in-flight window of at most
	// this (Mosquitto's max_inflight_messages), so that it holds them
	// rather than paho's socket (docs/telemetry-path.md, "The stand-in").
	MaxInFlight int
	// SendTimeout bounds one error-queue SendMessage; default 10 s.
	SendTimeout time.Duration
	// DrainTimeout bounds how long Run waits, on shutdown, for the records
	// in progress; default 15 s. What is still unacknowledged then stays
	// in the broker's session and is redelivered.
	DrainTimeout time.Duration
	// Now is the rules engine's clock (timestamp()); default time.Now.
	Now func() time.Time
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Observer is told about every message (Metrics); default
	// NopObserver. The Runner's Counts are kept either way.
	Observer Observer
}

// Defaults of Config.
const (
	// DefaultMaxAttempts is the Producer's MaxAttempts unless Config sets
	// it.
	DefaultMaxAttempts = 4
	// DefaultMaxInFlight is MaxInFlight unless Config sets it: two full
	// PutRecords calls' worth.
	DefaultMaxInFlight = 1000
)

// setDefaults fills the zero fields with their defaults, and the
// Producer's Stream and Logger from here.
func (c *Config) setDefaults() {
	if c.ClientID == "" && c.Stack != "" {
		c.ClientID = "bowline-rules-" + c.Stack
	}
	if c.Rules == nil {
		c.Rules = All()
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.SendTimeout == 0 {
		c.SendTimeout = 10 * time.Second
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = 15 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}
	c.Producer.Stream = c.Stream
	if c.Producer.Logger == nil {
		c.Producer.Logger = c.Logger
	}
	if c.Producer.MaxAttempts == 0 {
		c.Producer.MaxAttempts = DefaultMaxAttempts
	}
	// The stand-in writes to kinesis-local, which parses one call at a
	// time: more calls at once only make each slower, and a call that
	// times out is still written, so its retry is a duplicate. Two calls
	// keep it busy; a minute covers a full call on a loaded machine.
	if c.Producer.MaxInFlight == 0 {
		c.Producer.MaxInFlight = 2
	}
	if c.Producer.CallTimeout == 0 {
		c.Producer.CallTimeout = time.Minute
	}
}

// Validate checks the configuration; it does not change it. A nil Rules
// stands for All().
func (c Config) Validate() error {
	var missing []string
	for name, empty := range map[string]bool{
		"Broker": c.Broker == "", "Stack": c.Stack == "", "Kinesis": c.Kinesis == nil,
		"Stream": c.Stream == "", "SQS": c.SQS == nil, "ErrorQueueURL": c.ErrorQueueURL == "",
	} {
		if empty {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing) // the map's order is random
		return fmt.Errorf("rules: %v required", missing)
	}
	if c.Rules != nil && len(c.Rules) == 0 {
		return errors.New("rules: no rule to run")
	}
	seen := map[string]bool{}
	for _, s := range c.Rules {
		if err := s.Validate(); err != nil {
			return fmt.Errorf("rules: %w", err)
		}
		if seen[s.Base] {
			return fmt.Errorf("rules: rule %s given twice", s.Base)
		}
		seen[s.Base] = true
	}
	if c.MaxInFlight < 0 {
		return fmt.Errorf("rules: MaxInFlight %d: want 1 or more", c.MaxInFlight)
	}
	if c.SendTimeout < 0 || c.DrainTimeout < 0 {
		return errors.New("rules: SendTimeout and DrainTimeout must be positive")
	}
	p := c.Producer
	p.Stream = c.Stream
	if err := p.Validate(); err != nil {
		return fmt.Errorf("rules: %w", err)
	}
	return nil
}
