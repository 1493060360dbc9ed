package ingest

import (
	"context"
	"fmt"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
)

// maxReconnectInterval caps paho's doubling backoff between reconnection
// attempts (and after a connection lost again soon after a reconnect). With
// paho's default-like 30 s cap, three broker restarts within 15 s left every
// ingest offline for 31 s while the gateways were already publishing
// (docs/ingest-sessions.md, "Reconnecting"). AWS IoT allows one CONNECT per
// second per client id, so 2 s stays inside that quota.
const maxReconnectInterval = 2 * time.Second

// connect starts the paho client as clientID: persistent session, automatic
// acks off, unordered dispatch (each message is handled in its own goroutine
// and acked when its data is durable), and the shared subscriptions made on
// every (re)connection until the drain starts or the lease is lost. It
// returns once the first connection is up, or when ctx ends first.
func (in *Ingester) connect(ctx context.Context, clientID string) (mqtt.Client, error) {
	o := mqtt.NewClientOptions().
		AddBroker(in.cfg.Broker).
		SetClientID(clientID).
		SetCleanSession(false).
		SetAutoAckDisabled(true).
		SetOrderMatters(false).
		SetAutoReconnect(true).
		SetConnectRetry(true).
		SetConnectRetryInterval(time.Second).
		SetMaxReconnectInterval(maxReconnectInterval).
		SetKeepAlive(30 * time.Second).
		SetDefaultPublishHandler(in.onMessage).
		SetConnectionLostHandler(func(_ mqtt.Client, err error) {
			in.log.Warn("mqtt connection lost; reconnecting", "broker", in.cfg.Broker, "err", err)
		})
	if in.cfg.Username != "" {
		o.SetUsername(in.cfg.Username).SetPassword(in.cfg.Password)
	}
	if in.cfg.TLS != nil {
		o.SetTLSConfig(in.cfg.TLS)
	}
	subscribed := make(chan error, 1)
	o.SetOnConnectHandler(func(c mqtt.Client) {
		in.gate.RLock()
		stopped := in.unsubscribed || (in.lease != nil && !in.lease.active())
		in.gate.RUnlock()
		if stopped {
			in.log.Warn("mqtt reconnected after the drain started or the lease ended; not subscribing", "client_id", clientID)
			return
		}
		filters := make(map[string]byte)
		for _, f := range Filters(in.cfg.Group) {
			filters[f] = 1
		}
		// No per-route callback: every message, including those the broker
		// resends from the session before this subscription is routed, goes
		// to the default handler.
		tok := c.SubscribeMultiple(filters, nil)
		go func() {
			tok.Wait()
			err := tok.Error()
			if err != nil {
				in.log.Error("mqtt subscribe failed", "filters", Filters(in.cfg.Group), "err", err)
			} else {
				in.readyOnce.Do(func() { close(in.ready) })
				in.log.Info("mqtt subscribed", "broker", in.cfg.Broker, "client_id", clientID, "filters", Filters(in.cfg.Group))
			}
			select {
			case subscribed <- err:
			default:
			}
		}()
	})
	c := mqtt.NewClient(o)
	c.Connect() // retries in the background (ConnectRetry)
	select {
	case err := <-subscribed:
		if err != nil {
			c.Disconnect(0)
			return nil, fmt.Errorf("ingest: subscribe on %s: %w", in.cfg.Broker, err)
		}
		return c, nil
	case <-ctx.Done():
		c.Disconnect(0)
		return nil, fmt.Errorf("ingest: connect to %s: %w", in.cfg.Broker, ctx.Err())
	}
}

func (in *Ingester) onMessage(_ mqtt.Client, m mqtt.Message) {
	if !in.begin() {
		return // draining: left unacknowledged for redelivery
	}
	defer in.handlers.Done()
	if err := in.Handle(in.work, m.Topic(), m.Payload(), m.Ack); err != nil {
		in.log.Warn("message not acknowledged; the broker redelivers it on reconnect", "topic", m.Topic(), "err", err)
	}
}
