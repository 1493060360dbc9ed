package subscribers

import (
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bowline-iot/bowline/cloud/adapters"
	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/resources"
)

// BuildConfig is what Build needs.
type BuildConfig struct {
	// AWS is the SDK configuration (awsenv.Load). Required.
	AWS aws.Config
	// Names are the stack's resources. Required.
	Names resources.Names
	// Adapters are the providers' base URLs (adapters.ConfigFromEnv, or
	// fakes.Servers.AdapterConfig in `bowline dev`).
	Adapters adapters.Config
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Built is a Set wired to DynamoDB and the providers, with the engine its
// record_intake emits through (Close it after the worker stops).
type Built struct {
	Set    *Set
	Engine *engine.Engine
}

// Build wires the subscribers the way the worker runs them: a DynamoDB
// client with awsenv.DynamoDBOptions, an engine with the Bowline catalog and
// the HTTP adapters. A provider without a base URL is logged: its calls fail
// terminally (dead letters), they do not loop.
func Build(cfg BuildConfig) (*Built, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	for name, u := range map[string]string{adapters.ShopifyURLEnv: cfg.Adapters.ShopifyURL, adapters.ShippingURLEnv: cfg.Adapters.ShippingURL, adapters.NotifyURLEnv: cfg.Adapters.NotifyURL} {
		if u == "" {
			cfg.Logger.Warn("provider url not set: its subscriptions will dead-letter", "env", name)
		}
	}
	ad := cfg.Adapters
	ad.Logger = cfg.Logger
	clients, err := adapters.New(ad)
	if err != nil {
		return nil, err
	}
	db := dynamodb.NewFromConfig(cfg.AWS, awsenv.DynamoDBOptions)
	eng, err := engine.New(engine.Config{
		Client: db, EventsTable: cfg.Names.EventsTable(), InboxTable: cfg.Names.InboxTable(),
		Catalog: catalog.Bowline(), Logger: cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("subscribers engine: %w", err)
	}
	set, err := New(Config{
		DB: db, Emitter: eng, Names: cfg.Names,
		Shop: clients.Shopify, Shipping: clients.Shipping, Notify: clients.Notify, Logger: cfg.Logger,
	})
	if err != nil {
		eng.Close()
		return nil, err
	}
	return &Built{Set: set, Engine: eng}, nil
}
