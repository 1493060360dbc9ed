package iotdata_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/bowline-iot/bowline/cloud/iotdata"
	"github.com/bowline-iot/bowline/internal/backoff"
	"github.com/bowline-iot/bowline/internal/mqttbroker"
	"github.com/bowline-iot/bowline/internal/testkit"
)

var (
	creds = credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")
	wrong = credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "not-the-secret", "")
)

const ackTopic = "cmd/bowline/t1/gw-1/ack"

func publisher(t *testing.T, endpoint string) *iotdata.Publisher {
	return &iotdata.Publisher{
		Endpoint: endpoint, Region: "eu-west-1", Credentials: creds,
		Retry:  backoff.Policy{Base: time.Millisecond, Max: 5 * time.Millisecond},
		Logger: testkit.Logger(t, slog.LevelWarn),
	}
}

// The publisher's request, through the local endpoint, reaches an MQTT
// subscriber of the topic with the payload unchanged; the endpoint checks
// the signature with the same credentials.
func TestPublishThroughLocalEndpointReachesSubscriber(t *testing.T) {
	b, err := mqttbroker.Start(mqttbroker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	got := make(chan paho.Message, 1)
	sub := paho.NewClient(paho.NewClientOptions().AddBroker(b.URL()).SetClientID("gw-1"))
	if tok := sub.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("connect: %v", tok.Error())
	}
	t.Cleanup(func() { sub.Disconnect(100) })
	if tok := sub.Subscribe("cmd/bowline/t1/gw-1/#", 1, func(_ paho.Client, m paho.Message) { got <- m }); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("subscribe: %v", tok.Error())
	}
	srv := httptest.NewServer(&iotdata.LocalEndpoint{Broker: b, Credentials: creds, Logger: testkit.Logger(t, slog.LevelWarn)})
	t.Cleanup(srv.Close)

	payload := []byte(`{"v":1,"outbox":"ob","things":{"gw-1:bowl":[[1,5]]}}`)
	if err := publisher(t, srv.URL).Publish(t.Context(), ackTopic, payload, 1); err != nil {
		t.Fatalf("Publish(%q) = %v; want nil", ackTopic, err)
	}
	select {
	case m := <-got:
		if m.Topic() != ackTopic || !bytes.Equal(m.Payload(), payload) || m.Qos() != 1 {
			t.Errorf("subscriber got %q %q qos %d; want %q %q qos 1", m.Topic(), m.Payload(), m.Qos(), ackTopic, payload)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("subscriber got nothing")
	}

	// Signed with other credentials: refused, and not retried.
	p := publisher(t, srv.URL)
	p.Credentials = wrong
	err = p.Publish(t.Context(), ackTopic, payload, 0)
	var se *iotdata.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusForbidden || !strings.Contains(err.Error(), ackTopic) {
		t.Errorf("Publish with wrong credentials = %v; want HTTP 403 naming the topic", err)
	}
}

// The request is what AWS IoT's Publish takes: POST /topics/<escaped
// topic>?qos=N, the payload as body, SigV4 for iotdata in the region.
func TestPublishRequestIsSignedForIotdata(t *testing.T) {
	var seen *http.Request
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, body = r, must(io.ReadAll(r.Body))
	}))
	t.Cleanup(srv.Close)
	if err := publisher(t, srv.URL).Publish(t.Context(), ackTopic, []byte("ack"), 0); err != nil {
		t.Fatal(err)
	}
	if seen.Method != http.MethodPost || seen.URL.EscapedPath() != "/topics/cmd%2Fbowline%2Ft1%2Fgw-1%2Fack" || seen.URL.RawQuery != "qos=0" {
		t.Errorf("request %s %s?%s; want POST /topics/cmd%%2Fbowline%%2Ft1%%2Fgw-1%%2Fack?qos=0", seen.Method, seen.URL.EscapedPath(), seen.URL.RawQuery)
	}
	if string(body) != "ack" {
		t.Errorf("body %q; want %q", body, "ack")
	}
	auth := seen.Header.Get("Authorization")
	for _, want := range []string{"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/", "/eu-west-1/iotdata/aws4_request", "SignedHeaders=", "host", "x-amz-date", "Signature="} {
		if !strings.Contains(auth, want) {
			t.Errorf("Authorization %q; want it to contain %q", auth, want)
		}
	}
	if seen.Header.Get("X-Amz-Date") == "" {
		t.Error("no X-Amz-Date header")
	}
}

