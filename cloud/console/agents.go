package console

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/bowline-iot/bowline/edge/wire"
)

// agentView is one agent's latest poll.
type agentView struct {
	Agent
	// Status is the agent's /status document (wire.GatewayStatus; the
	// console reads it over HTTP, as any operator tool would, and links
	// nothing of edge/ but the contract package).
	Status wire.GatewayStatus
	// Err is why the last poll failed ("" when it answered).
	Err string
	At  time.Time
	// PublishRate is MQTT messages per second between the last two polls.
	PublishRate float64
}

// Up reports whether the agent answered and is connected to the broker.
func (a agentView) Up() bool { return a.Err == "" && a.Status.MQTT.Connected }

// Problem is the last poll's failure in words (nil: it answered).
func (a agentView) Problem() *problem {
	if a.Err == "" {
		return nil
	}
	p := explain("the edge agent's status endpoint", a.StatusURL, errors.New(a.Err))
	return &p
}

// Backlog is the agent's outbox backlog, both lanes.
func (a agentView) Backlog() int64 {
	return a.Status.Lanes.Events.Backlog + a.Status.Lanes.Telemetry.Backlog
}

// Oldest is the age in seconds of the oldest record waiting.
func (a agentView) Oldest() float64 {
	return max(a.Status.Lanes.Events.OldestAgeSeconds, a.Status.Lanes.Telemetry.OldestAgeSeconds)
}

// maxStatusBytes bounds an agent's /status document.
const maxStatusBytes = 1 << 20

// agentPoller polls every agent's /status.
type agentPoller struct {
	agents []Agent
	client *http.Client

	mu    sync.RWMutex
	views map[string]agentView
}

func newAgentPoller(agents []Agent) *agentPoller {
	return &agentPoller{agents: agents, client: &http.Client{Timeout: time.Second}, views: map[string]agentView{}}
}

func (p *agentPoller) poll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, a := range p.agents {
		wg.Go(func() {
			v := agentView{Agent: a, At: time.Now()}
			st, _, err := wire.FetchStatus(ctx, p.client, a.StatusURL, maxStatusBytes)
			if err != nil {
				v.Err = err.Error()
			} else {
				v.Status = st
			}
			p.mu.Lock()
			if old, ok := p.views[a.Thing]; ok && v.Err == "" && old.Err == "" {
				if dt := v.At.Sub(old.At).Seconds(); dt > 0 {
					v.PublishRate = max(0, float64(v.Status.MQTT.Published-old.Status.MQTT.Published)/dt)
				}
			}
			p.views[a.Thing] = v
			p.mu.Unlock()
		})
	}
	wg.Wait()
}

func (p *agentPoller) view(thing string) (agentView, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, ok := p.views[thing]
	return v, ok
}

func (p *agentPoller) all() []agentView {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]agentView, 0, len(p.agents))
	for _, a := range p.agents {
		if v, ok := p.views[a.Thing]; ok {
			out = append(out, v)
		} else {
			out = append(out, agentView{Agent: a, Err: "not polled yet"})
		}
	}
	return out
}
