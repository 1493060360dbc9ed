package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/bowline-iot/bowline/cloud/adapters"
	"github.com/bowline-iot/bowline/cloud/subscribers"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/resources"
)

// The cloud subscribers join the worker's registry: every subscription
// cloud/subscribers handles gets its real handler; the rest keep the
// default.
func init() {
	base := subscriberHandlers
	subscriberHandlers = func(log *slog.Logger) map[string]engine.Handler {
		hs := base(log)
		cloud, err := cloudSubscribers(log)
		if err != nil {
			// The worker has started nothing yet; refusing to run beats
			// running every subscription with a logging stub.
			fmt.Fprintf(os.Stderr, "bowline worker: cloud subscribers: %v\n", err)
			os.Exit(1)
		}
		for name, h := range cloud {
			hs[name] = h
		}
		return hs
	}
}

// cloudSubscribers builds the handlers from the environment: BOWLINE_STACK,
// the AWS SDK variables and BOWLINE_SHOPIFY_URL, BOWLINE_SHIPPING_URL,
// BOWLINE_NOTIFY_URL.
func cloudSubscribers(log *slog.Logger) (map[string]engine.Handler, error) {
	names, err := resources.FromEnv()
	if err != nil {
		return nil, err
	}
	cfg, err := awsenv.Load(context.Background())
	if err != nil {
		return nil, err
	}
	b, err := subscribers.Build(subscribers.BuildConfig{AWS: cfg, Names: names, Adapters: adapters.ConfigFromEnv(), Logger: log})
	if err != nil {
		return nil, err
	}
	return b.Set.Handlers(), nil
}
