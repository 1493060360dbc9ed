package app_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/bowline-iot/bowline/cloud/adapters"
	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
)

// bindForTest binds the cloud subscribers of an App on the test stack
// (providers without URLs), for tests that build consumers but run no
// handler. wrap is Bind's.
func bindForTest(t *testing.T, wrap func(string, engine.Handler) engine.Handler) (engine.Catalog, error) {
	t.Helper()
	a, err := app.Open(app.Config{AWS: lstest.AWSConfig(t), Names: lstest.Names(t), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	set, err := a.Subscribers(adapters.Config{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return app.Bind(set, nil, wrap)
}

// Bind binds no stand-in: without the cloud subscribers it fails with
// ErrUnhandled naming every DURABLE and BEST_EFFORT subscription, so a
// subscription with no real handler cannot reach `bowline worker`.
func TestBindRefusesSubscriptionsWithoutAHandler(t *testing.T) {
	_, err := app.Bind(nil, nil, nil)
	if !errors.Is(err, app.ErrUnhandled) {
		t.Fatalf("Bind(no subscribers) = %v; want ErrUnhandled", err)
	}
	for _, s := range catalog.Bowline().Subscriptions {
		if (s.Lane == engine.Durable || s.Lane == engine.BestEffort) && !strings.Contains(err.Error(), s.Name) {
			t.Errorf("Bind error %q does not name %s", err, s.Name)
		}
	}
}

// Every DURABLE and BEST_EFFORT subscription of the catalog has a cloud
// subscriber (device_changes, which had only a logging stub, is gone from
// the catalog), and Bind binds exactly those.
func TestEveryConsumerSubscriptionHasACloudSubscriber(t *testing.T) {
	wrapped := map[string]int{}
	bound, err := bindForTest(t, func(sub string, h engine.Handler) engine.Handler {
		wrapped[sub]++
		return h
	})
	if err != nil {
		t.Fatalf("Bind(cloud subscribers) = %v; want every consumer subscription bound", err)
	}
	for _, s := range bound.Subscriptions {
		consumer := s.Lane == engine.Durable || s.Lane == engine.BestEffort
		if consumer && (s.Handler == nil || wrapped[s.Name] != 1) {
			t.Errorf("subscription %s: handler %v, wrapped %d times; want a handler wrapped once", s.Name, s.Handler != nil, wrapped[s.Name])
		}
		if s.Name == "device_changes" {
			t.Errorf("catalog still declares device_changes")
		}
	}
	if _, ok := wrapped[catalog.SubRecordIntake]; !ok {
		t.Errorf("Bind did not bind %s", catalog.SubRecordIntake)
	}
}
