package ingest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
)

// faultProxy sits between ingest and kinesis-local. Every third PutRecords
// call is refused whole with ProvisionedThroughputExceededException; in the
// others every second record is held back and reported as throttled in the
// response (the rest are forwarded). It remembers which samples kinesis-local
// accepted, so an acknowledgement can be checked against it.
type faultProxy struct {
	t        *testing.T
	srv      *httptest.Server
	upstream *url.URL

	mu        sync.Mutex
	calls     int
	refused   int
	heldBack  int
	accepted  map[string]map[uint64]bool // thing -> sample seqs accepted upstream
	violation []string
}

func newFaultProxy(t *testing.T, upstream string) *faultProxy {
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{t: t, upstream: u, accepted: map[string]map[uint64]bool{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Amz-Target") != "Kinesis_20131202.PutRecords" {
			rp.ServeHTTP(w, r)
			return
		}
		p.putRecords(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

type putRecordsReq struct {
	Records []struct {
		Data            []byte `json:"Data"`
		PartitionKey    string `json:"PartitionKey"`
		ExplicitHashKey string `json:"ExplicitHashKey,omitempty"`
	} `json:"Records"`
	StreamName string `json:"StreamName,omitempty"`
	StreamARN  string `json:"StreamARN,omitempty"`
}

type putRecordsResp struct {
	FailedRecordCount int               `json:"FailedRecordCount"`
	Records           []json.RawMessage `json:"Records"`
	EncryptionType    string            `json:"EncryptionType,omitempty"`
}

func (p *faultProxy) putRecords(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	p.mu.Lock()
	p.calls++
	refuse := p.calls%3 == 0
	if refuse {
		p.refused++
	}
	p.mu.Unlock()
	if refuse {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"__type":"ProvisionedThroughputExceededException","message":"Rate exceeded for shard shardId-000000000000 (fault proxy)"}`)
		return
	}
	var req putRecordsReq
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	// Hold back every second record (only when there is more than one, so
	// every record gets through eventually).
	forward := req
	forward.Records = nil
	var keep []int
	for i := range req.Records {
		if len(req.Records) > 1 && i%2 == 1 {
			continue
		}
		keep = append(keep, i)
		forward.Records = append(forward.Records, req.Records[i])
	}
	fbody, _ := json.Marshal(forward)
	up, err := http.NewRequestWithContext(r.Context(), http.MethodPost, p.upstream.String()+"/", bytes.NewReader(fbody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	up.Header = r.Header.Clone()
	up.Header.Set("Content-Length", strconv.Itoa(len(fbody)))
	up.ContentLength = int64(len(fbody))
	resp, err := http.DefaultClient.Do(up)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	rbody, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(rbody)
		return
	}
	var ur putRecordsResp
	if err := json.Unmarshal(rbody, &ur); err != nil || len(ur.Records) != len(keep) {
		http.Error(w, fmt.Sprintf("upstream answered %d results for %d records: %v", len(ur.Records), len(keep), err), http.StatusBadGateway)
		return
	}
	out := putRecordsResp{EncryptionType: ur.EncryptionType, Records: make([]json.RawMessage, len(req.Records))}
	throttled := json.RawMessage(`{"ErrorCode":"ProvisionedThroughputExceededException","ErrorMessage":"Rate exceeded (fault proxy)"}`)
	for i := range out.Records {
		out.Records[i] = throttled
	}
	p.mu.Lock()
	for j, i := range keep {
		out.Records[i] = ur.Records[j]
		var res struct{ ErrorCode string }
		_ = json.Unmarshal(ur.Records[j], &res)
		if res.ErrorCode != "" {
			continue
		}
		var kr kinesisRecord
		if json.Unmarshal(req.Records[i].Data, &kr) == nil {
			if p.accepted[kr.Thing] == nil {
				p.accepted[kr.Thing] = map[uint64]bool{}
			}
			for s := kr.Seq; s <= kr.LastSeq; s++ {
				p.accepted[kr.Thing][s] = true
			}
		}
	}
	for _, raw := range out.Records {
		var res struct{ ErrorCode string }
		_ = json.Unmarshal(raw, &res)
		if res.ErrorCode != "" {
			out.FailedRecordCount++
		}
	}
	p.heldBack += len(req.Records) - len(keep)
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(out)
}

// checkAck records a violation when a telemetry message is acknowledged
// before kinesis-local accepted every one of its samples.
func (p *faultProxy) checkAck(a ack) {
	if a.kind != ingest.KindTelemetry {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for s := a.seq; s <= a.last; s++ {
		if !p.accepted[a.thing][s] {
			p.violation = append(p.violation, fmt.Sprintf("%s seq %d acked before Kinesis accepted it", a.thing, s))
			return
		}
	}
}

// Kinesis throttling (whole calls and single records) loses no sample, and
// no MQTT message is acknowledged before its data is in Kinesis.
func TestKinesisThrottlingLosesNothing(t *testing.T) {
	e := newEnv(t)
	proxy := newFaultProxy(t, e.stack.KinesisEndpoint)
	kin := kinesis.NewFromConfig(e.cfg, func(o *kinesis.Options) {
		o.BaseEndpoint = aws.String(proxy.srv.URL)
		o.RetryMaxAttempts = 1 // let ingest's own backoff handle refused calls
	})
	tenant, thing := uniq("t"), uniq("bowl")
	e.register(t, thing, tenant)
	rec := newRecorder()
	rec.check = proxy.checkAck
	e.startIngest(t, rec, func(c *ingest.Config) {
		c.Kinesis = kin
		c.Producer.BackoffBase = 5 * time.Millisecond
		c.Producer.BackoffMax = 50 * time.Millisecond
	})
	pub := e.publisher(t)
	const msgs, per = 150, 4
	at := time.Now().Add(-time.Hour)
	for i := range msgs {
		publish(t, pub, topic(tenant, thing, "telemetry"), telemetry(thing, uint64(1+i*per), per, at))
	}
	waitFor(t, rec, "every telemetry message acked", func() bool { return rec.ackCount() == msgs })
	proxy.mu.Lock()
	violations, refused, held := proxy.violation, proxy.refused, proxy.heldBack
	proxy.mu.Unlock()
	for _, v := range violations {
		t.Error(v)
	}
	if refused == 0 || held == 0 {
		t.Errorf("fault proxy refused %d calls and held back %d records; want both > 0 (no fault was injected)", refused, held)
	}
	seen, _ := e.streamSamples(t, lstest.Names(t).TelemetryStream(), thing)
	for s := uint64(1); s <= msgs*per; s++ {
		if seen[s] == 0 {
			t.Errorf("sample seq %d not in Kinesis", s)
		}
	}
	t.Logf("fault proxy: %d calls refused, %d records held back; %d samples in Kinesis", refused, held, len(seen))
}
