package telemetry

import "errors"

// Errors of the package.
var (
	// ErrClosed: the producer was closed before the record was accepted; a
	// record's done callback gets it, and Put after Close returns it.
	ErrClosed = errors.New("telemetry producer closed")
	// ErrRetriesExhausted: Kinesis did not accept the record in
	// ProducerConfig.MaxAttempts calls; a record's done callback gets it.
	ErrRetriesExhausted = errors.New("kinesis did not accept the record within its attempts")
)
