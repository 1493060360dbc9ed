package mqttbroker

import (
	"strconv"
	"strings"
	"sync"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// MeterUnit is the size AWS IoT Core meters messages in: 5 KB.
const MeterUnit = 5 * 1024

// BasicIngestPrefix starts the topics AWS IoT delivers straight to a rule
// (Basic Ingest) without a messaging charge.
const BasicIngestPrefix = "$aws/rules/"

// Units is the number of 5 KB units n metered bytes count as: at least one.
func Units(n int) int64 {
	return max(1, int64((n+MeterUnit-1)/MeterUnit))
}

// Traffic is the MQTT traffic of one class of topics, as AWS IoT Core
// meters it (docs/cost.md): PUBLISH in and out by topic plus payload,
// CONNECT by its will, SUBSCRIBE by its topic filters, a PUBACK received
// from a client as one unit; a PUBACK the broker sends is counted but not
// metered.
type Traffic struct {
	PublishesIn  int64 `json:"publishes_in"`
	PublishesOut int64 `json:"publishes_out"`
	// PubAcksIn are PUBACKs received from clients (metered), PubAcksOut
	// those the broker sent (free).
	PubAcksIn  int64 `json:"pubacks_in"`
	PubAcksOut int64 `json:"pubacks_out"`
	Connects   int64 `json:"connects"`
	Subscribes int64 `json:"subscribes"`
	// Messages and Units are the metered messages and their 5 KB units.
	Messages int64 `json:"messages"`
	Units    int64 `json:"units"`
	// Bytes are the metered bytes of publishes (topic + payload).
	Bytes int64 `json:"bytes"`
}

func (t *Traffic) meter(n int) {
	t.Messages++
	t.Units += Units(n)
}

// Metered is a Meter's counts.
type Metered struct {
	// Classes is the traffic by the class its topic is in (Meter.Class);
	// CONNECT and SUBSCRIBE are in class "".
	Classes map[string]Traffic `json:"classes"`
	// BasicIngest is the publishes on $aws/rules/... topics: not metered
	// as messages; Units are the 5 KB units a rule is metered in.
	BasicIngest Traffic `json:"basic_ingest"`
	// HTTPSPublishes are the publishes (of any class) from HTTPS
	// stand-ins (Meter.HTTPS).
	HTTPSPublishes int64 `json:"https_publishes"`
	// ConnectionSeconds is the connected time of every session, ended or
	// still open when the counts were taken.
	ConnectionSeconds float64 `json:"connection_seconds"`
	Sessions          int64   `json:"sessions"`
	// Reconnects are sessions of a client id that had one before.
	Reconnects     int64 `json:"reconnects"`
	MaxConnections int64 `json:"max_connections"`
	// The busiest client: publishes in and out, publish bytes in and
	// out, topic filters subscribed; and the largest publish.
	MaxClientPublishes     int64 `json:"max_client_publishes"`
	MaxClientBytes         int64 `json:"max_client_bytes"`
	MaxClientSubscriptions int64 `json:"max_client_subscriptions"`
	MaxPublishBytes        int64 `json:"max_publish_bytes"`
}

// Total is the traffic of every class.
func (m Metered) Total() Traffic {
	var t Traffic
	for _, c := range m.Classes {
		t.PublishesIn += c.PublishesIn
		t.PublishesOut += c.PublishesOut
		t.PubAcksIn += c.PubAcksIn
		t.PubAcksOut += c.PubAcksOut
		t.Connects += c.Connects
		t.Subscribes += c.Subscribes
		t.Messages += c.Messages
		t.Units += c.Units
		t.Bytes += c.Bytes
	}
	return t
}

// Meter is a hook that counts what AWS IoT Core would bill for the
// broker's traffic. Pass it in Config.Hooks or add it to a running server
// (Server().AddHook). It is safe for concurrent use.
type Meter struct {
	mqtt.HookBase

	// Class, when set, names the class a topic's messages are billed under
	// (acknowledgements apart from telemetry); nil puts every topic in "".
	Class func(topic string) string
	// Skip, when set, names clients whose traffic is not metered: local
	// stand-ins for AWS services that hold a connection AWS would not
	// (the rules engine's subscriber).
	Skip func(clientID string) bool
	// HTTPS, when set, names clients that stand in for HTTPS publishers
	// (the AWS IoT data plane Publish API): their publishes are metered,
	// their connection, CONNECT and SUBSCRIBE are not.
	HTTPS func(clientID string) bool

	mu       sync.Mutex
	m        Metered
	open     map[string]time.Time
	seen     map[string]bool
	clients  map[string]*clientCounts
	inflight map[string]string // client id + packet id -> class of a QoS 1 publish sent
	now      func() time.Time
	initOnce sync.Once
}

type clientCounts struct{ publishes, bytes, subscriptions int64 }

var _ mqtt.Hook = (*Meter)(nil)

// ID names the hook in mochi's logs.
func (m *Meter) ID() string { return "bowline-meter" }

// Provides reports the events the Meter handles.
func (m *Meter) Provides(b byte) bool {
	switch b {
	case mqtt.OnSessionEstablished, mqtt.OnDisconnect, mqtt.OnPacketRead, mqtt.OnPacketEncode, mqtt.OnPacketSent:
		return true
	}
	return false
}

func (m *Meter) init() {
	m.initOnce.Do(func() {
		m.m.Classes = map[string]Traffic{}
		m.open = map[string]time.Time{}
		m.seen = map[string]bool{}
		m.clients = map[string]*clientCounts{}
		m.inflight = map[string]string{}
		if m.now == nil {
			m.now = time.Now
		}
	})
}

func (m *Meter) skip(id string) bool { return m.Skip != nil && m.Skip(id) }

func (m *Meter) https(id string) bool { return m.HTTPS != nil && m.HTTPS(id) }

func (m *Meter) class(topic string) string {
	if m.Class == nil {
		return ""
	}
	return m.Class(topic)
}

// client returns the counts of id; m.mu must be held.
func (m *Meter) client(id string) *clientCounts {
	c := m.clients[id]
	if c == nil {
		c = new(clientCounts)
		m.clients[id] = c
	}
	return c
}

func (m *Meter) busiest(c *clientCounts) {
	m.m.MaxClientPublishes = max(m.m.MaxClientPublishes, c.publishes)
	m.m.MaxClientBytes = max(m.m.MaxClientBytes, c.bytes)
	m.m.MaxClientSubscriptions = max(m.m.MaxClientSubscriptions, c.subscriptions)
}

// update applies f to the traffic of class; m.mu must be held.
func (m *Meter) update(class string, f func(*Traffic)) {
	t := m.m.Classes[class]
	f(&t)
	m.m.Classes[class] = t
}

// OnSessionEstablished starts the client's connected time.
func (m *Meter) OnSessionEstablished(cl *mqtt.Client, _ packets.Packet) {
	if m.skip(cl.ID) || m.https(cl.ID) {
		return
	}
	m.init()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m.Sessions++
	if m.seen[cl.ID] {
		m.m.Reconnects++
	}
	m.seen[cl.ID] = true
	if _, ok := m.open[cl.ID]; !ok {
		m.open[cl.ID] = m.now()
	}
	m.m.MaxConnections = max(m.m.MaxConnections, int64(len(m.open)))
}

// OnDisconnect ends the client's connected time.
func (m *Meter) OnDisconnect(cl *mqtt.Client, _ error, _ bool) {
	m.init()
	m.mu.Lock()
	defer m.mu.Unlock()
	if at, ok := m.open[cl.ID]; ok {
		m.m.ConnectionSeconds += m.now().Sub(at).Seconds()
		delete(m.open, cl.ID)
	}
}

// OnPacketRead meters what a client sends.
func (m *Meter) OnPacketRead(cl *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	id := cl.ID
	if pk.FixedHeader.Type == packets.Connect {
		id = pk.Connect.ClientIdentifier
	}
	if m.skip(id) {
		return pk, nil
	}
	m.init()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.https(id) && pk.FixedHeader.Type != packets.Publish {
		return pk, nil
	}
	switch pk.FixedHeader.Type {
	case packets.Connect:
		n := 0
		if pk.Connect.WillFlag {
			n = len(pk.Connect.WillTopic) + len(pk.Connect.WillPayload)
		}
		m.update("", func(t *Traffic) { t.Connects++; t.meter(n) })
	case packets.Subscribe:
		n := 0
		for _, f := range pk.Filters {
			n += len(f.Filter)
		}
		m.update("", func(t *Traffic) { t.Subscribes++; t.meter(n) })
		c := m.client(id)
		c.subscriptions += int64(len(pk.Filters))
		m.busiest(c)
	case packets.Publish:
		n := len(pk.TopicName) + len(pk.Payload)
		m.m.MaxPublishBytes = max(m.m.MaxPublishBytes, int64(len(pk.Payload)))
		if m.https(id) {
			// An HTTPS request body is the payload; the topic is in the URL.
			n = len(pk.Payload)
			m.m.HTTPSPublishes++
		} else {
			c := m.client(id)
			c.publishes++
			c.bytes += int64(n)
			m.busiest(c)
		}
		if strings.HasPrefix(pk.TopicName, BasicIngestPrefix) {
			m.m.BasicIngest.PublishesIn++
			m.m.BasicIngest.Units += Units(n)
			m.m.BasicIngest.Bytes += int64(n)
			return pk, nil
		}
		m.update(m.class(pk.TopicName), func(t *Traffic) { t.PublishesIn++; t.Bytes += int64(n); t.meter(n) })
	case packets.Puback:
		k := inflightKey(id, pk.PacketID)
		class := m.inflight[k]
		delete(m.inflight, k)
		m.update(class, func(t *Traffic) { t.PubAcksIn++; t.meter(0) })
	}
	return pk, nil
}

// OnPacketEncode notes the class of a QoS 1 publish before it is written
// to the client. A fast client's PUBACK can be read before OnPacketSent
// runs for the publish it acknowledges, and must still be billed in the
// publish's class.
func (m *Meter) OnPacketEncode(cl *mqtt.Client, pk packets.Packet) packets.Packet {
	if pk.FixedHeader.Type != packets.Publish || pk.FixedHeader.Qos == 0 || m.skip(cl.ID) {
		return pk
	}
	m.init()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inflight[inflightKey(cl.ID, pk.PacketID)] = m.class(pk.TopicName)
	return pk
}

// OnPacketSent meters what the broker sends a client.
func (m *Meter) OnPacketSent(cl *mqtt.Client, pk packets.Packet, _ []byte) {
	if m.skip(cl.ID) {
		return
	}
	m.init()
	m.mu.Lock()
	defer m.mu.Unlock()
	switch pk.FixedHeader.Type {
	case packets.Publish:
		n := len(pk.TopicName) + len(pk.Payload)
		m.update(m.class(pk.TopicName), func(t *Traffic) { t.PublishesOut++; t.Bytes += int64(n); t.meter(n) })
		c := m.client(cl.ID)
		c.publishes++
		c.bytes += int64(n)
		m.busiest(c)
	case packets.Puback:
		m.update("", func(t *Traffic) { t.PubAcksOut++ })
	}
}

func inflightKey(client string, id uint16) string {
	return client + "\x00" + strconv.Itoa(int(id))
}

// Counts returns the counts so far; sessions still open count their
// connected time up to now.
func (m *Meter) Counts() Metered {
	m.init()
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.m
	out.Classes = make(map[string]Traffic, len(m.m.Classes))
	for k, v := range m.m.Classes {
		out.Classes[k] = v
	}
	now := m.now()
	for _, at := range m.open {
		out.ConnectionSeconds += now.Sub(at).Seconds()
	}
	return out
}

// sub returns t minus before.
func (t Traffic) sub(before Traffic) Traffic {
	return Traffic{
		PublishesIn: t.PublishesIn - before.PublishesIn, PublishesOut: t.PublishesOut - before.PublishesOut,
		PubAcksIn: t.PubAcksIn - before.PubAcksIn, PubAcksOut: t.PubAcksOut - before.PubAcksOut,
		Connects: t.Connects - before.Connects, Subscribes: t.Subscribes - before.Subscribes,
		Messages: t.Messages - before.Messages, Units: t.Units - before.Units, Bytes: t.Bytes - before.Bytes,
	}
}

// Since returns the counts of the window from before (an earlier Counts
// of the same Meter) to m: a run's steady state without its start-up.
// The busiest-client and largest-message fields stay m's, over the whole
// run.
func (m Metered) Since(before Metered) Metered {
	out := m
	out.Classes = make(map[string]Traffic, len(m.Classes))
	for k, v := range m.Classes {
		out.Classes[k] = v.sub(before.Classes[k])
	}
	out.BasicIngest = m.BasicIngest.sub(before.BasicIngest)
	out.HTTPSPublishes -= before.HTTPSPublishes
	out.ConnectionSeconds -= before.ConnectionSeconds
	out.Sessions -= before.Sessions
	out.Reconnects -= before.Reconnects
	return out
}
