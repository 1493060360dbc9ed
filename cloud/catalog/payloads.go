package catalog

import "time"

// The payload types of the cloud's event types: one Go type per event
// type, whose json tags are the contract (docs/contract.md, "Event
// catalog"). Producers emit these values and consumers decode into them
// (Decode), so a renamed or retyped field breaks the build on both sides.
// The catalog's Fields are derived from them (FieldsOf).
//
// Events already in chains decode into these types and keep their hash:
// the engine hashes the canonical JSON (RFC 8785) of the payload object, so
// a field keeps its JSON type (an integer stays an integer) and a field that
// was always present is never made optional, nor the reverse
// (TestPayloadsKeepTheirJSON).

// Item is one order line in a commerce payload.
type Item struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

// OrderCreated is the payload of com.order_created (cloud/api): the order
// as placed, priced by the server.
type OrderCreated struct {
	OrderID     string `json:"order_id"`
	CustomerID  string `json:"customer_id"`
	PetID       string `json:"pet_id"`
	Items       []Item `json:"items"`
	AmountCents int64  `json:"amount_cents"`
	Currency    string `json:"currency"`
}

// PaymentCompleted is the payload of com.payment_completed (cloud/api): the
// order's amount and lines at the time it was paid.
type PaymentCompleted struct {
	OrderID     string `json:"order_id"`
	PaymentID   string `json:"payment_id"`
	AmountCents int64  `json:"amount_cents"`
	// Currency is empty for an order written before orders had one.
	Currency   string `json:"currency"`
	CustomerID string `json:"customer_id"`
	PetID      string `json:"pet_id"`
	Items      []Item `json:"items"`
}

// PaymentRefused is the payload of com.payment_refused (cloud/api): a
// signed payment whose amount or currency was not its order's.
type PaymentRefused struct {
	OrderID   string `json:"order_id"`
	PaymentID string `json:"payment_id"`
	WebhookID string `json:"webhook_id"`
	// Reason is "amount" or "currency".
	Reason string `json:"reason"`
	// AmountCents and Currency are what the payment said.
	AmountCents int64  `json:"amount_cents"`
	Currency    string `json:"currency"`
	// OrderAmountCents and OrderCurrency are the order's.
	OrderAmountCents int64  `json:"order_amount_cents"`
	OrderCurrency    string `json:"order_currency"`
}

// AppetiteDropped is the payload of pet.appetite_dropped (cloud/subscribers,
// record_intake): a day on which a pet ate under half its average.
type AppetiteDropped struct {
	PetTag string `json:"pet_tag"`
	// Day is the poor day, YYYY-MM-DD (UTC).
	Day   string  `json:"day"`
	Grams float64 `json:"grams"`
	// AverageG is the average of the Days days before it, to 0.1 g.
	AverageG float64 `json:"average_g"`
	Days     int     `json:"days"`
}

// DataGap is the payload of bowl.data_gap: a range of a thing's sequence
// numbers that never arrived within the grace period. Ingest raises it for
// the events lane, the telemetry consumer (cloud/durable) for telemetry.
type DataGap struct {
	Thing string `json:"thing"`
	// Lane is "events" (ingest) or "telemetry" (cloud/durable).
	Lane string `json:"lane"`
	// Outbox is the outbox instance id whose seqs these are; only the
	// telemetry consumer sets it (durable.V1Outbox for a v1 gateway), and
	// ingest's events-lane gaps have none.
	Outbox  string `json:"outbox,omitempty"`
	FromSeq uint64 `json:"from_seq"`
	ToSeq   uint64 `json:"to_seq"`
	// MissingSince is when the hole was first noticed, on the gateway's
	// clock (corrected when the clock was wrong).
	MissingSince time.Time `json:"missing_since"`
}

// CompletenessStated is the payload of audit.completeness_stated (`bowline
// completeness anchor`): a tenant's day of telemetry (docs/completeness.md).
type CompletenessStated struct {
	// Day is the UTC day of the bowls' clock, YYYY-MM-DD.
	Day string `json:"day"`
	// Things holds each bowl's counts, by thing name.
	Things map[string]ThingCounts `json:"things"`
	// Digest is SHA-256 over the things' digests, sorted by thing
	// ("<thing>:<digest>\n" each): the whole day's, in every part.
	Digest string `json:"digest"`
	// Part and Parts number a day too large for one event (more than
	// about 800 bowls): part Part of Parts, each with its own bowls.
	// Absent for a day stated in one event.
	Part  int `json:"part,omitempty"`
	Parts int `json:"parts,omitempty"`
}

// ThingCounts is one bowl's line of a stated day: its counts (what
// durable.Statement holds too), whether they undercount, and its digest.
type ThingCounts struct {
	Counts
	Partial bool   `json:"partial,omitempty"`
	Digest  string `json:"digest"`
}

// Counts are one bowl's samples of one UTC day on its clock, accounted for
// (docs/completeness.md): the telemetry consumer's statement
// (durable.Statement) and the day's stated line (ThingCounts) are both
// these.
type Counts struct {
	// Assigned is the samples the gateway acknowledged to the MCU, counted
	// as the outbox seqs it assigned that the day accounts for: per outbox
	// the range from the day's first to its last durable seq, plus the
	// dropped seqs outside it. The MCU's own count is not on the wire.
	Assigned int64 `json:"assigned"`
	// Durable is the samples in the stream, each counted once.
	Durable int64 `json:"durable"`
	// Dropped is per reason (disk_cap, ttl, ...) the samples the gateway
	// reported dropped unsent.
	Dropped      map[string]int64 `json:"dropped"`
	DroppedTotal int64            `json:"dropped_total"`
	// Missing is the seqs inside the assigned ranges that are neither
	// durable nor reported dropped: holes.
	Missing int64 `json:"missing"`
	// Duplicates is the resent samples the consumer collapsed.
	Duplicates int64 `json:"duplicates"`
	// RingRefused is the readings the MCU refused with its ring full
	// (bowl.device_fault code 4): they never got a seq, so they are not in
	// Assigned.
	RingRefused int64 `json:"ring_refused"`
}
