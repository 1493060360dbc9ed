package api

import (
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/reconcile"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/resources"
)

// BuildConfig is what Build needs beyond the AWS configuration.
type BuildConfig struct {
	// AWS is the SDK configuration (awsenv.Load). Required.
	AWS aws.Config
	// Names are the stack's resources. Required.
	Names resources.Names
	// Settings are the tokens and the webhook secret (SettingsFromEnv).
	Settings Settings
	// Registry holds the API's and the engine's metrics; default a fresh
	// one with the Go runtime and process collectors.
	Registry *prometheus.Registry
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Built is an API wired to DynamoDB and SQS, with the engine it emits
// through. Close the engine when the API has stopped.
type Built struct {
	API    *API
	Engine *engine.Engine
}

// Build wires an API the way `bowline api` and `bowline dev` run it: a
// DynamoDB client built with awsenv.DynamoDBOptions, an engine with the
// Bowline catalog and Prometheus metrics, and the StackReconciler (engine/reconcile).
func Build(cfg BuildConfig) (*Built, error) {
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
		cfg.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	db := dynamodb.NewFromConfig(cfg.AWS, awsenv.DynamoDBOptions)
	cat := catalog.Bowline()
	em, err := engine.NewMetrics(cfg.Registry)
	if err != nil {
		return nil, fmt.Errorf("api engine metrics: %w", err)
	}
	eng, err := engine.New(engine.Config{
		Client: db, EventsTable: cfg.Names.EventsTable(), InboxTable: cfg.Names.InboxTable(),
		Catalog: cat, Logger: cfg.Logger, Observer: em,
	})
	if err != nil {
		return nil, fmt.Errorf("api engine: %w", err)
	}
	letters, err := deadletter.New(db, cfg.Names.DeadLettersTable(), nil)
	if err != nil {
		eng.Close()
		return nil, err
	}
	queue := sqs.NewFromConfig(cfg.AWS)
	rec := &StackReconciler{
		Config: reconcile.Config{
			Chains: engine.NewVerifier(db, cfg.Names.EventsTable(), 0), DeadLetters: letters, Queue: queue,
			Unsettled: reconcile.InboxCheck{DB: db, EventsTable: cfg.Names.EventsTable(), InboxTable: cfg.Names.InboxTable(), Subscriptions: cat.Subscriptions},
		},
		Queue: queue, DLQName: cfg.Names.EventsDLQ(),
	}
	a, err := New(Config{
		Emitter: eng, DB: db, Names: cfg.Names,
		Tokens: cfg.Settings.Tokens, OpsToken: cfg.Settings.OpsToken, WebhookSecret: cfg.Settings.WebhookSecret,
		Reconciler: rec, Registerer: cfg.Registry, Gatherer: cfg.Registry, Logger: cfg.Logger,
	})
	if err != nil {
		eng.Close()
		return nil, err
	}
	return &Built{API: a, Engine: eng}, nil
}
