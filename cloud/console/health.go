package console

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"
)

// problem is a failure said in words: which service, at which address,
// what it does, since when (wall clock); Raw is the error as the SDK or
// the HTTP client gave it, shown behind a click.
type problem struct {
	Service string
	Addr    string
	What    string // "unreachable (connection refused)", "not answering (timed out)", ...
	Since   time.Time
	For     time.Duration
	Raw     string
	// Unreachable: the service did not answer at all (as opposed to an
	// answer that refused the request); stages that depend on it are down.
	Unreachable bool
}

// Words is the problem in one sentence.
func (p problem) Words() string {
	var b strings.Builder
	b.WriteString(p.Service)
	if p.Addr != "" {
		fmt.Fprintf(&b, " at %s", p.Addr)
	}
	b.WriteString(" " + p.What)
	if !p.Since.IsZero() {
		fmt.Fprintf(&b, " since %s UTC wall clock (%s)", p.Since.UTC().Format("15:04:05"), fmtDuration(p.For))
	}
	return b.String()
}

var (
	dialAddrRe = regexp.MustCompile(`dial tcp ([^ ]+?):? `)
	urlRe      = regexp.MustCompile(`https?://[^\s"/]+`)
)

// explain turns err from service (fallback address addr, e.g. a queue
// URL) into a problem in words.
func explain(service, addr string, err error) problem {
	raw := err.Error()
	p := problem{Service: service, Raw: raw}
	if m := dialAddrRe.FindStringSubmatch(raw); m != nil {
		p.Addr = strings.TrimSuffix(m[1], ":")
	} else if m := urlRe.FindString(raw); m != "" {
		if u, err := url.Parse(m); err == nil {
			p.Addr = u.Host
		}
	}
	if p.Addr == "" && addr != "" {
		if u, err := url.Parse(addr); err == nil && u.Host != "" {
			p.Addr = u.Host
		} else {
			p.Addr = addr
		}
	}
	low := strings.ToLower(raw)
	switch {
	case strings.Contains(low, "connection refused"):
		p.What, p.Unreachable = "is unreachable (connection refused: nothing listens there)", true
	case strings.Contains(low, "no such host"):
		p.What, p.Unreachable = "is unreachable (no such host)", true
	case strings.Contains(low, "deadline exceeded") || strings.Contains(low, "timeout") || strings.Contains(low, "timed out"):
		p.What, p.Unreachable = "is not answering (timed out)", true
	case strings.Contains(low, "connection reset") || strings.Contains(low, "eof") || strings.Contains(low, "broken pipe"):
		p.What, p.Unreachable = "is unreachable (the connection broke)", true
	case strings.Contains(low, "accessdenied") || strings.Contains(low, "unrecognizedclient") || strings.Contains(low, "403"):
		p.What = "refuses this process's credentials"
	case strings.Contains(low, "nonexistentqueue") || strings.Contains(low, "resourcenotfound") || strings.Contains(low, "does not exist"):
		p.What = "has no such queue, table or stream (not provisioned?)"
	case strings.Contains(low, "throttl") || strings.Contains(low, "exceeded"):
		p.What = "is throttling this process"
	default:
		p.What = "answers with an error"
	}
	return p
}

// Sources of outages besides the queues (keyed by their URL).
const (
	sourceEvents  = "dynamodb events"
	sourceRollups = "dynamodb rollups"
)

// outages remember since when each source has failed (wall clock): the
// first failure after a success.
type outages struct {
	mu    sync.Mutex
	since map[string]time.Time
	last  map[string]*problem
}

// get returns source's current problem (nil: it answered last time).
func (o *outages) get(source string) *problem {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.last[source]
}

// note records source's outcome at now and returns the problem (nil
// when err is nil).
func (o *outages) note(source, service, addr string, err error, now time.Time) *problem {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err == nil {
		delete(o.since, source)
		delete(o.last, source)
		return nil
	}
	if o.since == nil {
		o.since, o.last = map[string]time.Time{}, map[string]*problem{}
	}
	s, ok := o.since[source]
	if !ok {
		s = now
		o.since[source] = s
	}
	p := explain(service, addr, err)
	p.Since, p.For = s, now.Sub(s)
	o.last[source] = &p
	return &p
}

// health is the one banner over every page: the worst stage and why.
type health struct {
	State string // stateOK, stateLagging, stateDown (worst of the stages)
	Text  string
}

// healthOf sums the stages up for the banner.
func healthOf(ss []stage) health {
	rank := map[string]int{stateOK: 0, stateIdle: 0, stateUnknown: 0, stateLagging: 1, stateDown: 2}
	h := health{State: stateOK}
	var down, lagging []string
	for _, s := range ss {
		if rank[s.State] > rank[h.State] {
			h.State = s.State
		}
		switch s.State {
		case stateDown:
			down = append(down, s.Name+": "+s.Note)
		case stateLagging:
			lagging = append(lagging, s.Name+": "+s.Note)
		}
	}
	switch h.State {
	case stateDown:
		h.Text = fmt.Sprintf("%d stage%s down. %s", len(down), plural(len(down)), strings.Join(down, " · "))
		if len(lagging) > 0 {
			h.Text += fmt.Sprintf(" · %d behind", len(lagging))
		}
	case stateLagging:
		h.Text = fmt.Sprintf("%d stage%s behind. %s", len(lagging), plural(len(lagging)), strings.Join(lagging, " · "))
	default:
		h.Text = "Every stage this process can see is working."
	}
	return h
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
