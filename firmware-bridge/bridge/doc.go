// Package bridge is the gateway side of the bowl MCU link: it decodes the
// MCU's frames, hands every data frame to a Sink exactly once and in order,
// and sends the MCU a cumulative acknowledgement only for frames the Sink
// confirmed durable. It also maps device uptime to wall time from
// time-sync round trips.
//
// # Delivery contract
//
// One Run serves one link, that is one device. Within a Run the bridge
// delivers each sequence number at most once and strictly in order, with
// no gaps (go-back-N: a frame after a gap is dropped and the MCU is asked
// to resend). Records reach the Sink in batches; Sink.Deliver must return
// nil only when every record of the batch is durable. A failed Deliver is
// retried with backoff, the same batch, until it succeeds or Run ends.
//
// Across Runs (a gateway restart, a crash, a new link) the bridge keeps no
// state: frames that were durable but not yet acknowledged come again
// after the MCU's Hello. So the Sink MUST deduplicate by (Device, Epoch,
// Seq): because delivery per device and epoch is in order and gap-free, it
// is enough to keep, durably and in the same transaction as the records,
// the last Epoch and Seq stored per device, and to skip any record of that
// Epoch whose Seq is not after it in 32-bit serial arithmetic
// (int32(rec.Seq-last) <= 0 means already stored). A record of another
// Epoch is a reset counter (PROTOCOL.md, "Boot epoch"): keep it.
//
// Sequence numbers are the MCU's 32-bit counter; they wrap from 2^32-1 to
// 0 and the MCU keeps counting across its own reboots (see PROTOCOL.md), so
// (Device, Epoch, Seq) names one reading for 2^32 frames, about 136 years
// at one frame per second. Epoch is the Hello's boot epoch, which changes
// only when the counter starts from scratch (0 for a firmware without it).
//
// # Caveats
//
// Run closes the link, if it is an io.Closer, when its context ends:
// that is the only way to interrupt a blocked read on a tty.
package bridge
