package main

import (
	"encoding/base64"
	"encoding/json"
	"net"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/bowline-iot/bowline/cloud/rules"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/mqttbroker"
	"github.com/bowline-iot/bowline/internal/resources"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// TestRulesCommandAsProcess runs `bowline rules` as a process configured
// by the environment, with a Kinesis endpoint that refuses connections: a
// batch published by Basic Ingest reaches rule-errors as an error action
// message after --max-attempts, and SIGTERM stops the command cleanly.
func TestRulesCommandAsProcess(t *testing.T) {
	lstest.Stack(t)
	names := freshStack(t)
	b, err := mqttbroker.Start(mqttbroker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadKinesis := "http://" + closed.Addr().String()
	closed.Close()
	env := append(os.Environ(), resources.StackEnv+"="+names.Stack, "BOWLINE_MQTT_URL="+b.URL(), "AWS_ENDPOINT_URL_KINESIS="+deadKinesis)
	p := startProc(t, bowlineBin(t), env, "rules", "--max-attempts", "2", "--legacy-telemetry-v1=false", "--metrics-addr", "127.0.0.1:0")
	p.waitLine(t, "mqtt subscribed")

	topic := wire.BasicIngestTopic(rules.Telemetry.Name(names.Stack), wire.Topic{Tenant: "t1", Thing: "gw-1", Kind: wire.KindBatch})
	payload := []byte{0x02, 0x42}
	c := paho.NewClient(paho.NewClientOptions().AddBroker(b.URL()).SetClientID("gw-1").SetAutoReconnect(false))
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("connect: %v", tok.Error())
	}
	defer c.Disconnect(100)
	if tok := c.Publish(topic, 1, false, payload); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("publish: %v", tok.Error())
	}

	q := sqs.NewFromConfig(lstest.AWSConfig(t))
	url, err := q.GetQueueUrl(t.Context(), &sqs.GetQueueUrlInput{QueueName: aws.String(names.RuleErrorsQueue())})
	if err != nil {
		t.Fatal(err)
	}
	var got rules.ErrorMessage
	testkit.WaitFor(t, "the error action message", 60*time.Second, func() bool {
		out, err := q.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: url.QueueUrl, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			if json.Unmarshal([]byte(aws.ToString(m.Body)), &got) == nil {
				return true
			}
		}
		return false
	})
	if got.RuleName != rules.Telemetry.Name(names.Stack) || got.Topic != topic || got.Base64OriginalPayload != base64.StdEncoding.EncodeToString(payload) {
		t.Errorf("error message = %+v; want rule %s, topic %s, payload %x", got, rules.Telemetry.Name(names.Stack), topic, payload)
	}
	p.stop(t)
}
