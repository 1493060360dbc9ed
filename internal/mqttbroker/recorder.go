package mqttbroker

import (
	"sync"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// Message is one PUBLISH a broker accepted.
type Message struct {
	Topic    string
	Payload  []byte
	ClientID string
	At       time.Time
}

// Recorder is a hook that keeps, in order, every PUBLISH the broker accepts
// and the client id of every session it establishes, so a test can compare
// what arrived with what was sent. Pass it in Config.Hooks. It is safe for
// concurrent use, and one Recorder may serve several brokers in turn (a
// broker stopped and started again on the same address).
type Recorder struct {
	mqtt.HookBase

	mu       sync.Mutex
	msgs     []Message
	connects []string
}

var _ mqtt.Hook = (*Recorder)(nil)

// ID names the hook in mochi's logs.
func (r *Recorder) ID() string { return "bowline-recorder" }

// Provides reports the events the Recorder handles.
func (r *Recorder) Provides(b byte) bool {
	return b == mqtt.OnPublished || b == mqtt.OnSessionEstablished
}

// OnSessionEstablished records the client id.
func (r *Recorder) OnSessionEstablished(cl *mqtt.Client, _ packets.Packet) {
	r.mu.Lock()
	r.connects = append(r.connects, cl.ID)
	r.mu.Unlock()
}

// OnPublished records the message.
func (r *Recorder) OnPublished(cl *mqtt.Client, pk packets.Packet) {
	m := Message{Topic: pk.TopicName, Payload: append([]byte(nil), pk.Payload...), ClientID: cl.ID, At: time.Now()}
	r.mu.Lock()
	r.msgs = append(r.msgs, m)
	r.mu.Unlock()
}

// Messages returns a copy of every message accepted so far.
func (r *Recorder) Messages() []Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Message(nil), r.msgs...)
}

// Connects returns the client ids that established a session, in order.
func (r *Recorder) Connects() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.connects...)
}