// Throttling and server errors are retried; a client error is not, and
// names the topic and the status.
func TestPublishRetriesThrottlingAndServerErrorsOnly(t *testing.T) {
	var mu sync.Mutex
	answers := []int{429, 503, 200}
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		code := answers[min(calls, len(answers)-1)]
		calls++
		w.WriteHeader(code)
	}))
	t.Cleanup(srv.Close)
	if err := publisher(t, srv.URL).Publish(t.Context(), ackTopic, nil, 0); err != nil || calls != 3 {
		t.Errorf("Publish after 429, 503 = %v in %d calls; want nil in 3", err, calls)
	}
	mu.Lock()
	answers, calls = []int{400}, 0
	mu.Unlock()
	err := publisher(t, srv.URL).Publish(t.Context(), ackTopic, nil, 0)
	var se *iotdata.StatusError
	if !errors.As(err, &se) || se.Status != 400 || se.Topic != ackTopic || calls != 1 {
		t.Errorf("Publish on 400 = %v in %d calls; want a StatusError 400 for %q in 1", err, calls, ackTopic)
	}
	mu.Lock()
	answers, calls = []int{500}, 0
	mu.Unlock()
	if err := publisher(t, srv.URL).Publish(t.Context(), ackTopic, nil, 0); !errors.As(err, &se) || se.Status != 500 || calls != 4 {
		t.Errorf("Publish on 500s = %v in %d calls; want the last 500 after 4", err, calls)
	}
}

// A call without a deadline gets the publisher's timeout.
func TestPublishHasADeadline(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	t.Cleanup(func() { close(release); srv.Close() })
	p := publisher(t, srv.URL)
	p.Timeout = 100 * time.Millisecond
	start := time.Now()
	err := p.Publish(context.Background(), ackTopic, nil, 0)
	if err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("Publish to a hung endpoint = %v after %v; want an error after about 100ms", err, time.Since(start))
	}
}

// Input AWS IoT would refuse is refused before any request.
func TestPublishRefusesWhatAWSIoTRefuses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Errorf("request sent: %s", r.URL) }))
	t.Cleanup(srv.Close)
	p := publisher(t, srv.URL)
	for _, tc := range []struct {
		topic   string
		payload []byte
		qos     int
		want    error
	}{
		{"", nil, 0, iotdata.ErrBadTopic},
		{"cmd/+/ack", nil, 0, iotdata.ErrBadTopic},
		{"a/b/c/d/e/f/g/h/i", nil, 0, iotdata.ErrBadTopic},
		{strings.Repeat("a", 257), nil, 0, iotdata.ErrBadTopic},
		{ackTopic, make([]byte, iotdata.MaxPayload+1), 0, iotdata.ErrPayloadTooLarge},
		{ackTopic, nil, 2, iotdata.ErrBadQoS},
	} {
		if err := p.Publish(t.Context(), tc.topic, tc.payload, tc.qos); !errors.Is(err, tc.want) {
			t.Errorf("Publish(%.20q, %d bytes, qos %d) = %v; want %v", tc.topic, len(tc.payload), tc.qos, err, tc.want)
		}
	}
	if err := (&iotdata.Publisher{Region: "eu-west-1", Credentials: creds}).Publish(t.Context(), ackTopic, nil, 0); !errors.Is(err, iotdata.ErrNoEndpoint) {
		t.Errorf("Publish without endpoint = %v; want ErrNoEndpoint", err)
	}
}

// The local endpoint refuses unsigned requests and other signing names.
func TestLocalEndpointRequiresIotdataSignature(t *testing.T) {
	var published int
	srv := httptest.NewServer(&iotdata.LocalEndpoint{Broker: brokerFunc(func(string, []byte, byte) error { published++; return nil })})
	t.Cleanup(srv.Close)
	for _, auth := range []string{"", "AWS4-HMAC-SHA256 Credential=AK/20260101/eu-west-1/iot/aws4_request, SignedHeaders=host;x-amz-date, Signature=ab"} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/topics/cmd%2Fa?qos=0", strings.NewReader("x"))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("Authorization %q: status %d; want 403", auth, resp.StatusCode)
		}
	}
	if published != 0 {
		t.Errorf("%d messages published; want none", published)
	}
}

type brokerFunc func(topic string, payload []byte, qos byte) error

func (f brokerFunc) Publish(topic string, payload []byte, qos byte) error {
	return f(topic, payload, qos)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

var _ iotdata.Broker = (*mqttbroker.Broker)(nil)
