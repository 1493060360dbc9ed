package chaos

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/bowline-iot/bowline/cloud/adapters"
	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/cloud/fakes"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/mosquitto"
	"github.com/bowline-iot/bowline/internal/powercut"
	"github.com/bowline-iot/bowline/internal/resources"
)

// Processes of one run.
const (
	ingests = 2
	workers = 2
	// The telemetry path's parts (docs/telemetry-path.md), one process
	// each: the topic rules' stand-in, the consumer behind the event
	// source stand-in, and the IoT data plane endpoint its acks go through.
	procRules    = "rules"
	procConsume  = "consume"
	procEndpoint = "iot-endpoint"
	// batchInterval and ackTimeout are the gateways' telemetry settings:
	// short, so that a quick run sees batches lost and sent again.
	batchInterval = time.Second
	ackTimeout    = 20 * time.Second
	// ackEvery is the consumer's ack cadence, well inside ackTimeout.
	ackEvery = 3 * time.Second
	// gapGrace is the consumer's grace for a hole, in the gateway's
	// sending time: longer than two ack timeouts and one outage, so a
	// batch lost and resent twice is a hole that closes, not a
	// bowl.data_gap. An outage counts as at most the consumer's GapStep,
	// a twenty-fourth of the grace (2.1 s), however long it lasts
	// (cloud/durable Config.GapStep); the margin also covers a resend
	// that waits for the next batch round. The rule is the one behind
	// durable.DefaultGapGrace (two ack timeouts and a few batch
	// intervals), with a wider margin for batch rounds that run late on a
	// loaded machine.
	gapGrace = 2*ackTimeout + 10*time.Second
	// eventsVisibility is the events queue's visibility timeout in a run
	// (provisioning's 60s would make every crash cost a minute); the
	// workers' lease is shorter, as engine/worker requires.
	eventsVisibility = 12 * time.Second
	workerLease      = 8 * time.Second
	webhookSecret    = "chaos-webhook-secret"
)

// Binaries are the built commands.
type Binaries struct {
	Bowline, Edge string
	// SeedWorker runs the seed article's inbox in place of `bowline
	// worker` in the seed mode: the harness's own program, so the product
	// binary does not link the baseline (docs/README.md, "The proving
	// ground").
	SeedWorker string
}

// Build builds bowline, bowline-edge and the seed worker into dir.
func Build(ctx context.Context, root, dir string) (Binaries, error) {
	b := Binaries{Bowline: filepath.Join(dir, "bowline"), Edge: filepath.Join(dir, "bowline-edge"), SeedWorker: filepath.Join(dir, "seedworker")}
	for out, pkg := range map[string]string{b.Bowline: "./cloud/cmd/bowline", b.Edge: "./edge/cmd/bowline-edge", b.SeedWorker: "./cloud/bench/chaos/seedworker"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
		cmd.Dir = root
		if msg, err := cmd.CombinedOutput(); err != nil {
			return b, fmt.Errorf("go build %s: %w\n%s", pkg, err, msg)
		}
	}
	return b, nil
}

// run is one inbox mode's run.
type run struct {
	cfg   Config
	mode  string
	bins  Binaries
	dir   string
	log   *slog.Logger
	sched []Fault

	sc     *localstack.Scratch
	app    *app.App
	net    *network
	broker *mosquitto.Broker
	fakes  *fakes.Set
	gates  map[string]*providerGate
	procs  map[string]*proc
	sims   []*proc
	links  [][]simLink
	apiURL string
	tokens map[string]string // tenant -> API token

	mu        sync.Mutex
	paid      []paidOrder
	applied   map[string]int
	refused   int // bad webhooks refused
	summary   map[string]simSummary
	disks     map[int]*powercut.Disk // gateway -> its outbox's power-cut disk
	unpowered map[int]bool           // gateways whose disk is cut and not booted yet
	cuts      int                    // real power cuts (on a power-cut disk)
	brokerGen int                    // broker outages so far (broker.go)
	gwMQTT    string                 // the gateways' link to the broker (host:port)
	status    map[int]string         // gateway -> its agent's status endpoint (base URL)
	// Per gateway, over restarts (pollGateways): samples published in
	// batches and cloud acks applied.
	batchSamples, acksApplied map[int]*counter
}

