package iotdata

import (
	"errors"
	"fmt"
)

// Sentinel errors of the package.
var (
	// ErrBadTopic marks a topic AWS IoT would refuse: empty, over 256
	// bytes, more than 7 slashes, or holding a wildcard or NUL.
	ErrBadTopic = errors.New("invalid topic")
	// ErrPayloadTooLarge marks a payload over MaxPayload.
	ErrPayloadTooLarge = errors.New("payload larger than 128 KiB")
	// ErrBadQoS marks a QoS other than 0 or 1.
	ErrBadQoS = errors.New("qos must be 0 or 1")
	// ErrNoEndpoint marks a Publisher without an endpoint.
	ErrNoEndpoint = errors.New("no IoT data endpoint (set " + EndpointEnv + ")")
	// ErrUnauthorized marks a request without a SigV4 signature for
	// signing name iotdata, or with a wrong one (LocalEndpoint).
	ErrUnauthorized = errors.New("missing or invalid SigV4 authorization for iotdata")
	// ErrBrokerUnavailable marks a publish MQTTBroker could not hand to
	// its broker: not connected, or no PUBACK in time.
	ErrBrokerUnavailable = errors.New("mqtt broker unavailable")
)

// StatusError is an HTTP answer other than 200 to a Publish.
type StatusError struct {
	Topic  string
	Status int
	// Body is the start of the response body (AWS IoT's error message).
	Body string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("publish to topic %q: HTTP %d: %s", e.Topic, e.Status, e.Body)
}

// Retryable reports whether the same request may succeed later: AWS IoT
// throttled it (429) or failed (5xx).
func (e *StatusError) Retryable() bool { return e.Status == 429 || e.Status >= 500 }
