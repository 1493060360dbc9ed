// Package faultproxy is a reverse proxy that sits between an AWS SDK client
// and a local emulator and answers chosen operations with an AWS error
// instead of forwarding them: throttling, 5xx, whatever a test needs to
// prove a caller survives. It serves the JSON protocols (DynamoDB, Kinesis,
// SQS with AWS JSON 1.0), where the operation is the suffix of the
// X-Amz-Target header ("DynamoDB_20120810.UpdateItem" is "UpdateItem").
//
// Proving ground: a fault tool for tests, never linked into a product
// (docs/README.md, "The proving ground").
//
//	p := faultproxy.Start(t, stack.DynamoDBEndpoint)
//	ddb := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(p.URL()) })
//	p.Fail(faultproxy.Ops("UpdateItem"), faultproxy.Throttling) // every UpdateItem is throttled
//	...
//	p.Heal()                                                     // everything is forwarded again
//
// Faults are chosen per call by a Rule, so a test can fail every call, every
// other one, or only those of one table. The proxy counts calls and faults
// per operation.
package faultproxy

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Fault is the error answered instead of forwarding a call.
type Fault struct {
	// Status is the HTTP status code.
	Status int
	// Type is the AWS error code ("__type" in the JSON body).
	Type string
	// Message is the error message.
	Message string
}

// Faults AWS services answer under load or outage.
var (
	// Throttling is DynamoDB's answer when a table or partition is over its
	// throughput (400, retryable).
	Throttling = Fault{Status: http.StatusBadRequest, Type: "ProvisionedThroughputExceededException", Message: "The level of configured provisioned throughput for the table was exceeded (fault proxy)"}
	// RequestLimit is DynamoDB's account-level throttle (400, retryable).
	RequestLimit = Fault{Status: http.StatusBadRequest, Type: "RequestLimitExceeded", Message: "Throughput exceeds the current throughput limit for your account (fault proxy)"}
	// InternalError is a 500 from the service.
	InternalError = Fault{Status: http.StatusInternalServerError, Type: "InternalServerError", Message: "Internal server error (fault proxy)"}
	// Unavailable is a 503 from the service.
	Unavailable = Fault{Status: http.StatusServiceUnavailable, Type: "ServiceUnavailable", Message: "Service unavailable (fault proxy)"}
	// AccessDenied is DynamoDB's answer when IAM denies the call: 400, not
	// retryable until someone fixes the policy (DynamoDB developer guide,
	// "Error handling": AccessDeniedException, "OK to retry? No").
	AccessDenied = Fault{Status: http.StatusBadRequest, Type: "com.amazonaws.dynamodb.v20120810#AccessDeniedException", Message: "User: arn:aws:sts::000000000000:assumed-role/bowline/fault-proxy is not authorized to perform this action on the table because no identity-based policy allows it (fault proxy)"}
	// TableNotFound is DynamoDB's answer for a missing (or still creating)
	// table: 400 ResourceNotFoundException, "OK to retry? No" until it
	// exists.
	TableNotFound = Fault{Status: http.StatusBadRequest, Type: "com.amazonaws.dynamodb.v20120810#ResourceNotFoundException", Message: "Requested resource not found (fault proxy)"}
)

// Rule decides, for the n-th call (from 1) of operation op, whether to
// answer with a fault; ok false forwards the call.
type Rule func(op string, n int) (f Fault, ok bool)

// Ops returns a rule that fails every call of the named operations with the
// fault given to Fail; use it as Fail(Ops("UpdateItem"), Throttling).
func Ops(ops ...string) func(Fault) Rule {
	return func(f Fault) Rule {
		return func(op string, _ int) (Fault, bool) {
			for _, o := range ops {
				if o == op {
					return f, true
				}
			}
			return Fault{}, false
		}
	}
}

// Proxy forwards to one upstream and injects faults. It is safe for
// concurrent use.
type Proxy struct {
	url string

	mu      sync.Mutex
	rule    Rule
	calls   map[string]int
	faulted map[string]int
}

// Start runs a proxy to upstream (an emulator's endpoint URL) on a free
// loopback port until the test ends.
func Start(t testing.TB, upstream string) *Proxy {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatalf("faultproxy: upstream %q: %v", upstream, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("faultproxy: listen: %v", err)
	}
	p := &Proxy{url: "http://" + ln.Addr().String(), calls: map[string]int{}, faulted: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := Operation(r)
		if f, ok := p.decide(op); ok {
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.Header().Set("X-Amzn-ErrorType", f.Type)
			w.WriteHeader(f.Status)
			fmt.Fprintf(w, `{"__type":%q,"message":%q}`, f.Type, f.Message)
			return
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return p
}

// URL is the proxy's endpoint, for the client's BaseEndpoint.
func (p *Proxy) URL() string { return p.url }

// Operation is the AWS JSON operation of r: the part of X-Amz-Target after
// the last dot, or "" when there is none.
func Operation(r *http.Request) string {
	target := r.Header.Get("X-Amz-Target")
	return target[strings.LastIndexByte(target, '.')+1:]
}

// Fail makes every call for which rule(f) reports a fault fail with f;
// Fail(Ops("UpdateItem", "PutItem"), Throttling), say.
func (p *Proxy) Fail(rule func(Fault) Rule, f Fault) { p.SetRule(rule(f)) }

// SetRule replaces the rule; nil forwards everything.
func (p *Proxy) SetRule(r Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rule = r
}

// Heal forwards every call from now on.
func (p *Proxy) Heal() { p.SetRule(nil) }

// Calls returns how many calls of op the proxy saw.
func (p *Proxy) Calls(op string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[op]
}

// Faulted returns how many calls of op were answered with a fault.
func (p *Proxy) Faulted(op string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.faulted[op]
}

func (p *Proxy) decide(op string) (Fault, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls[op]++
	if p.rule == nil {
		return Fault{}, false
	}
	f, ok := p.rule(op, p.calls[op])
	if ok {
		p.faulted[op]++
	}
	return f, ok
}
