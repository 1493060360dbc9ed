package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/guard"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/inbox"
	"github.com/bowline-iot/bowline/internal/awscalls"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/resources"
)

// Config selects the stack an App runs on.
type Config struct {
	// AWS is the SDK configuration (awsenv.Load). Required.
	AWS aws.Config
	// Names are the stack's resources. Required.
	Names resources.Names
	// Registry receives every part's metrics; default a fresh one with the
	// Go runtime and process collectors.
	Registry *prometheus.Registry
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Part names what this process runs (the `bowline` command: api,
	// worker, ingest, ...). With call recording on, the calls of the App's
	// own clients and of its engine are recorded under it; Part hands out
	// views labelled for the other parts. Default PartEngine: a process
	// that runs several parts on one engine (`bowline dev`).
	Part string
	// Calls records every AWS call (docs/iam.md). Default: the recorder
	// awscalls.Env (BOWLINE_RECORD_CALLS) names, none when it is unset.
	Calls *awscalls.Recorder
}

// setDefaults fills the zero fields with their defaults; the call
// recorder's comes from the environment, so it may fail.
func (c *Config) setDefaults() error {
	if c.Registry == nil {
		c.Registry = NewRegistry()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Part == "" {
		c.Part = PartEngine
	}
	if c.Calls == nil {
		rec, err := awscalls.FromEnv()
		if err != nil {
			return fmt.Errorf("app: %w", err)
		}
		c.Calls = rec
	}
	return nil
}

// Validate reports the first missing field; it does not change c.
func (c Config) Validate() error {
	if c.Names.Stack == "" {
		return errors.New("app: Names is required")
	}
	if c.AWS.Region == "" {
		return errors.New("app: AWS config with a region is required")
	}
	return nil
}

// NewRegistry returns a Prometheus registry with the Go runtime and process
// collectors, the one a process serves on /metrics.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// App is one process's view of a stack. Its fields are safe to share; Close
// it after every part built from it has stopped.
type App struct {
	Names    resources.Names
	AWS      aws.Config
	Registry *prometheus.Registry
	Logger   *slog.Logger

	DynamoDB *dynamodb.Client
	SQS      *sqs.Client
	Kinesis  *kinesis.Client
	Streams  *dynamodbstreams.Client

	// Catalog is Bowline's catalog without handlers (see Bind).
	Catalog engine.Catalog
	// Engine is the process's one engine: every emit goes through it.
	Engine      *engine.Engine
	Inbox       *inbox.Store
	DeadLetters *deadletter.Store

	part   string             // the label of this App's calls
	calls  *awscalls.Recorder // nil: not recording
	root   *App               // the App Open returned; nil for it
	shared *shared            // queue URLs and part views, one set per Open
}

// shared is what an App and its part views have in common.
type shared struct {
	mu    sync.Mutex
	urls  map[string]string
	views map[string]*App
	guard *guard.Guard // guardFor's, built on first use
	// metrics are the parts' metrics on the registry, by name (metricsOf).
	metrics map[string]any
}

// Open builds the clients, the engine and the stores. It makes no AWS call:
// queue URLs are resolved on first use.
func Open(cfg Config) (*App, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &App{
		Names: cfg.Names, AWS: cfg.AWS, Registry: cfg.Registry, Logger: cfg.Logger,
		Catalog: catalog.Bowline(),
		part:    cfg.Part, calls: cfg.Calls,
		shared: &shared{urls: map[string]string{}, views: map[string]*App{}, metrics: map[string]any{}},
	}
	a.connect()
	metrics, err := engine.NewMetrics(cfg.Registry)
	if err != nil {
		return nil, fmt.Errorf("app: engine metrics: %w", err)
	}
	a.Engine, err = engine.New(engine.Config{
		Client: a.DynamoDB, EventsTable: cfg.Names.EventsTable(), InboxTable: cfg.Names.InboxTable(),
		Catalog: a.Catalog, Logger: cfg.Logger, Observer: metrics,
	})
	if err != nil {
		return nil, fmt.Errorf("app: engine: %w", err)
	}
	if err := a.stores(); err != nil {
		a.Engine.Close()
		return nil, fmt.Errorf("app: %w", err)
	}
	return a, nil
}

// connect builds the App's clients, recording their calls under a.part
// when recording is on.
func (a *App) connect() {
	cfg := a.calls.Config(a.AWS, awscalls.Label{Part: a.part, Stack: a.Names.Stack})
	a.DynamoDB = dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions)
	a.SQS = sqs.NewFromConfig(cfg)
	a.Kinesis = kinesis.NewFromConfig(cfg)
	a.Streams = dynamodbstreams.NewFromConfig(cfg)
}

// stores builds the inbox and dead-letter stores on a.DynamoDB.
func (a *App) stores() error {
	var err error
	if a.Inbox, err = inbox.New(inbox.Config{Client: a.DynamoDB, Table: a.Names.InboxTable()}); err != nil {
		return err
	}
	a.DeadLetters, err = deadletter.New(a.DynamoDB, a.Names.DeadLettersTable(), nil)
	return err
}

// FromEnv opens the App the mains use for part (the command they run, see
// Config.Part): the stack named by BOWLINE_STACK and the AWS SDK's own
// configuration chain (awsenv.Load). A bad BOWLINE_STACK is reported as
// such, so callers can treat it as bad usage.
func FromEnv(ctx context.Context, part string, log *slog.Logger, reg *prometheus.Registry) (*App, error) {
	names, err := resources.FromEnv()
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	cfg, err := awsenv.Load(ctx)
	if err != nil {
		return nil, err
	}
	return Open(Config{AWS: cfg, Names: names, Registry: reg, Logger: log, Part: part})
}

// ConfigError is a configuration mistake in the environment (not an AWS
// failure).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Close flushes and stops the engine. Call it once, on the App Open
// returned (not on a part view), after every part that emits has stopped.
func (a *App) Close() error {
	a.Engine.Close()
	return nil
}

// QueueURL resolves a queue's URL by name once per App.
func (a *App) QueueURL(ctx context.Context, name string) (string, error) {
	in := &sqs.GetQueueUrlInput{QueueName: aws.String(name)}
	a.shared.mu.Lock()
	u, ok := a.shared.urls[name]
	a.shared.mu.Unlock()
	if ok {
		// Run alone, this part would have asked SQS itself.
		a.calls.Cached(awscalls.Label{Part: a.part, Stack: a.Names.Stack}, sqs.ServiceID, "GetQueueUrl", in, a.AWS.Region)
		return u, nil
	}
	out, err := a.SQS.GetQueueUrl(ctx, in)
	if err != nil {
		return "", fmt.Errorf("queue %s: %w", name, err)
	}
	u = aws.ToString(out.QueueUrl)
	a.shared.mu.Lock()
	a.shared.urls[name] = u
	a.shared.mu.Unlock()
	return u, nil
}

// eventQueues resolves events.fifo and its DLQ.
func (a *App) eventQueues(ctx context.Context) (queue, dlq string, err error) {
	if queue, err = a.QueueURL(ctx, a.Names.EventsQueue()); err != nil {
		return "", "", err
	}
	if dlq, err = a.QueueURL(ctx, a.Names.EventsDLQ()); err != nil {
		return "", "", err
	}
	return queue, dlq, nil
}

// Verifier recomputes hash chains in the events table.
func (a *App) Verifier() *engine.Verifier {
	return engine.NewVerifier(a.DynamoDB, a.Names.EventsTable(), 0)
}
