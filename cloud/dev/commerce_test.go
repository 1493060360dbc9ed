package dev_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/cloud/dev"
	"github.com/bowline-iot/bowline/cloud/fakes"
	"github.com/bowline-iot/bowline/engine/reconcile"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/provision"
	"github.com/bowline-iot/bowline/internal/resources"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// TestOrderAndWebhookReachEachProviderOnce is the commerce path end to
// end: POST /v1/orders, a signed payment webhook, the relay from the events
// stream to events.fifo, the worker with the inbox, and the fake providers.
func TestOrderAndWebhookReachEachProviderOnce(t *testing.T) {
	ctx := context.Background()
	token, tenant := "tok-"+randHex(8), "shop-"+randHex(4)
	settings := api.Settings{Tokens: map[string]string{token: tenant}, WebhookSecret: "whsec-" + randHex(8), OpsToken: "ops-" + randHex(8)}
	p, err := dev.StartCommerce(ctx, dev.CommerceConfig{
		AWS: lstest.AWSConfig(t), Names: freshStack(t), Settings: settings,
		Logger: testkit.Logger(t, slog.LevelWarn),
	})
	if err != nil {
		t.Fatalf("StartCommerce: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Commerce.Close: %v", err)
		}
	})
	c := &dev.Client{URL: p.APIURL, Token: token, Secret: settings.WebhookSecret}
	set := p.Fakes.Set
	providers := map[*fakes.Fake]string{set.Shopify: "shopify_mirror", set.Shipping: "book_shipment", set.Notify: "notify_buyer"}

	pay := func(name string) string {
		t.Helper()
		id, err := c.Order(ctx, "cust-"+name, "pet-"+name, 4999)
		if err != nil {
			t.Fatalf("order %s: %v", name, err)
		}
		ev, err := c.Pay(ctx, id, "pay_"+randHex(6), 4999)
		if err != nil {
			t.Fatalf("pay %s: %v", name, err)
		}
		return ev
	}
	settled := func(ev string) func() bool {
		return func() bool {
			for f, sub := range providers {
				if _, ok := f.CallsWith(ev + ":" + sub); ok == 0 {
					return false
				}
			}
			return true
		}
	}

	// 1. The happy path: one call per subscription.
	ev1 := pay("one")
	testkit.WaitFor(t, "every provider to see "+ev1, 90*time.Second, settled(ev1))

	// 2. The carrier is down once (503): the worker retries through SQS,
	// only book_shipment runs again, with the same key.
	set.Shipping.FailNext(1, http.StatusServiceUnavailable)
	ev2 := pay("two")
	testkit.WaitFor(t, "every provider to see "+ev2, 90*time.Second, settled(ev2))

	// Let a late duplicate show itself before counting: the queue is
	// drained when a fresh event is fully handled after ours.
	ev3 := pay("three")
	testkit.WaitFor(t, "every provider to see "+ev3, 90*time.Second, settled(ev3))

	for f, sub := range providers {
		for _, ev := range []string{ev1, ev2, ev3} {
			all, ok := f.CallsWith(ev + ":" + sub)
			wantAll := 1
			if ev == ev2 && f == set.Shipping {
				wantAll = 2
			}
			if ok != 1 || all != wantAll {
				t.Errorf("%s calls for %s:%s = %d (%d succeeded); want %d (1 succeeded)", f.Kind(), ev, sub, all, ok, wantAll)
			}
		}
	}
	// 4. The notification service refuses the request (400, terminal):
	// notify_buyer is dead-lettered at once, the other two still run once,
	// and the operator's reconcile report shows the dead letter and the
	// event in the DLQ.
	before := reconcileReport(t, p.APIURL, settings.OpsToken)
	set.Notify.FailAlways(http.StatusBadRequest)
	ev4 := pay("four")
	testkit.WaitFor(t, "shopify and shipping to see "+ev4, 90*time.Second, func() bool {
		_, a := set.Shopify.CallsWith(ev4 + ":shopify_mirror")
		_, b := set.Shipping.CallsWith(ev4 + ":book_shipment")
		return a == 1 && b == 1
	})
	var rep reconcile.Report
	testkit.WaitFor(t, "the dead letter in reconcile", 90*time.Second, func() bool {
		rep = reconcileReport(t, p.APIURL, settings.OpsToken)
		return rep.DeadLetters == before.DeadLetters+1 && rep.DLQDepth == before.DLQDepth+1
	})
	if all, ok := set.Notify.CallsWith(ev4 + ":notify_buyer"); all != 1 || ok != 0 {
		t.Errorf("notify calls for %s = %d (%d ok); want 1 refused call, no retry of a terminal error", ev4, all, ok)
	}
	intact := false
	for _, tr := range rep.Tenants {
		if tr.Tenant == tenant {
			intact = tr.ChainIntact && tr.Events == 8
		}
	}
	if !intact {
		t.Errorf("reconcile tenants = %+v; want %s with 8 events (4 orders, 4 payments), chain intact", rep.Tenants, tenant)
	}

	for _, f := range set.All() {
		for _, call := range f.Calls() {
			if !strings.Contains(call.IdempotencyKey, ":") {
				t.Errorf("%s call without an event:subscription key: %q", f.Kind(), call.IdempotencyKey)
			}
		}
	}
}

func reconcileReport(t *testing.T, base, token string) reconcile.Report {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/ops/reconcile", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	defer resp.Body.Close()
	var rep reconcile.Report
	if resp.StatusCode != 200 {
		t.Fatalf("reconcile = %d; want 200", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		t.Fatalf("reconcile body: %v", err)
	}
	return rep
}

// freshStack provisions tables and queues under a new prefix, so that this
// run's relay, queue and dead letters are its own: a worker stopped by an
// earlier run (go test -count=N) may still hold a message of the shared
// queue invisible for the visibility timeout.
func freshStack(t *testing.T) resources.Names {
	t.Helper()
	names, err := resources.New("p" + randHex(4))
	if err != nil {
		t.Fatal(err)
	}
	_, err = provision.Provision(context.Background(), lstest.AWSConfig(t), names, provision.Options{Parts: []provision.Part{provision.Tables, provision.Queues}})
	if err != nil {
		t.Fatalf("provision %s: %v", names.Stack, err)
	}
	return names
}
