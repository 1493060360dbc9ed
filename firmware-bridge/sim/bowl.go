package sim

import (
	"context"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/bowline-iot/bowline/firmware-bridge/frame"
)

// Physical constants of the model.
const (
	tempCoeffGPerC = 0.3              // default Config.TempCoeffGPerC
	approachDur    = 3 * time.Second  // pet steps up to the bowl before eating
	leaveDur       = 2 * time.Second  // pet's weight leaves the bowl
	tagRereadEvery = 45 * time.Second // the reader sees the tag again while the pet eats
)

// Bowl is one simulated bowl: its physics (food, pets, refills, sensor
// noise, drift and glitches) and its MCU, which frames the readings.
type Bowl struct {
	id  string
	idx int
	cfg Config
	mcu *MCU
	rng *rand.Rand
	// emit hands a reading to the MCU (Push or Offer, see Config.Speed).
	emit  func(ctx context.Context, uptimeMillis uint32, body frame.Body) error
	truth func(Truth)

	pets     []pet
	plan     []activity
	planDays int

	t          time.Duration
	uptime     atomic.Int64 // ms, read by the MCU for control frames
	food       float64
	drift      float64
	driftRate  float64 // g/s
	temp       float64
	battery    float64
	lowFired   bool
	emptyFired bool
	freeAt     time.Duration // no activity starts before this
	cur        *running
	glitchLeft int
	glitchG    float64
	faultsDone []bool

	injected chan frame.Fault
	rate     atomic.Int32
	tare     atomic.Bool
}

// running is an activity in progress.
type running struct {
	activity
	start  time.Duration
	force  float64 // pet's paw/nose press, or the hand pouring, grams
	eaten  float64
	poured float64
	target float64
	pour   time.Duration
	tagAt  time.Duration
	ended  time.Duration // eating/pouring finished; 0 while going on
}

func newBowl(cfg Config, idx int, truth func(Truth)) (*Bowl, error) {
	b := &Bowl{
		id: "bowl-" + pad3(idx), idx: idx, cfg: cfg, truth: truth,
		rng:      rand.New(rand.NewPCG(cfg.Seed, uint64(idx)+1)),
		injected: make(chan frame.Fault, 16),
		battery:  97,
	}
	b.rate.Store(int32(cfg.SampleRateHz))
	b.pets = newPets(b.rng, cfg.PetsPerBowl)
	b.food = cfg.CapacityG * (0.4 + 0.3*b.rng.Float64())
	b.driftRate = (b.rng.Float64()*2 - 1) * cfg.DriftGPerHour / 3600
	b.faultsDone = make([]bool, len(cfg.Faults))
	mcu, err := NewMCU(MCUConfig{
		DeviceID: b.id, RingSize: cfg.RingSize, RetransmitTimeout: cfg.RetransmitTimeout,
		SampleRateHz: uint16(cfg.SampleRateHz), Logger: cfg.Logger,
		Uptime:    func() uint32 { return uint32(b.uptime.Load()) },
		OnCommand: b.command,
	})
	if err != nil {
		return nil, err
	}
	b.mcu = mcu
	if cfg.Speed == 0 {
		b.emit = mcu.Push
	} else {
		b.emit = func(_ context.Context, up uint32, body frame.Body) error {
			_, err := mcu.Offer(up, body)
			return err
		}
	}
	return b, nil
}

func pad3(i int) string {
	s := strconv.Itoa(i)
	for len(s) < 3 {
		s = "0" + s
	}
	return s
}

// ID is the bowl's device id.
func (b *Bowl) ID() string { return b.id }

// MCU is the bowl's microcontroller model; run it on a link with MCU.Run.
func (b *Bowl) MCU() *MCU { return b.mcu }

// InjectFault raises a fault on the bowl at its next simulated second.
// It is safe to call from any goroutine; it drops the fault if 16 are
// already waiting.
func (b *Bowl) InjectFault(code frame.FaultCode, detail string) {
	select {
	case b.injected <- frame.Fault{Code: code, Detail: detail}:
	default:
	}
}

// command applies Tare and SetRate from the gateway.
func (b *Bowl) command(body frame.Body) {
	switch c := body.(type) {
	case frame.Tare:
		b.tare.Store(true)
	case frame.SetRate:
		if int(c.RateHz) <= frame.MaxSamples {
			b.rate.Store(int32(c.RateHz))
		}
	}
}

func (b *Bowl) wall(t time.Duration) time.Time { return b.cfg.Start.Add(t) }

func (b *Bowl) record(tr Truth) {
	tr.Device = b.id
	if b.truth != nil {
		b.truth(tr)
	}
}

// Simulate runs the bowl's physics for the simulated duration d, handing
// readings to its MCU, paced by Config.Speed. It returns ctx.Err() if ctx
// ends first.
func (b *Bowl) Simulate(ctx context.Context, d time.Duration) error {
	realStart := time.Now()
	simStart := b.t
	for b.t < d {
		if err := b.second(ctx); err != nil {
			return err
		}
		if b.cfg.Speed > 0 {
			due := realStart.Add(time.Duration(float64(b.t-simStart) / b.cfg.Speed))
			if wait := time.Until(due); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return ctx.Err()
				}
			}
		} else if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// second simulates one second: one weight batch, plus temperature every
