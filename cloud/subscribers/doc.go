// Package subscribers holds the handlers of Bowline's cloud subscriptions,
// bound by name to the catalog (cloud/catalog) with Bind:
//
//	com.payment_completed  -> shopify_mirror, book_shipment, notify_buyer   (HTTP adapters)
//	                          mark_tag_ordered                              (app table: the pet's tag)
//	bowl.meal_finished     -> record_intake                                 (app table: daily intake)
//	bowl.food_low          -> notify_owner
//	bowl.empty             -> notify_owner_empty       (the notify_owner handler)
//	pet.appetite_dropped   -> notify_owner_appetite    (the notify_owner handler)
//	bowl.device_fault      -> notify_support           (at most one e-mail per bowl per SupportWindow)
//	row.contact.modify     -> contact_changes          (BEST_EFFORT: refresh the owner directory)
//
// The DURABLE handlers run in the worker (engine/worker), which gives
// at-least-once delivery with an inbox claim per (event, subscription). A
// handler can still run twice for one event (a worker killed after the
// handler's effect but before the claim completed), so every effect is
// idempotent on its own: external calls carry Idempotency-Key
// <event_id>:<subscription>, and table writes are conditional on the event id.
//
// Adapter errors are mapped onto the worker's classes: timeouts, 429 and 5xx
// are returned as they are (retryable: the queue redelivers); other 4xx and
// events that cannot be handled (a payload missing its fields) are wrapped
// with worker.Terminal and dead-lettered at once.
//
// # Intake and appetite
//
// record_intake adds each meal's grams to the pet's daily row,
//
//	pk = PET#<tenant>#<pet_tag>  sk = INTAKE#<YYYY-MM-DD>   entity = intake
//	grams (N), meals (N), event_ids (SS), day, pet_tag, tenant
//
// the day taken from the meal's started_at (so simulated time works). The
// first meal of a day closes the previous day: if that day's grams are under
// half the average of the days before it (at most seven, at least
// Config.MinHistoryDays of them), the handler emits pet.appetite_dropped with
// the new day's row as the event's write, through engine.Emit: the intake and
// the event commit together or not at all, and the row's creation condition
// makes it happen once per pet and day.
//
// # Caveats
//
// The owner directory is a per-process cache. The BEST_EFFORT lane delivers
// a row.contact.modify to one worker, so other worker processes see the new
// contact only when their entry expires (Config.ContactTTL); a tenant without
// a contact row is never cached.
//
// A subscription has one glob, so notify_owner is declared once per type
// (notify_owner for bowl.food_low, notify_owner_empty, notify_owner_appetite);
// the inbox and the Idempotency-Key carry those names.
//
// The appetite day is the UTC date of started_at; a pet whose previous day
// has no row (device offline, or the pet ate nothing at all) is not judged.
package subscribers
