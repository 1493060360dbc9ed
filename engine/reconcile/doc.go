// Package reconcile answers "is anything wrong?" for operators and the
// API's GET /v1/ops/reconcile: per tenant, how many events its log holds,
// whether its hash chain verifies (engine.Verifier) and how many open dead
// letters it has; globally, open dead letters, poison pills, the depth of
// the events dead-letter queue and how many events reached the durable
// consumer and matched no subscription.
//
// A DLQ with anything in it, a dead letter, an unmatched event or a broken
// chain is work nobody did; the report makes each one a number.
package reconcile