// minute, battery every ten minutes, and any faults, tags and lid changes.
func (b *Bowl) second(ctx context.Context) error {
	if b.tare.Swap(false) {
		b.drift = 0
	}
	secStart := b.t
	up := func(t time.Duration) uint32 { return uint32(t.Milliseconds()) }
	if secStart%time.Minute == 0 {
		b.temp = 22 + 2*math.Sin(2*math.Pi*(b.wall(secStart).Sub(b.wall(0).Truncate(24*time.Hour)).Hours()-9)/24) + b.rng.NormFloat64()*0.1
		if err := b.emit(ctx, up(secStart), frame.Temperature{CentiCelsius: int16(math.Round(b.temp * 100))}); err != nil {
			return err
		}
	}
	if secStart%(10*time.Minute) == 0 {
		b.battery = math.Max(5, b.battery-0.05)
		if err := b.emit(ctx, up(secStart), frame.Battery{Millivolts: uint16(3300 + 9*b.battery), Percent: uint8(b.battery), Charging: false}); err != nil {
			return err
		}
	}
	if err := b.faults(ctx, secStart); err != nil {
		return err
	}
	rate := int(b.rate.Load())
	dt := time.Second / time.Duration(rate)
	samples := make([]int32, rate)
	var events []reading
	for i := range samples {
		evs, g := b.sample(dt)
		samples[i] = b.quantise(g)
		events = append(events, evs...)
	}
	if err := b.emit(ctx, up(secStart), frame.WeightBatch{RateHz: uint16(rate), Milligrams: samples}); err != nil {
		return err
	}
	for _, e := range events {
		if err := b.emit(ctx, up(e.at), e.body); err != nil {
			return err
		}
	}
	b.uptime.Store(b.t.Milliseconds())
	return nil
}

// reading is a non-weight frame raised during a second.
type reading struct {
	at   time.Duration
	body frame.Body
}

func (b *Bowl) faults(ctx context.Context, now time.Duration) error {
	var raise []frame.Fault
	for i, f := range b.cfg.Faults {
		if !b.faultsDone[i] && now >= f.After && (f.Bowl == -1 || f.Bowl == b.idx) {
			b.faultsDone[i] = true
			raise = append(raise, frame.Fault{Code: f.Code, Detail: f.Detail})
		}
	}
	for more := true; more; {
		select {
		case f := <-b.injected:
			raise = append(raise, f)
		default:
			more = false
		}
	}
	for _, f := range raise {
		b.record(Truth{Kind: KindFault, Start: b.wall(now), StartUptimeMS: now.Milliseconds(), LevelG: round1(b.food), Code: uint16(f.Code), Detail: f.Detail})
		if err := b.emit(ctx, uint32(now.Milliseconds()), f); err != nil {
			return err
		}
	}
	return nil
}

// nextActivity returns the next planned activity due at or before now.
func (b *Bowl) nextActivity(now time.Duration) (activity, bool) {
	for len(b.plan) == 0 || b.plan[len(b.plan)-1].at < now+24*time.Hour {
		b.plan = append(b.plan, planDay(b.rng, b.cfg, b.pets, b.planDays)...)
		if b.planDays == 0 && b.cfg.FirstMealAfter > 0 {
			b.plan = append(b.plan, activity{kind: actMeal, pet: 0, grams: b.pets[0].mealG, at: time.Duration(b.idx+1) * b.cfg.FirstMealAfter})
			sort.SliceStable(b.plan, func(i, j int) bool { return b.plan[i].at < b.plan[j].at })
		}
		b.planDays++
	}
	if now < b.freeAt || b.plan[0].at > now {
		return activity{}, false
	}
	a := b.plan[0]
	b.plan = b.plan[1:]
	return a, true
}

// sample advances the physics by dt and returns the load cell reading in
// grams, with any frames the step raised.
func (b *Bowl) sample(dt time.Duration) ([]reading, float64) {
	b.t += dt
	now := b.t
	var out []reading
	if b.cur == nil {
		if a, ok := b.nextActivity(now); ok {
			out = append(out, b.begin(a, now)...)
		}
	}
	force := 0.0
	if b.cur != nil {
		var evs []reading
		evs, force = b.advance(now, dt)
		out = append(out, evs...)
	}
	b.thresholds(now)
	b.drift += b.driftRate * dt.Seconds()
	g := b.food + b.drift + b.cfg.TempCoeffGPerC*(b.temp-22) + force + b.rng.NormFloat64()*b.cfg.NoiseG
	if b.glitchLeft > 0 {
		b.glitchLeft--
		g += b.glitchG
	} else if b.rng.Float64() < b.cfg.GlitchesPerHour*dt.Hours() {
		b.glitchLeft = b.rng.IntN(3)
		b.glitchG = (80 + b.rng.Float64()*520) * float64(1-2*b.rng.IntN(2))
		g += b.glitchG
		b.record(Truth{Kind: KindGlitch, Start: b.wall(now), StartUptimeMS: now.Milliseconds(), Grams: round1(b.glitchG), LevelG: round1(b.food)})
	}
	return out, g
}