// paidOrder is an order whose payment webhook was processed.
type paidOrder struct {
	Tenant, OrderID, EventID string
	PaidAt                   time.Time
}

type simLink struct {
	Device    string `json:"device"`
	Transport string `json:"transport"`
	Path      string `json:"path"`
}

type simSummary struct {
	Device string `json:"device"`
	MCU    struct {
		Accepted     uint64 `json:"accepted"`
		Refused      uint64 `json:"refused"`
		RingLen      int    `json:"ring_len"`
		Freed        uint64 `json:"freed"`
		AckedThrough uint32 `json:"acked_through"`
	} `json:"mcu"`
}

func tenantOf(g int) string  { return fmt.Sprintf("chaos-t%d", g) }
func gatewayOf(g int) string { return fmt.Sprintf("chaos-gw-%d", g) }

// thingOf is a bowl's thing: "<gateway>:<bowl>", the only names a wire v2
// agent maps (edge/agent).
func thingOf(g, b int) string  { return thingOfDevice(g, deviceOf(b)) }
func deviceOf(b int) string    { return fmt.Sprintf("bowl-%03d", b) }
func hostPort(u string) string { p, _ := url.Parse(u); return p.Host }

// start brings up the stack, the network, the broker, the fakes and every
// process but the bowls, in the order they need each other: the local
// stack and the app, the fault network in front of it and the broker, the
// provider fakes behind their gates, the bowls' registrations, the cloud
// processes, and, once the rule stand-in has subscribed, the gateways.
func (r *run) start(ctx context.Context) error {
	if err := r.startStack(ctx); err != nil {
		return err
	}
	eps, err := r.startNetwork(ctx)
	if err != nil {
		return err
	}
	providers, err := r.startProviders()
	if err != nil {
		return err
	}
	toks, err := r.registerBowls(ctx)
	if err != nil {
		return err
	}
	env := childEnv(r.sc.Names, map[string]string{
		"AWS_ENDPOINT_URL_DYNAMODB":         eps.dynamoDB,
		"AWS_ENDPOINT_URL_DYNAMODB_STREAMS": eps.dynamoDB,
		"AWS_ENDPOINT_URL_SQS":              eps.sqs,
		"AWS_ENDPOINT_URL_KINESIS":          eps.kinesis,
		"BOWLINE_MQTT_URL":                  "tcp://" + eps.mqtt,
		adapters.ShopifyURLEnv:              providers[fakes.Shopify],
		adapters.ShippingURLEnv:             providers[fakes.Shipping],
		adapters.NotifyURLEnv:               providers[fakes.Notify],
		api.TokensEnv:                       strings.Join(toks, ","),
		api.WebhookSecretEnv:                webhookSecret,
		api.OpsTokenEnv:                     "chaos-ops-token-0001",
	})
	if env, err = r.startCloud(env, eps.mqtt); err != nil {
		return err
	}
	if err := r.waitRulesSubscribed(ctx); err != nil {
		return err
	}
	return r.startEdges(ctx, env)
}

// startStack starts the local stack (DynamoDB, SQS, Kinesis) and opens
// the harness's own app on it, with the events queue's visibility timeout
// shortened to eventsVisibility.
func (r *run) startStack(ctx context.Context) error {
	sc, err := localstack.StartScratch(ctx, localstack.Config{
		Services: []localstack.Service{localstack.DynamoDB, localstack.SQS, localstack.Kinesis},
		Root:     cmp.Or(r.cfg.StackRoot, r.cfg.Root), Logger: r.log.With("part", "localstack"),
	}, "c")
	if err != nil {
		return fmt.Errorf("local stack: %w", err)
	}
	r.sc = sc
	a, err := app.Open(app.Config{AWS: sc.AWS, Names: sc.Names, Logger: r.log.With("part", "app")})
	if err != nil {
		return err
	}
	r.app = a
	queue, err := a.QueueURL(ctx, sc.Names.EventsQueue())
	if err != nil {
		return err
	}
	if _, err := a.SQS.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(queue),
		Attributes: map[string]string{"VisibilityTimeout": fmt.Sprint(int(eventsVisibility.Seconds()))}}); err != nil {
		return fmt.Errorf("events queue visibility: %w", err)
	}
	return nil
}

