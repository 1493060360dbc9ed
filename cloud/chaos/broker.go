package chaos

import (
	"bytes"
	"context"
	"os"
	"strings"
	"time"
)

// gatewayLink is the gateways' own link to the broker; the rule stand-in
// and the other processes use "mqtt". A net fault on "mqtt" hits both.
const gatewayLink = "mqtt-gw"

// brokerDownToxic is the toxic that keeps the gateways off the broker from
// a broker outage until the rule stand-in has subscribed again.
const brokerDownToxic = "broker_down"

// resubscribeWait bounds how long the gateways are held off after the
// broker is back.
const resubscribeWait = 30 * time.Second

// brokerOutage stops Mosquitto and returns the heal: start it again, then
// let the gateways back once the rule stand-in has resubscribed.
//
// Two choices keep the stand-in as honest as AWS IoT (docs/chaos.md,
// "Broker outages"). The stop is graceful: Mosquitto saves its database
// every second only, so a SIGKILL forgets messages it already PUBACKed,
// which AWS IoT never does. And the gateways' link resets every connection
// from the stop until the rule stand-in logged a new subscription (or
// resubscribeWait passed): in AWS the rules engine is there before any
// gateway, and a gateway forgets an event at its PUBACK, so a gateway must
// not reach a broker whose rule stand-in is not back (Mosquitto restores
// the stand-in's plain subscriptions with its session; a broker that did
// not would PUBACK and drop). To the gateways that is a longer outage,
// which their outboxes absorb.
func (r *run) brokerOutage(ctx context.Context) (func(), error) {
	if err := r.net.toxicAttrs(gatewayLink, brokerDownToxic, "reset_peer", `{"timeout":0}`); err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.brokerGen++
	gen := r.brokerGen
	r.mu.Unlock()
	before := r.subscriptions(procRules)
	r.broker.Stop()
	return func() {
		_ = r.broker.Restart(context.WithoutCancel(ctx))
		deadline := time.Now().Add(resubscribeWait)
		for r.subscriptions(procRules) <= before && time.Now().Before(deadline) && ctx.Err() == nil {
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
