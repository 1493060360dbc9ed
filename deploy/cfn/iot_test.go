package cfn

import (
	"testing"
)

const iotARN = "arn:aws:iot:eu-west-1:123456789012:"

func iotPolicy(t *testing.T, logical string) *IoTPolicy {
	t.Helper()
	tpl := stackTemplate(t)
	r, ok := tpl.Resources[logical]
	if !ok || r.Type != "AWS::IoT::Policy" {
		t.Fatalf("%s is not an AWS::IoT::Policy of the template", logical)
	}
	p, err := NewIoTPolicy(r.Properties["PolicyDocument"], stackEnv)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGatewayPolicyConfinesThing evaluates the gateway policy, with its
// policy variables, for a gateway "bowl-1" of tenant "t1" against sample
// operations: it may connect only as itself, publish only to its own
// dt/bowline/t1/bowl-1/{telemetry,events,status} (retained only on status)
// and to the telemetry and events of its bowls dt/bowline/t1/bowl-1:<bowl>/,
// and listen only to its own acknowledgement topic.
func TestGatewayPolicyConfinesThing(t *testing.T) {
	p := iotPolicy(t, "GatewayIotPolicy")
	bowl1 := IoTConnection{ClientID: "bowl-1", ThingName: "bowl-1", Attached: true, Attributes: map[string]string{"tenant": "t1"}}
	for _, tc := range []struct {
		conn   IoTConnection
		action string
		res    string
		want   bool
	}{
		{bowl1, "iot:Connect", "client/bowl-1", true},
		{bowl1, "iot:Connect", "client/bowl-2", false},
		{IoTConnection{ClientID: "bowl-1", ThingName: "bowl-1", Attributes: map[string]string{"tenant": "t1"}}, "iot:Connect", "client/bowl-1", false},
		{bowl1, "iot:Publish", "topic/dt/bowline/t1/bowl-1/telemetry", true},
		{bowl1, "iot:Publish", "topic/dt/bowline/t1/bowl-1/events", true},
		{bowl1, "iot:Publish", "topic/dt/bowline/t1/bowl-1/status", true},
		{bowl1, "iot:RetainPublish", "topic/dt/bowline/t1/bowl-1/status", true},
		{bowl1, "iot:RetainPublish", "topic/dt/bowline/t1/bowl-1/events", false},
		{bowl1, "iot:Publish", "topic/dt/bowline/t2/bowl-1/telemetry", false},
		{bowl1, "iot:Publish", "topic/dt/bowline/t1/bowl-2/telemetry", false},
		{bowl1, "iot:Publish", "topic/dt/bowline/t1/bowl-1/other", false},
		// The bowls a gateway serves: <gateway>:<bowl>, never another gateway's.
		{bowl1, "iot:Publish", "topic/dt/bowline/t1/bowl-1:kitchen/events", true},
		{bowl1, "iot:Publish", "topic/dt/bowline/t1/bowl-1:kitchen/telemetry", true},
		{bowl1, "iot:Publish", "topic/dt/bowline/t1/bowl-1:kitchen/status", false},
		{bowl1, "iot:Publish", "topic/dt/bowline/t1/bowl-10/events", false},
		{bowl1, "iot:Publish", "topic/dt/bowline/t1/bowl-10:kitchen/events", false},
		{bowl1, "iot:Publish", "topic/dt/bowline/t2/bowl-1:kitchen/events", false},
		{bowl1, "iot:Publish", "topic/dt/bowline/t1/bowl-1/telemetry/extra", false},
		{bowl1, "iot:Publish", "topic/dt/bowline/t1/bowl-1", false},
		{bowl1, "iot:Publish", "topic/dt/bowline/+/+/telemetry", false},
		{bowl1, "iot:Publish", "topic/cmd/bowline/t1/bowl-1/feed", false},
		{bowl1, "iot:Publish", "topic/$aws/things/bowl-1/shadow/update", false},
		{bowl1, "iot:Subscribe", "topicfilter/cmd/bowline/t1/bowl-1/ack", true},
		{bowl1, "iot:Subscribe", "topicfilter/cmd/bowline/t1/bowl-1/feed", false},
		{bowl1, "iot:Subscribe", "topicfilter/cmd/bowline/t1/bowl-1/+", false},
		{bowl1, "iot:Subscribe", "topicfilter/cmd/bowline/t1/#", false},
		{bowl1, "iot:Subscribe", "topicfilter/cmd/bowline/t1/bowl-2/feed", false},
		{bowl1, "iot:Subscribe", "topicfilter/dt/bowline/t1/bowl-2/events", false},
		{bowl1, "iot:Subscribe", "topicfilter/#", false},
		{bowl1, "iot:Receive", "topic/cmd/bowline/t1/bowl-1/ack", true},
		{bowl1, "iot:Receive", "topic/cmd/bowline/t1/bowl-1/feed", false},
		{bowl1, "iot:Receive", "topic/cmd/bowline/t2/bowl-1/feed", false},
		{bowl1, "iot:Receive", "topic/dt/bowline/t1/bowl-2/events", false},
		// No tenant attribute: no data topic at all.
		{IoTConnection{ClientID: "bowl-3", ThingName: "bowl-3", Attached: true}, "iot:Publish", "topic/dt/bowline/t1/bowl-3/telemetry", false},
		// Certificate not attached to the thing: thing variables stay unresolved.
		{IoTConnection{ClientID: "bowl-1", ThingName: "bowl-1", Attributes: map[string]string{"tenant": "t1"}}, "iot:Publish", "topic/dt/bowline/t1/bowl-1/telemetry", false},
	} {
		got, err := p.Allowed(tc.conn, IoTRequest{Action: tc.action, Resource: iotARN + tc.res})
		if err != nil {
			t.Fatalf("%s %s: %v", tc.action, tc.res, err)
		}
		if got != tc.want {
			t.Errorf("thing %q tenant %q: %s %s allowed = %v; want %v", tc.conn.ThingName, tc.conn.Attributes["tenant"], tc.action, tc.res, got, tc.want)
		}
	}
}

// TestGatewayNamespacesDoNotOverlap: a gateway's namespace is its exact
// name followed by "/" (its own topics) or ":" (its bowls). gw-1 can never
// act as gw-10 or as another gateway named "gw-1:x": a thing whose name
// holds ':' cannot connect under this policy at all, and no data topic
// deeper than five levels is open to anyone (a "*" spans levels).
func TestGatewayNamespacesDoNotOverlap(t *testing.T) {
	p := iotPolicy(t, "GatewayIotPolicy")
	thing := func(name string) IoTConnection {
		return IoTConnection{ClientID: name, ThingName: name, Attached: true, Attributes: map[string]string{"tenant": "t1"}}
	}
	gw1, sibling := thing("gw-1"), thing("gw-1:x")
	for _, tc := range []struct {
		conn   IoTConnection
		action string
		res    string
		want   bool
	}{
		// gw-10 is another gateway: neither its topics nor its bowls'.
		{gw1, "iot:Publish", "topic/dt/bowline/t1/gw-10/telemetry", false},
		{gw1, "iot:Publish", "topic/dt/bowline/t1/gw-10/status", false},
		{gw1, "iot:Publish", "topic/dt/bowline/t1/gw-10:x/events", false},
		{gw1, "iot:Subscribe", "topicfilter/cmd/bowline/t1/gw-10/feed", false},
		{gw1, "iot:Receive", "topic/cmd/bowline/t1/gw-10/feed", false},
		// gw-1:x is one of gw-1's bowls, with no status or commands of its own.
		{gw1, "iot:Publish", "topic/dt/bowline/t1/gw-1:x/telemetry", true},
		{gw1, "iot:Publish", "topic/dt/bowline/t1/gw-1:x/status", false},
		{gw1, "iot:RetainPublish", "topic/dt/bowline/t1/gw-1:x/status", false},
		{gw1, "iot:Subscribe", "topicfilter/cmd/bowline/t1/gw-1:x/feed", false},
		{gw1, "iot:Receive", "topic/cmd/bowline/t1/gw-1:x/feed", false},
		// A "*" spans levels: nothing deeper than a data topic.
		{gw1, "iot:Publish", "topic/dt/bowline/t1/gw-1:x/gw-2/telemetry", false},
		{gw1, "iot:Publish", "topic/dt/bowline/t1/gw-1:x/../gw-2/events", false},
		// A thing named like a bowl of gw-1 is never a gateway.
		{sibling, "iot:Connect", "client/gw-1:x", false},
		{thing("gw-10"), "iot:Connect", "client/gw-10", true},
		{thing("gw-10"), "iot:Publish", "topic/dt/bowline/t1/gw-1/telemetry", false},
	} {
		got, err := p.Allowed(tc.conn, IoTRequest{Action: tc.action, Resource: iotARN + tc.res})
		if err != nil {
			t.Fatalf("%s %s: %v", tc.action, tc.res, err)
		}
		if got != tc.want {
			t.Errorf("thing %q: %s %s allowed = %v; want %v", tc.conn.ThingName, tc.action, tc.res, got, tc.want)
		}
	}
}
