// Package detect turns a bowl's weight samples and pet tag reads into bowl
// events: bowl.meal_finished (grams eaten, duration, start, which pet),
// bowl.refilled, bowl.food_low and bowl.empty.
//
// # How it decides
//
// Raw samples pass a running median (Config.MedianWindow) that removes
// spikes a few samples long. The detector holds a committed food level. An
// episode starts when the filtered weight leaves that level by more than
// Config.DepartG, or when a tag is read. It ends when the weight has stayed
// within Config.StableG for Config.Settle and no tag has been read for
// Config.TagQuiet; the new level is the mean of that settled window, so
// load-cell noise averages out. The difference to the old level decides:
// a loss of at least MealMinG is a meal (its pet is the tag read most often
// during the episode), a gain of at least RefillMinG a refill, anything in
// between (a pet leaning on the bowl, a sniff, a nudge) nothing. A tag
// change closes the running meal and opens the next pet's.
//
// Food-low and empty fire when a committed level crosses their thresholds
// downwards, and re-arm once the level rises above them again.
//
// # Ids
//
// Each event's id names the sample that produced it, as the MCU's frame
// sequence number and the sample's index in the frame
// ("meal-1234.5"). Frames are immutable once numbered and the detector's
// state is saved with the outbox in the same transaction, so a replay after
// a crash or a retried delivery produces the same ids.
package detect
