package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/internal/testkit"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/bowline-iot/bowline/cloud/telemetry"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
)

func TestMain(m *testing.M) { lstest.Main(m, localstack.Kinesis) }

func testLogger(t testing.TB) *slog.Logger { return testkit.Logger(t, slog.LevelWarn) }

// testRecord is the data of the test's records: which one it is.
type testRecord struct {
	N int `json:"n"`
}

// faultProxy sits between the producer and kinesis-local. Every third
// PutRecords call is refused whole with ProvisionedThroughputExceededException;
// in the others every second record is held back and reported as throttled
// in the response (the rest are forwarded). It remembers which records
// kinesis-local accepted, so a done callback can be checked against it.
type faultProxy struct {
	srv      *httptest.Server
	upstream *url.URL

	mu       sync.Mutex
	calls    int
	refused  int
	heldBack int
	accepted map[int]bool
}

func newFaultProxy(t *testing.T, upstream string) *faultProxy {
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{upstream: u, accepted: map[int]bool{}}
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
		var tr testRecord
		if json.Unmarshal(req.Records[i].Data, &tr) == nil {
			p.accepted[tr.N] = true
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

// Kinesis throttling (whole calls and single records) loses no record, and
// no record is reported accepted before kinesis-local has it.
func TestKinesisThrottlingLosesNothing(t *testing.T) {
	stack := lstest.Stack(t)
	proxy := newFaultProxy(t, stack.KinesisEndpoint)
	kin := kinesis.NewFromConfig(lstest.AWSConfig(t), func(o *kinesis.Options) {
		o.BaseEndpoint = aws.String(proxy.srv.URL)
		o.RetryMaxAttempts = 1 // let the producer's own backoff handle refused calls
	})
	stream := lstest.Names(t).TelemetryStream()
	p, err := telemetry.NewProducer(kin, telemetry.ProducerConfig{Stream: stream, BackoffBase: 5 * time.Millisecond, BackoffMax: 50 * time.Millisecond, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	key := fmt.Sprintf("throttle-%d", time.Now().UnixNano())
	const records = 600
	var (
		mu        sync.Mutex
		done      = map[int]int{}
		violation []string
		all       sync.WaitGroup
	)
	all.Add(records)
	for n := range records {
		data, _ := json.Marshal(testRecord{N: n})
		err := p.Put(context.Background(), key, data, func(err error) {
			defer all.Done()
			proxy.mu.Lock()
			accepted := proxy.accepted[n]
			proxy.mu.Unlock()
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				violation = append(violation, fmt.Sprintf("record %d: %v", n, err))
			case !accepted:
				violation = append(violation, fmt.Sprintf("record %d reported accepted before Kinesis had it", n))
			}
			done[n]++
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	all.Wait()
	if err := p.Close(context.Background()); err != nil {
		t.Fatalf("Close() = %v; want nil", err)
	}
	for _, v := range violation {
		t.Error(v)
	}
	for n := range records {
		if done[n] != 1 {
			t.Errorf("record %d: done called %d times; want once", n, done[n])
		}
	}
	proxy.mu.Lock()
	refused, held := proxy.refused, proxy.heldBack
	proxy.mu.Unlock()
	if refused == 0 || held == 0 {
		t.Errorf("fault proxy refused %d calls and held back %d records; want both > 0 (no fault was injected)", refused, held)
	}
	seen := streamRecords(t, kinesis.NewFromConfig(lstest.AWSConfig(t)), stream, key)
	for n := range records {
		if seen[n] == 0 {
			t.Errorf("record %d not in Kinesis", n)
		}
	}
	t.Logf("fault proxy: %d calls refused, %d records held back; %d records in Kinesis", refused, held, len(seen))
}

// streamRecords reads the whole stream and counts the test records of
// partition key key.
func streamRecords(t *testing.T, kin *kinesis.Client, stream, key string) map[int]int {
	t.Helper()
	ctx := context.Background()
	shards, err := kin.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(stream)})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	for _, sh := range shards.Shards {
		it, err := kin.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(stream), ShardId: sh.ShardId, ShardIteratorType: ktypes.ShardIteratorTypeTrimHorizon})
		if err != nil {
			t.Fatal(err)
		}
		iter := it.ShardIterator
		for iter != nil {
			out, err := kin.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(10000)})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range out.Records {
				var tr testRecord
				if aws.ToString(r.PartitionKey) == key && json.Unmarshal(r.Data, &tr) == nil {
					seen[tr.N]++
				}
			}
			if len(out.Records) == 0 || aws.ToInt64(out.MillisBehindLatest) == 0 {
				break
			}
			iter = out.NextShardIterator
		}
	}
	return seen
}
