// Package pricing holds what AWS would bill Bowline's data path and the
// AWS quotas the design touches, as data in one place, and the arithmetic
// that turns counts from a run into dollars per bowl per month at fleet
// scale (docs/cost.md).
//
// Proving ground: the cost bench's model, never linked into a product
// (docs/README.md, "The proving ground").
//
//   - Prices (prices.go): us-east-1 list prices, each with its unit, its
//     tiers, the public page it was read from and the date it was read.
//   - Quotas (quotas.go): each quota's default, whether AWS raises it on
//     request, and its source.
//   - Estimate (model.go): takes Counts measured in a run (at the broker,
//     at the rule stand-in, from the AWS call recorder, from the consumer)
//     and scales them linearly to Scales. Formulas here only scale counts
//     (per bowl or per gateway per second, times bowls, times seconds in a
//     month) and size what the run does not provision (Kinesis shards from
//     the measured record and byte rates); they never produce a count.
//
// # Caveats
//
// Free tiers, taxes, data transfer, CloudWatch and savings plans are left
// out. A price whose Status is not "verified" was not confirmed on AWS's
// own page on the date given; the table says so rather than guess, and
// the printed estimate marks every line that depends on one.
package pricing
