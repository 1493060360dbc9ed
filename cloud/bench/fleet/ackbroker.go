package main

import (
	"fmt"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/bowline-iot/bowline/cloud/iotdata"
)

// ackBroker is the local IoT data endpoint's Broker on Mosquitto: one MQTT
// client that publishes what the endpoint receives. (cloud/iotdata has no
// MQTT client adapter on main yet; this is the bench's own.)
type ackBroker struct{ c paho.Client }

var _ iotdata.Broker = (*ackBroker)(nil)

func dialAckBroker(url, id string) (*ackBroker, error) {
	c := paho.NewClient(paho.NewClientOptions().AddBroker(url).SetClientID(id).SetCleanSession(true).
		SetAutoReconnect(true).SetOrderMatters(false).SetKeepAlive(30 * time.Second))
	if tok := c.Connect(); !tok.WaitTimeout(30*time.Second) || tok.Error() != nil {
		return nil, fmt.Errorf("ack publisher: connect %s: %v", url, tok.Error())
	}
	return &ackBroker{c: c}, nil
}

// Publish returns once the broker has the message: at QoS 0 once it is
// written to the connection, at QoS 1 on the PUBACK.
func (b *ackBroker) Publish(topic string, payload []byte, qos byte) error {
	tok := b.c.Publish(topic, qos, false, payload)
	if !tok.WaitTimeout(10 * time.Second) {
		return fmt.Errorf("publish %s: no answer from the broker in 10s", topic)
	}
	return tok.Error()
}

func (b *ackBroker) Close() { b.c.Disconnect(250) }
