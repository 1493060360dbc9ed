// Package sim simulates smart pet-food bowls that speak the firmware
// protocol, for tests, demos and scoring on-device event detection.
//
// A Fleet holds N Bowls (device ids bowl-000, bowl-001, ...). Each Bowl has
// physics and an MCU:
//
//   - Physics, sampled at Config.SampleRateHz (default 50 Hz, one
//     WeightBatch per simulated second): food in the bowl over simulated
//     days; refills around 07:00 and 18:30 (the evening one forgotten with
//     Config.SkipRefillChance, so bowls run low and empty) with the lid
//     opened and food poured over 6-12 s; 1-4 pets, each with an FDX-B RFID
//     tag, 3-5 meals a day, eating along a saturating curve
//     grams·(1−e^(−t/τ)) with bites (τ 40-120 s per pet), pressing on the
//     bowl while they eat, a tag read on arrival and every 45 s; the load
//     cell (below) with white noise, linear drift, a temperature
//     coefficient, rounding to the firmware's resolution, and glitch
//     spikes of 80-600 g lasting 1-3 samples; temperature every minute,
//     battery every ten minutes; faults on a schedule (Config.Faults) or on
//     demand (Bowl.InjectFault).
//   - MCU: the firmware's link layer (see MCU): a ring of unacknowledged
//     frames, retransmission on timeout and on resend requests, cumulative
//     acks, backpressure when the ring is full, Hello and Pong.
//
// Time runs at Config.Speed simulated seconds per real second. With Speed 0
// it runs as fast as the gateway acknowledges and loses nothing (readings
// wait for ring space); with Speed > 0 the MCU behaves like real firmware
// and refuses readings while its ring is full.
//
// Everything is deterministic for a given Config (Seed included): the same
// readings, the same ground truth.
//
// # Load-cell model
//
// A reading is what the firmware reports for the force on a kitchen-scale
// load cell behind an HX711-class 24-bit ADC (firmware-bridge/PROTOCOL.md,
// "Load-cell model", has the same numbers):
//
//	reading = round_q(clip(food + force + drift + tc·(T−22 °C) + noise + glitch))
//
// with these parts and defaults:
//
//   - Capacity (Config.LoadCellG, 5 kg): a single-point aluminium bar cell
//     of 1.0 mV/V rated output, the common kitchen-scale part; the bowl
//     (tared at calibration) and 400 g of food use a fraction of it. The
//     firmware clips readings to ±capacity.
//   - White noise (Config.NoiseG, 0.1 g rms per reading): the HX711's
//     input-referred noise at gain 128 and 80 samples/s, the rate a 50 Hz
//     stream needs, is 90 nV rms by its datasheet; a 1.0 mV/V cell excited
//     at the HX711's regulated ~4.3 V gives 4.3 mV at 5 kg, 0.86 µV/g, so
//     90 nV is 0.105 g. The cell's own thermal noise (a 1 kΩ bridge, about
//     25 nV over the band) adds little. Noise is drawn before rounding.
//   - Resolution (Config.ResolutionMg, 0.1 g): the firmware converts counts
//     with its calibration factor and rounds to 0.1 g. One ADC count is
//     about 0.003 g, far below the noise, so the rounding, not the ADC, sets
//     the step; at 0.1 g the noise still moves a resting reading by a step
//     or two, as on a real scale without a display filter.
//   - Drift (Config.DriftGPerHour, ±0.5 g/h): each bowl draws a constant
//     zero-drift rate; creep and zero return of an inexpensive cell stay
//     within this, a pessimistic bound. Tare (frame.Tare) zeroes it.
//   - Temperature (Config.TempCoeffGPerC, 0.3 g/°C): the zero's thermal
//     coefficient of an inexpensive cell, about 0.06 % of capacity per
//     10 °C, against a room temperature swinging ±2 °C over the day.
//
// Not modelled: the HX711's own offset drift (about 0.006 g/°C, negligible
// beside the cell's), creep under load, hysteresis and vibration.
//
// # Ground truth
//
// Every event the physics produces is reported to Config.OnTruth as a
// Truth; TruthWriter writes them as JSON lines (the `simulate --truth`
// file). One object per line, in time order per device:
//
//	{"kind":"meal","device":"bowl-000","start":"2026-01-05T07:42:10.5Z","end":"2026-01-05T07:46:31.2Z",
//	 "start_uptime_ms":9730500,"end_uptime_ms":9991200,"pet_tag":"900215012345678","grams":31.4,"level_g":288.1}
//	{"kind":"refill","device":"bowl-000","start":...,"end":...,"start_uptime_ms":...,"end_uptime_ms":...,"grams":152.3,"level_g":371.9}
//	{"kind":"food_low","device":"bowl-000","start":...,"start_uptime_ms":...,"level_g":59.9,"threshold_g":60}
//	{"kind":"empty","device":"bowl-000","start":...,"start_uptime_ms":...,"level_g":4.9,"threshold_g":5}
//	{"kind":"fault","device":"bowl-000","start":...,"start_uptime_ms":...,"level_g":120.4,"code":1,"detail":"hx711 timeout"}
//	{"kind":"glitch","device":"bowl-000","start":...,"start_uptime_ms":...,"grams":-312.5,"level_g":120.4}
//
// Fields: kind (meal, refill, food_low, empty, fault, glitch); device; start
// and end (RFC 3339, the simulated wall clock = Config.Start + uptime; end
// only for meal and refill); start_uptime_ms and end_uptime_ms (the same
// instants on the device clock frames carry); pet_tag (meal); grams (eaten,
// added, or the signed spike height of a glitch, 0.1 g); level_g (true food
// at end, or at start for point events, 0.1 g); threshold_g (food_low,
// empty); code and detail (fault). A meal spans the pet's approach to its
// leaving (3 s before the first bite, 2 s after the last). food_low and
// empty fire when the true level crosses below the threshold and re-arm
// 10 g above it. Glitches are not real changes: a detector should ignore
// them. A scorer should match on the uptime fields whenever Speed is not 1,
// because the bridge maps uptime to the gateway's real clock.
package sim
