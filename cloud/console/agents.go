package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"
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
	// Err is why the last poll failed ("" when it answered); err is the
	// error itself, for Problem.
	Err string
	err error
	At  time.Time
	// PublishRate is MQTT messages per second between the last two polls.
	PublishRate float64
}

// Up reports whether the agent answered and is connected to the broker.
func (a agentView) Up() bool { return a.Err == "" && a.Status.MQTT.Connected }

// Unreachable reports whether the last poll got no answer at all (not an
// answer the console could not read).
func (a agentView) Unreachable() bool {
	return a.err != nil && errors.Is(a.err, wire.ErrStatusUnreachable)
}

// Problem is the last poll's failure in words (nil: it answered). The
// kind comes from wire.FetchStatus's errors; only a request that got no
// answer is explained from the network error's words (refused, timed
// out), never from what an agent wrote in an answer.
func (a agentView) Problem() *problem {
	if a.err == nil {
		return nil
	}
	const service = "the edge agent's status endpoint"
	if errors.Is(a.err, wire.ErrStatusUnreachable) {
		p := explain(service, a.StatusURL, a.err)
		p.Unreachable = true
		if p.What == "answers with an error" {
			p.What = "is unreachable"
		}
		return &p
	}
	p := problem{Service: service, Addr: a.StatusURL, Raw: a.Err}
	if u, err := url.Parse(a.StatusURL); err == nil && u.Host != "" {
		p.Addr = u.Host
	}
	switch {
	case errors.Is(a.err, wire.ErrStatusAnswer):
		p.What = "answers with an error status"
	case errors.Is(a.err, wire.ErrStatusTooLarge):
		p.What = "answers with a status document over the console's size limit"
	case errors.Is(a.err, wire.ErrNotStatus):
		p.What = "answers with something that is not a status document (another program on that port?)"
	default:
		p.What = "could not be asked (bad address?)"
	}
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
				v.Err, v.err = err.Error(), err
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
