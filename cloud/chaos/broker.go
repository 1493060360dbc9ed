package chaos

import (
	"bytes"
	"context"
	"os"
	"strings"
	"time"
)

// gatewayLink is the gateways' own link to the broker; the ingests and the
// other processes use "mqtt". A net fault on "mqtt" hits both.
const gatewayLink = "mqtt-gw"

// brokerDownToxic is the toxic that keeps the gateways off the broker from
// a broker outage until an ingest has subscribed again.
const brokerDownToxic = "broker_down"

// resubscribeWait bounds how long the gateways are held off after the
// broker is back.
const resubscribeWait = 30 * time.Second

// brokerOutage stops Mosquitto and returns the heal: start it again, then
// let the gateways back once an ingest has resubscribed.
//
// Two choices keep the stand-in as honest as AWS IoT (docs/chaos.md,
// "Broker outages"). The stop is graceful: Mosquitto saves its database
// every second only, so a SIGKILL forgets messages it already PUBACKed,
// which AWS IoT never does. And Mosquitto 2.0.11 restores a persistent
// session without its shared subscription (internal/mosquitto,
// TestSharedSubscriptionNotRestored): until a member of the group
// subscribes again, it PUBACKs and drops what the gateways publish, where
// AWS IoT keeps the session's subscriptions. So the gateways' link resets
// every connection from the stop until an ingest logged a new
// subscription (or resubscribeWait passed): to them that is a longer
// outage, which their outboxes absorb.
func (r *run) brokerOutage(ctx context.Context) (func(), error) {
	if err := r.net.toxicAttrs(gatewayLink, brokerDownToxic, "reset_peer", `{"timeout":0}`); err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.brokerGen++
	gen := r.brokerGen
	r.mu.Unlock()
	before := r.ingestSubscriptions()
	r.broker.Stop()
	return func() {
		_ = r.broker.Restart(context.WithoutCancel(ctx))
		deadline := time.Now().Add(resubscribeWait)
		for r.ingestSubscriptions() <= before && time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
		}
		r.mu.Lock()
		current := gen == r.brokerGen
		r.mu.Unlock()
		if current { // a later outage keeps the link closed
			r.net.heal(gatewayLink, brokerDownToxic)
		}
	}, nil
}

// ingestSubscriptions counts the subscriptions the ingests have logged so
// far (each "mqtt subscribed" line of their logs).
func (r *run) ingestSubscriptions() int { return r.subscriptions("ingest-") }

// subscriptions counts the "mqtt subscribed" lines logged so far by the
// processes whose name starts with prefix.
func (r *run) subscriptions(prefix string) int {
	n := 0
	for name, p := range r.procs {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		b, err := os.ReadFile(p.log)
		if err != nil {
			continue
		}
		n += bytes.Count(b, []byte(`msg="mqtt subscribed"`))
	}
	return n
}
