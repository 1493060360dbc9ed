package iotdata

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Broker is where LocalEndpoint publishes: a local MQTT broker
// (internal/mqttbroker.Broker, or a client connected to one). Publish
// returns once the broker has the message; it is called concurrently.
type Broker interface {
	Publish(topic string, payload []byte, qos byte) error
}

// LocalEndpoint is an http.Handler that takes the IoT data plane's
// Publish request (POST /topics/<escaped topic>?qos=<0|1>, SigV4 for
// iotdata) and publishes the body on Broker. It answers 200 {"message":"OK"},
// 400 for a bad topic or qos, 403 without a valid signature, 413 for a
// payload over 128 KiB, and 503 when the broker fails (which Publisher
// retries).
type LocalEndpoint struct {
	Broker Broker
	// Credentials, when set, make the endpoint verify the signature, not
	// only its presence and scope.
	Credentials aws.CredentialsProvider
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

var _ http.Handler = (*LocalEndpoint)(nil)

func (l *LocalEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, err error) {
		http.Error(w, fmt.Sprintf(`{"message":%q}`, err.Error()), status)
	}
	escaped, ok := strings.CutPrefix(r.URL.EscapedPath(), "/topics/")
	if !ok || r.Method != http.MethodPost {
		fail(http.StatusNotFound, errors.New("only POST /topics/<topic> is served"))
		return
	}
	topic, err := url.PathUnescape(escaped)
	if err == nil {
		err = CheckTopic(topic)
	}
	if err != nil {
		fail(http.StatusBadRequest, err)
		return
	}
	var qos byte
	switch r.URL.Query().Get("qos") {
	case "", "0":
	case "1":
		qos = 1
	default:
		fail(http.StatusBadRequest, ErrBadQoS)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxPayload+1))
	if err != nil {
		fail(http.StatusBadRequest, err)
		return
	}
	if len(body) > MaxPayload {
		fail(http.StatusRequestEntityTooLarge, ErrPayloadTooLarge)
		return
	}
	if err := l.authorize(r.Context(), r, body); err != nil {
		fail(http.StatusForbidden, err)
		return
	}
	if err := l.Broker.Publish(topic, body, qos); err != nil {
		l.logger().Warn("local iot publish failed", "topic", topic, "err", err)
		fail(http.StatusServiceUnavailable, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"message":"OK"}`)
}

// authorize checks the Authorization header: AWS4-HMAC-SHA256 with a
// credential scope ending in /<region>/iotdata/aws4_request, signed
// headers including host and x-amz-date, and, with Credentials, the
// signature itself.
func (l *LocalEndpoint) authorize(ctx context.Context, r *http.Request, body []byte) error {
	auth := r.Header.Get("Authorization")
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !ok {
		return fmt.Errorf("authorization %q: %w", auth, ErrUnauthorized)
	}
	fields := map[string]string{}
	for _, f := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		fields[k] = v
	}
	scope := strings.Split(fields["Credential"], "/")
	signed := strings.Split(fields["SignedHeaders"], ";")
	switch {
	case len(scope) != 5 || scope[3] != SigningName || scope[4] != "aws4_request":
		return fmt.Errorf("credential scope %q, want <key>/<date>/<region>/%s/aws4_request: %w", fields["Credential"], SigningName, ErrUnauthorized)
	case fields["Signature"] == "" || !contains(signed, "host") || !contains(signed, "x-amz-date"):
		return fmt.Errorf("signed headers %q or signature missing: %w", fields["SignedHeaders"], ErrUnauthorized)
	}
	if l.Credentials == nil {
		return nil
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return fmt.Errorf("x-amz-date %q: %w", r.Header.Get("X-Amz-Date"), ErrUnauthorized)
	}
	creds, err := l.Credentials.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	// Sign the request again as the client did: the same URL and signed
	// headers, the same time; the signatures must agree.
	again, err := http.NewRequestWithContext(ctx, r.Method, "http://"+r.Host+r.URL.RequestURI(), nil)
	if err != nil {
		return err
	}
	for _, h := range signed {
		if h != "host" {
			again.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	again.ContentLength = r.ContentLength
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(ctx, creds, again, hex.EncodeToString(sum[:]), SigningName, scope[2], at); err != nil {
		return err
	}
	if got, want := fields["Signature"], signatureOf(again.Header.Get("Authorization")); got != want {
		return fmt.Errorf("signature does not match: %w", ErrUnauthorized)
	}
	return nil
}

func signatureOf(auth string) string {
	_, sig, _ := strings.Cut(auth, "Signature=")
	return sig
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (l *LocalEndpoint) logger() *slog.Logger {
	if l.Logger == nil {
		return slog.Default()
	}
	return l.Logger
}
