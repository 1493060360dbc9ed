package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/bowline-iot/bowline/cloud/rules"
)

// report is a run's result, printed as text and as JSON.
type report struct {
	Config    config
	FileLimit uint64
	// Fleet is what the gateways counted.
	Fleet fleetResult
	// Check is the stream read back against the acks.
	Check streamCheck
	// Consumer and Rules are what the cloud parts counted.
	Consumer consumerReport
	Rules    rules.Counts
	// RulesPeakInFlight is the most messages the rules stand-in held at
	// once (at most Config.RulesInFlight).
	RulesPeakInFlight int
	// RuleErrors and ConsumerDLQ are the depths of the two failure queues
	// at the end.
	RuleErrors, ConsumerDLQ int
	// Processes are each part's memory, descriptors and CPU: "cloud" is
	// this process (rules stand-in, event source, consumer, IoT data
	// endpoint), "gateways" the fleet's process.
	Processes map[string]procSample
	// Seconds of the run: setup (emulators, broker, registry), connecting
	// the fleet, publishing, and the drain.
	SetupSeconds, PublishSeconds float64
	Baseline                     string
}

type consumerReport struct {
	Records, RecordsHandled, Samples, Duplicates, Rejected, AcksPublished, AckFailures, Gaps int64
	StateWrites, RollupWrites                                                                int64
	// Lag is arrival in the stream to the end of the handler call, per
	// record.
	LagP50, LagP99, LagMax time.Duration
	// IteratorAgeAtEnd is the largest age of a batch handled in the last
	// 30 s of publishing (Lambda's IteratorAge); BehindAtEnd and
	// BehindMax the reads' MillisBehindLatest then and at worst.
	IteratorAgeAtEnd, BehindAtEnd, BehindMax time.Duration
}

// baselineNote says why there is no v1 baseline in the same run.
const baselineNote = "not run: v1 JSON at one message per bowl per second is 15,000 messages/s at 10,000 gateways, " +
	"each through the single rules stand-in subscriber and one Kinesis record each; on this 2-core machine that measures " +
	"the machine, not the design. The v1-vs-batch bytes and messages are in ./scripts/bench cost and " +
	"go run ./edge/bench/wirebytes (63.5 vs 0.45 bytes per sample)"

// measure runs the cloud side here, the gateways in a child process, and
// reads the stream back at the end.
func measure(ctx context.Context, cfg config, log *slog.Logger) (report, error) {
	r := report{Config: cfg, Processes: map[string]procSample{}, Baseline: baselineNote}
	t0 := time.Now()
	c, err := startCloud(ctx, cfg, log)
	if err != nil {
		return r, err
	}
	defer c.close()
	r.SetupSeconds = time.Since(t0).Seconds()
	log.Info("cloud side ready", "stack", c.names.Stack, "broker", c.broker.URL(), "seconds", r.SetupSeconds)

	var self, broker procSampler
	self.start(ctx, os.Getpid(), true)
	broker.start(ctx, c.broker.Pid(), false)

	fc := fleetConfig{Broker: c.broker.URL(), Stack: c.names.Stack, Gateways: cfg.Gateways, BowlsPerGateway: cfg.BowlsPerGateway,
		Duration: cfg.Duration, Interval: cfg.Interval, AckTimeout: cfg.AckTimeout, Drain: cfg.Drain, SampleHz: cfg.SampleHz, ConnectWorkers: 32}
	fr, publishStart, err := runFleetProcess(ctx, fc, log)
	if err != nil {
		return r, err
	}
	r.Fleet = fr
	r.PublishSeconds = cfg.Duration.Seconds()
	end := publishStart.Add(cfg.Duration)

	// The cloud's figures before the read-back, which is not part of the
	// run.
	r.Processes["cloud"] = self.stop()
	r.Processes["mosquitto"] = broker.stop()
	r.Processes["gateways"] = fr.Process
	for name, pid := range c.emulatorPids() {
		r.Processes[name] = readProc(pid)
	}
	k := c.obs
	r.Consumer = consumerReport{Records: k.records.Load(), Samples: k.samples.Load(), Duplicates: k.duplicates.Load(), Rejected: k.rejected.Load(),
		AcksPublished: k.acksOK.Load(), AckFailures: k.acksFailed.Load(), Gaps: k.gaps.Load(), StateWrites: k.stateWrites.Load(), RollupWrites: k.rollupWrites.Load()}
	var handled int
	since := end.Add(-30 * time.Second)
	r.Consumer.LagP50, r.Consumer.LagP99, r.Consumer.LagMax, handled, r.Consumer.IteratorAgeAtEnd = c.lag.summary(since)
	r.Consumer.RecordsHandled = int64(handled)
	r.Consumer.BehindAtEnd, r.Consumer.BehindMax = c.kin.behind(since)
	r.RulesPeakInFlight = c.flight.get()
	for _, n := range c.rules.Counts() {
		r.Rules.Evaluations += n.Evaluations
		r.Rules.EvaluationUnits += n.EvaluationUnits
		r.Rules.Actions += n.Actions
		r.Rules.ActionUnits += n.ActionUnits
		r.Rules.Errors += n.Errors
		r.Rules.EvaluationErrors += n.EvaluationErrors
		r.Rules.ErrorActionFailures += n.ErrorActionFailures
	}
	if r.RuleErrors, err = c.queueDepth(ctx, c.names.RuleErrorsQueue()); err != nil {
		return r, err
	}
	if r.ConsumerDLQ, err = c.queueDepth(ctx, c.names.TelemetryConsumerDLQ()); err != nil {
		return r, err
	}
	if r.Check, err = checkStream(ctx, kinesis.NewFromConfig(c.aws), c.names.TelemetryStream(), fr); err != nil {
		return r, err
	}
	return r, nil
}

// runFleetProcess starts this program again as the gateways' process,
// waits until every gateway has connected and subscribed ("ready"), and
// returns its result and when publishing began.
func runFleetProcess(ctx context.Context, fc fleetConfig, log *slog.Logger) (fleetResult, time.Time, error) {
	var fr fleetResult
	self, err := os.Executable()
	if err != nil {
		return fr, time.Time{}, err
	}
	js, _ := json.Marshal(fc)
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(os.Environ(), fleetEnv+"="+string(js))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fr, time.Time{}, err
	}
	if err := cmd.Start(); err != nil {
		return fr, time.Time{}, fmt.Errorf("start the gateways' process: %w", err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	var start time.Time
	var result []byte
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "ready":
			start = time.Now()
			log.Info("fleet connected; publishing", "gateways", fc.Gateways, "for", fc.Duration)
		case strings.HasPrefix(line, "{"):
			result = []byte(line)
		}
	}
	if err := cmd.Wait(); err != nil {
		return fr, start, fmt.Errorf("gateways' process: %w", err)
	}
	if result == nil {
		return fr, start, fmt.Errorf("gateways' process printed no result")
	}
	if err := json.Unmarshal(result, &fr); err != nil {
		return fr, start, fmt.Errorf("gateways' result: %w", err)
	}
	return fr, start, nil
}