// endpoints are where the cloud processes reach AWS and the broker:
// through the fault network's links, DynamoDB and Kinesis also through
// its throttle proxies.
type endpoints struct {
	dynamoDB, sqs, kinesis string // URLs
	mqtt                   string // host:port
}

// startNetwork puts the fault network in front of the stack, starts the
// broker behind two links of its own (the cloud's, and r.gwMQTT, the
// gateways'), and returns the cloud's endpoints.
func (r *run) startNetwork(ctx context.Context) (endpoints, error) {
	var eps endpoints
	r.net = newNetwork()
	ddb, err := r.net.link("dynamodb", hostPort(r.sc.DynamoDBEndpoint))
	if err != nil {
		return eps, err
	}
	sqsAddr, err := r.net.link("sqs", hostPort(r.sc.SQSEndpoint))
	if err != nil {
		return eps, err
	}
	eps.sqs = "http://" + sqsAddr
	kin, err := r.net.link("kinesis", hostPort(r.sc.KinesisEndpoint))
	if err != nil {
		return eps, err
	}
	if eps.dynamoDB, err = r.net.throttleProxy("dynamodb", "http://"+ddb, "ProvisionedThroughputExceededException",
		"The level of configured provisioned throughput for the table was exceeded (chaos)"); err != nil {
		return eps, err
	}
	if eps.kinesis, err = r.net.throttleProxy("kinesis", "http://"+kin, "ProvisionedThroughputExceededException",
		"Rate exceeded for shard (chaos)"); err != nil {
		return eps, err
	}
	r.broker, err = mosquitto.Start(ctx, mosquitto.Config{Dir: filepath.Join(r.dir, "mosquitto"), Logger: r.log.With("part", "mosquitto")})
	if err != nil {
		return eps, fmt.Errorf("mosquitto: %w", err)
	}
	if eps.mqtt, err = r.net.link("mqtt", r.broker.Addr()); err != nil {
		return eps, err
	}
	if r.gwMQTT, err = r.net.link(gatewayLink, r.broker.Addr()); err != nil {
		return eps, err
	}
	return eps, nil
}

