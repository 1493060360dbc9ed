package iotdata

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/bowline-iot/bowline/internal/backoff"
)

// EndpointEnv is the SDK's per-service endpoint variable of the IoT data
// plane (service id "IoT Data Plane"): https://<prefix>-ats.iot.<region>.amazonaws.com
// in AWS, the LocalEndpoint's URL locally.
const EndpointEnv = "AWS_ENDPOINT_URL_IOT_DATA_PLANE"

// SigningName is the SigV4 service name of the IoT data plane.
const SigningName = "iotdata"

// Publisher publishes through the IoT data plane's HTTPS Publish. Set the
// fields, then call Publish; the zero values of the optional ones are
// their defaults. Safe for concurrent use once set.
type Publisher struct {
	// Endpoint is the data endpoint's base URL, https://host. Required.
	Endpoint string
	// Region and Credentials sign the requests. Required.
	Region      string
	Credentials aws.CredentialsProvider
	// HTTPClient defaults to http.DefaultClient.
	HTTPClient aws.HTTPClient
	// Timeout bounds a Publish, retries included, when its context has no
	// deadline. Default 10s.
	Timeout time.Duration
	// MaxAttempts is how often a throttled or failed request is sent in
	// all. Default 4.
	MaxAttempts int
	// Retry spaces the attempts. Default 100ms doubling to 2s, half jitter.
	Retry backoff.Policy
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// FromConfig returns a Publisher signing with cfg's region and
// credentials, for endpoint, or $AWS_ENDPOINT_URL_IOT_DATA_PLANE when
// endpoint is empty.
func FromConfig(cfg aws.Config, endpoint string) (*Publisher, error) {
	if endpoint == "" {
		endpoint = os.Getenv(EndpointEnv)
	}
	p := &Publisher{Endpoint: endpoint, Region: cfg.Region, Credentials: cfg.Credentials, HTTPClient: cfg.HTTPClient}
	return p, p.Validate()
}

// Validate checks the required fields.
func (p *Publisher) Validate() error {
	if p.Endpoint == "" {
		return ErrNoEndpoint
	}
	u, err := url.Parse(p.Endpoint)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("iot data endpoint %q: want https://host: %w", p.Endpoint, ErrNoEndpoint)
	}
	if p.Region == "" || p.Credentials == nil {
		return errors.New("iot data publisher: Region and Credentials are required")
	}
	return nil
}

// Publish sends payload to topic with qos (0 or 1). It retries 429 and
// 5xx answers and transport errors up to MaxAttempts within the deadline;
// any other answer is a *StatusError naming the topic and the status.
func (p *Publisher) Publish(ctx context.Context, topic string, payload []byte, qos int) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if err := CheckTopic(topic); err != nil {
		return err
	}
	if len(payload) > MaxPayload {
		return fmt.Errorf("publish to topic %q: %d bytes: %w", topic, len(payload), ErrPayloadTooLarge)
	}
	if qos != 0 && qos != 1 {
		return fmt.Errorf("publish to topic %q: qos %d: %w", topic, qos, ErrBadQoS)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, orDefault(p.Timeout, 10*time.Second))
		defer cancel()
	}
	target := strings.TrimRight(p.Endpoint, "/") + "/topics/" + url.PathEscape(topic) + "?qos=" + strconv.Itoa(qos)
	sum := sha256.Sum256(payload)
	hash := hex.EncodeToString(sum[:])
	attempts := p.MaxAttempts
	if attempts <= 0 {
		attempts = 4
	}
	policy := p.Retry
	if policy == (backoff.Policy{}) {
		policy = backoff.Policy{Base: 100 * time.Millisecond, Max: 2 * time.Second, Jitter: 0.5}
	}
	var err error
	for attempt := range attempts {
		if attempt > 0 {
			if werr := policy.Wait(ctx, attempt-1); werr != nil {
				return fmt.Errorf("publish to topic %q: %w (last: %w)", topic, werr, err)
			}
		}
		err = p.send(ctx, target, topic, payload, hash)
		var se *StatusError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &se) && !se.Retryable():
			return err
		case ctx.Err() != nil:
			return err
		}
		p.logger().Warn("iot publish failed; retrying", "topic", topic, "attempt", attempt+1, "err", err)
	}
	return err
}

// send makes one signed request.
func (p *Publisher) send(ctx context.Context, target, topic string, payload []byte, hash string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(payload))
	if err != nil {
		return fmt.Errorf("publish to topic %q: %w", topic, err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	creds, err := p.Credentials.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("publish to topic %q: credentials: %w", topic, err)
	}
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hash, SigningName, p.Region, time.Now()); err != nil {
		return fmt.Errorf("publish to topic %q: sign: %w", topic, err)
	}
	var client aws.HTTPClient = http.DefaultClient
	if p.HTTPClient != nil {
		client = p.HTTPClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("publish to topic %q: %w", topic, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return &StatusError{Topic: topic, Status: resp.StatusCode, Body: strings.TrimSpace(string(body))}
	}
	return nil
}

func (p *Publisher) logger() *slog.Logger {
	if p.Logger == nil {
		return slog.Default()
	}
	return p.Logger
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