// quantise is the firmware's last step: the calibrated reading g, clipped
// to the load cell's capacity and rounded to the reported resolution, in
// milligrams.
func (b *Bowl) quantise(g float64) int32 {
	g = math.Max(-b.cfg.LoadCellG, math.Min(b.cfg.LoadCellG, g))
	q := float64(b.cfg.ResolutionMg)
	return int32(math.Round(g*1000/q) * q)
}

func (b *Bowl) begin(a activity, now time.Duration) []reading {
	r := &running{activity: a, start: now}
	switch a.kind {
	case actMeal:
		r.force = 2 + b.rng.Float64()*4
		r.tagAt = now + approachDur/2
	case actRefill:
		r.target = b.cfg.CapacityG - b.rng.Float64()*60
		if r.target-b.food < 5 {
			return nil // already full: nobody refills
		}
		r.force = 5 + b.rng.Float64()*10
		r.pour = time.Duration((6 + b.rng.Float64()*6) * float64(time.Second))
		b.cur = r
		return []reading{{now, frame.Lid{State: frame.LidOpen}}}
	}
	b.cur = r
	return nil
}

// advance moves the current activity on by dt; it returns frames raised
// and the extra force on the load cell.
func (b *Bowl) advance(now, dt time.Duration) ([]reading, float64) {
	r := b.cur
	el := now - r.start
	switch r.kind {
	case actRefill:
		if r.ended == 0 {
			step := (r.target - b.food + r.poured) * (dt.Seconds() / r.pour.Seconds())
			add := math.Min(step, r.target-b.food)
			b.food += add
			r.poured += add
			if el >= r.pour {
				r.ended = now
			}
			return nil, r.force + b.rng.NormFloat64()*3
		}
		b.finish(now, Truth{Kind: KindRefill, Grams: round1(r.poured)})
		return []reading{{now, frame.Lid{State: frame.LidClosed}}}, 0
	}
	// A meal: approach, eat along a saturating curve, leave.
	pet := b.pets[r.pet]
	var out []reading
	if r.tagAt != 0 && now >= r.tagAt {
		out = append(out, reading{now, frame.TagSeen{Tag: pet.tag, RSSI: int8(-40 - b.rng.IntN(30))}})
		r.tagAt = now + tagRereadEvery
	}
	switch {
	case el < approachDur:
		return out, r.force * el.Seconds() / approachDur.Seconds()
	case r.ended == 0:
		te := (el - approachDur).Seconds()
		rate := r.grams / pet.tauS * math.Exp(-te/pet.tauS) * (1 + 0.6*math.Sin(2*math.Pi*te/1.7))
		bite := math.Min(rate*dt.Seconds(), b.food)
		b.food -= bite
		r.eaten += bite
		if r.eaten >= 0.98*r.grams || b.food <= 0.05 {
			r.ended = now
			r.tagAt = 0
		}
		return out, r.force + 1.5*math.Sin(2*math.Pi*0.8*te) + b.rng.NormFloat64()*0.8
	case now-r.ended < leaveDur:
		return out, r.force * (1 - (now-r.ended).Seconds()/leaveDur.Seconds())
	}
	b.finish(now, Truth{Kind: KindMeal, PetTag: pet.tag, Grams: round1(r.eaten)})
	return out, 0
}

// finish records the current activity's truth and frees the bowl after a
// pause of 20-90 s.
func (b *Bowl) finish(now time.Duration, tr Truth) {
	tr.Start, tr.StartUptimeMS = b.wall(b.cur.start), b.cur.start.Milliseconds()
	tr.End, tr.EndUptimeMS = b.wall(now), now.Milliseconds()
	tr.LevelG = round1(b.food)
	b.record(tr)
	b.cur = nil
	b.freeAt = now + time.Duration((20+b.rng.Float64()*70)*float64(time.Second))
}

// thresholds records the moments food falls below the low and empty
// thresholds; each re-arms once food is 10 g above it again.
func (b *Bowl) thresholds(now time.Duration) {
	if !b.lowFired && b.food < b.cfg.LowG {
		b.lowFired = true
		b.record(Truth{Kind: KindFoodLow, Start: b.wall(now), StartUptimeMS: now.Milliseconds(), LevelG: round1(b.food), ThresholdG: b.cfg.LowG})
	} else if b.lowFired && b.food > b.cfg.LowG+10 {
		b.lowFired = false
	}
	if !b.emptyFired && b.food < b.cfg.EmptyG {
		b.emptyFired = true
		b.record(Truth{Kind: KindEmpty, Start: b.wall(now), StartUptimeMS: now.Milliseconds(), LevelG: round1(b.food), ThresholdG: b.cfg.EmptyG})
	} else if b.emptyFired && b.food > b.cfg.EmptyG+10 {
		b.emptyFired = false
	}
}