// startProviders serves each provider fake behind a gate the schedule
// can close (r.gates) and returns their URLs by kind.
func (r *run) startProviders() (map[string]string, error) {
	r.fakes = fakes.NewSet()
	r.gates = map[string]*providerGate{}
	urls := map[string]string{}
	for _, f := range r.fakes.All() {
		g := &providerGate{next: f}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		srv := &http.Server{Handler: g, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		r.net.srvs = append(r.net.srvs, srv)
		r.gates[f.Kind()] = g
		urls[f.Kind()] = "http://" + ln.Addr().String()
	}
	return urls, nil
}

// registerBowls registers every gateway's bowls with its tenant, gives
// each tenant an API token (r.tokens) and returns them as the API's
// "token=tenant" list.
func (r *run) registerBowls(ctx context.Context) ([]string, error) {
	reg, err := r.app.Devices()
	if err != nil {
		return nil, err
	}
	r.tokens = map[string]string{}
	var toks []string
	for g := range r.cfg.Gateways {
		for b := range r.cfg.BowlsPerGateway {
			if _, err := reg.Register(ctx, thingOf(g, b), tenantOf(g)); err != nil {
				return nil, fmt.Errorf("register %s: %w", thingOf(g, b), err)
			}
		}
		r.tokens[tenantOf(g)] = fmt.Sprintf("chaos-api-token-%04d", g)
		toks = append(toks, r.tokens[tenantOf(g)]+"="+tenantOf(g))
	}
	return toks, nil
}

// startCloud starts the cloud processes (ingests, relay, rule stand-in,
// IoT data endpoint, consumer, workers, API) with env, reaching the
// broker at mqttAddr. It returns env with the IoT data endpoint added,
// which the gateways' processes get too.
func (r *run) startCloud(env []string, mqttAddr string) ([]string, error) {
	apiAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	iotAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	env = append(env, "AWS_ENDPOINT_URL_IOT_DATA_PLANE=http://"+iotAddr)
	r.apiURL = "http://" + apiAddr
	r.procs = map[string]*proc{}
	add := func(name string, args ...string) { r.procs[name] = newProc(r.dir, name, r.bins.Bowline, env, args...) }
	for i := range ingests {
		add(fmt.Sprintf("ingest-%d", i), "ingest", "--gap-grace", "10m", "--poll", "250ms", "--shard-refresh", "2s", "--invoke-timeout", "20s")
	}
	add("relay", "relay", "--poll", "100ms")
	// The rule stand-in keeps a persistent session under a fixed client
	// id, so while it is down Mosquitto queues the batches and events for
	// it. The ingests are two events consumers on the one mapping of the
	// events stream (each reads every shard: what one hands over twice
	// the other finds emitted), killed and restarted on the schedule.
	add(procRules, "rules", "--client-id", "chaos-rules", "--legacy-telemetry-v1=false", "--legacy-events-v1=false")
	add(procEndpoint, "iot-endpoint", "--broker", "tcp://"+mqttAddr, "--addr", iotAddr, "--client-id", "chaos-iot-endpoint")
	add(procConsume, "consume", "--ack-every", ackEvery.String(), "--gap-grace", gapGrace.String(),
		"--poll", "250ms", "--shard-refresh", "2s", "--invoke-timeout", "20s", "--iot-endpoint", "http://"+iotAddr)
	for i := range workers {
		name := fmt.Sprintf("worker-%d", i)
		if r.mode == InboxSeed {
			r.procs[name] = newProc(r.dir, name, r.bins.SeedWorker, env, "--wait", "2s")
			continue
		}
		add(name, "worker", "--wait", "2s", "--lease", workerLease.String(), "--pollers", "2")
	}
	add("api", "api", "--addr", apiAddr, "--metrics-addr", "127.0.0.1:0")
	for _, p := range r.procs {
		if err := p.start(nil); err != nil {
			return nil, err
		}
	}
	return env, nil
}

// waitRulesSubscribed waits up to a minute for the rule stand-in's
// subscription. The gateways start only then: until a subscription exists
// the broker acknowledges and drops what they publish (in AWS the rules
// run long before any gateway). The ingests need no wait: the events
// stream keeps what they have not read.
func (r *run) waitRulesSubscribed(ctx context.Context) error {
	deadline := time.Now().Add(time.Minute)
	for r.subscriptions(procRules) < 1 {
		if time.Now().After(deadline) {
			return fmt.Errorf("the rule stand-in not subscribed after a minute (see %s)", r.procs[procRules].log)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// startEdges starts one bowl simulator and one gateway agent per gateway.
func (r *run) startEdges(ctx context.Context, env []string) error {
	r.summary = map[string]simSummary{}
	r.links = make([][]simLink, r.cfg.Gateways)
	disks, err := r.edgeDisks()
	if err != nil {
		return err
	}
	r.disks, r.unpowered = disks, map[int]bool{}
	r.status = map[int]string{}
	r.batchSamples, r.acksApplied = map[int]*counter{}, map[int]*counter{}
	for g := range r.cfg.Gateways {
		r.batchSamples[g], r.acksApplied[g] = &counter{}, &counter{}
	}
	for g := range r.cfg.Gateways {
		simDir := filepath.Join(r.dir, fmt.Sprintf("sim-%d", g))
		if err := os.MkdirAll(simDir, 0o755); err != nil {
			return err
		}
		pr, pw := io.Pipe()
		args := []string{"simulate",
			"--bowls", fmt.Sprint(r.cfg.BowlsPerGateway), "--seed", fmt.Sprint(r.cfg.Seed + uint64(g)),
			"--speed", "1", "--ring", "1024", "--duration", r.cfg.SimDuration.String(), "--rate", fmt.Sprint(r.cfg.Rate),
			"--transport", "unix", "--dir", simDir, "--json", "--linger", "20m", "--pets", "4",
			"--truth", r.truthPath(g)}
		codes := []string{"load_cell", "tag_reader", "sensor_drift"}
		for i := range r.cfg.DeviceFaults {
			after := r.cfg.SimDuration * time.Duration(i+1) / time.Duration(r.cfg.DeviceFaults+1)
			args = append(args, "--fault", fmt.Sprintf("%s:%s:chaos-%d", after, codes[i%len(codes)], i))
		}
		p := newProc(r.dir, fmt.Sprintf("sim-%d", g), r.bins.Edge, env, args...)
		if err := p.start(pw); err != nil {
			return err
		}
		r.sims = append(r.sims, p)
		linksReady := make(chan struct{})
		go r.readSim(g, pr, linksReady)
		go func() { <-p.exited(); pw.Close() }()
		select {
		case <-linksReady:
		case <-time.After(30 * time.Second):
			return fmt.Errorf("simulator %d printed no links in 30s (see %s)", g, p.log)
		case <-ctx.Done():
			return ctx.Err()
		}
		statusAddr, err := freeAddr()
		if err != nil {
			return err
		}
		r.status[g] = "http://" + statusAddr
		conf := map[string]any{
			"tenant": tenantOf(g), "gateway": gatewayOf(g), "broker": "tcp://" + r.gwMQTT,
			"outbox":      map[string]any{"path": filepath.Join(r.dir, fmt.Sprintf("edge-%d.db", g))},
			"status_addr": statusAddr, "things": map[string]string{},
			// Wire v2: batches through the rule stand-in, deleted only on
			// the consumer's ack, sent again after ackTimeout.
			"telemetry": map[string]any{"wire": "v2", "rule": wire.RuleName(r.sc.Names.Stack, wire.TelemetryRule),
				"batch_interval": batchInterval.String(), "ack_timeout": ackTimeout.String()},
			// Events by Basic Ingest through the rule stand-in into the
			// events stream, forgotten at the PUBACK.
			"events": map[string]any{"rule": wire.RuleName(r.sc.Names.Stack, wire.EventsRule)},
		}
		var inputs []string
		for _, l := range r.links[g] {
			inputs = append(inputs, "unix:"+l.Path)
		}
		things := map[string]string{}
		for b := range r.cfg.BowlsPerGateway {
			things[deviceOf(b)] = thingOf(g, b)
		}
		conf["inputs"], conf["things"] = inputs, things
		path := filepath.Join(r.dir, fmt.Sprintf("edge-%d.json", g))
		b, _ := json.Marshal(conf)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
		name := fmt.Sprintf("edge-%d", g)
		r.procs[name] = newProc(r.dir, name, r.bins.Edge, env, "run", "--config", path, "--recover", "--log-level", "warn")
		if err := r.procs[name].start(nil); err != nil {
			return err
		}
	}
	return nil
}

// readSim reads a simulator's JSON lines: its links first, then its final
// report per device.
func (r *run) readSim(g int, rd io.Reader, linksReady chan struct{}) {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		line := sc.Bytes()
		var probe map[string]json.RawMessage
		if json.Unmarshal(line, &probe) != nil {
			continue
		}
		if _, ok := probe["mcu"]; ok {
			var s simSummary
			if json.Unmarshal(line, &s) == nil {
				r.mu.Lock()
				r.summary[thingOfDevice(g, s.Device)] = s
				r.mu.Unlock()
			}
			continue
		}
		var l simLink
		if json.Unmarshal(line, &l) == nil && l.Path != "" {
			r.links[g] = append(r.links[g], l)
			if n++; n == r.cfg.BowlsPerGateway {
				close(linksReady)
			}
		}
	}
}

func (r *run) truthPath(g int) string { return filepath.Join(r.dir, fmt.Sprintf("truth-%d.jsonl", g)) }

func thingOfDevice(g int, device string) string { return gatewayOf(g) + ":" + device }

// childEnv is this process's environment for a child, with the stack's
// AWS settings and the given overrides.
func childEnv(names resources.Names, set map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; ok || strings.HasPrefix(k, "AWS_ENDPOINT_URL") || k == resources.StackEnv {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, resources.StackEnv+"="+names.Stack)
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// close stops everything the run started.
func (r *run) close() {
	for _, p := range r.sims {
		p.stop(2 * time.Second)
	}
	for _, p := range r.procs {
		p.stop(5 * time.Second)
	}
	for _, d := range r.disks {
		_ = d.Close()
	}
	if r.net != nil {
		r.net.close()
	}
	if r.broker != nil {
		_ = r.broker.Close()
	}
	if r.app != nil {
		r.app.Close()
	}
	if r.sc != nil {
		_ = r.sc.Close()
	}
}
