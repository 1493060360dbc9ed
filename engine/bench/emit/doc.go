// Command emit is the emit section of scripts/bench. It measures Emit under
// contention against DynamoDB Local: (a) the naive design (one event per
// transaction: read the head, write head and event, retry up to 5 times on
// conflict) and (b) Bowline's Emit (group commit, conflicts retried with
// backoff until the deadline), with 16 concurrent emitters on one tenant and
// then on 16 tenants.
//
// Proving ground: a measurement of the product, never linked into it
// (docs/README.md, "The proving ground").
//
//	go run ./engine/bench/emit [--emitters 16] [--events 100] [--json]
//
// It starts its own DynamoDB Local through internal/localstack unless
// AWS_ENDPOINT_URL_DYNAMODB is set, and provisions the tables under a fresh
// BOWLINE_STACK prefix. It prints events/s, p50/p99 emit latency, DynamoDB
// write calls per event and failed emits for each run, and the (b)/(a)
// ratios. Numbers are for comparison on one machine, never asserted.
package main
