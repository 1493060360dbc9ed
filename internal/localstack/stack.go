package localstack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bowline-iot/bowline/internal/mqttbroker"
)

// Service names one part of the local stack.
type Service string

// The services Start can run.
const (
	DynamoDB Service = "dynamodb" // DynamoDB and DynamoDB Streams
	SQS      Service = "sqs"
	Kinesis  Service = "kinesis"
	MQTT     Service = "mqtt"
)

// AllServices is every service, the default for Config.Services.
var AllServices = []Service{DynamoDB, SQS, Kinesis, MQTT}

// ErrNotInstalled reports an emulator or runtime that is missing; the
// message says how to install it.
var ErrNotInstalled = errors.New("not installed")

// Config says what to start.
type Config struct {
	// Services to start; nil means AllServices.
	Services []Service
	// Root is the repository root (the folder holding deploy/local).
	// Empty means: $BOWLINE_ROOT, else the nearest parent of the working
	// directory that has deploy/local/package.json.
	Root string
	// Logger receives lifecycle messages; nil discards them.
	Logger *slog.Logger
	// StartTimeout bounds how long one emulator may take to answer.
	// Zero means 90 seconds (DynamoDB Local's JVM is slow on a busy machine).
	StartTimeout time.Duration
}

// setDefaults fills the zero fields with their defaults; Root's is found
// on disk, so it may fail.
func (c *Config) setDefaults() error {
	if c.Services == nil {
		c.Services = AllServices
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 90 * time.Second
	}
	if c.Root == "" {
		root, err := FindRoot()
		if err != nil {
			return err
		}
		c.Root = root
	}
	return nil
}

// Validate checks the configuration; it does not change it.
func (c Config) Validate() error {
	for _, s := range c.Services {
		if !slices.Contains(AllServices, s) {
			return fmt.Errorf("localstack: unknown service %q (want one of %v)", s, AllServices)
		}
	}
	if c.StartTimeout < 0 {
		return fmt.Errorf("localstack: StartTimeout %v: want 0 (default) or more", c.StartTimeout)
	}
	return nil
}

// FindRoot returns $BOWLINE_ROOT or the nearest parent of the working
// directory that contains deploy/local/package.json.
func FindRoot() (string, error) {
	if r := os.Getenv("BOWLINE_ROOT"); r != "" {
		return r, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("localstack: find repository root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "deploy", "local", "package.json")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("localstack: no deploy/local/package.json above the working directory: set BOWLINE_ROOT to the repository root")
		}
		dir = parent
	}
}

// Stack is a running local stack. Endpoints are empty for services that
// were not started.
type Stack struct {
	DynamoDBEndpoint string // http://127.0.0.1:port, also serves DynamoDB Streams
	SQSEndpoint      string // http://127.0.0.1:port
	KinesisEndpoint  string // http://127.0.0.1:port
	MQTTAddr         string // tcp://127.0.0.1:port

	log   *slog.Logger
	mu    sync.Mutex
	procs []*process
	mqtt  *mqttbroker.Broker
	died  chan error
}

// Start launches the configured services concurrently and returns once each
// answers a real API call. On error, whatever did start is stopped again.
func Start(ctx context.Context, cfg Config) (*Stack, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Stack{log: cfg.Logger, died: make(chan error, len(cfg.Services))}
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()

	var wg sync.WaitGroup
	errs := make([]error, len(cfg.Services))
	for i, svc := range cfg.Services {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.start(ctx, cfg.Root, svc)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// emulators maps each child-process service to its starter and the
// Stack field that holds its endpoint.
var emulators = map[Service]struct {
	start    func(ctx context.Context, root string, log *slog.Logger) (*process, error)
	endpoint func(s *Stack) *string
}{
	DynamoDB: {startDynamoDB, func(s *Stack) *string { return &s.DynamoDBEndpoint }},
	SQS:      {startFauxqs, func(s *Stack) *string { return &s.SQSEndpoint }},
	Kinesis:  {startKinesis, func(s *Stack) *string { return &s.KinesisEndpoint }},
}

func (s *Stack) start(ctx context.Context, root string, svc Service) error {
	var err error
	if svc == MQTT {
		var b *mqttbroker.Broker
		if b, err = startBroker(s.log); b != nil {
			s.mu.Lock()
			s.mqtt = b
			s.mu.Unlock()
			s.MQTTAddr = b.URL()
		}
	} else {
		emu := emulators[svc]
		var p *process
		// A child that started is kept (and stopped by Close) even when it
		// never answered.
		if p, err = emu.start(ctx, root, s.log); p != nil {
			s.add(p)
			*emu.endpoint(s) = p.endpoint
		}
	}
	if err != nil {
		return fmt.Errorf("start %s: %w", svc, err)
	}
	s.log.Info("local service ready", "service", svc, "endpoint", s.Endpoint(svc))
	return nil
}

func (s *Stack) add(p *process) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.procs = append(s.procs, p)
	go func() {
		<-p.done
		if p.stopping.Load() {
			return
		}
		err := &ExitError{Name: p.name, Pid: p.cmd.Process.Pid, Endpoint: p.endpoint, Err: p.waitErr, Output: p.out.String()}
		select {
		case s.died <- err:
		default:
		}
	}()
}

// ExitError is an emulator child that exited while the stack ran.
type ExitError struct {
	Name     string // "DynamoDB Local", "fauxqs (SQS)", "kinesis-local"
	Pid      int
	Endpoint string
	// Err is how it ended (an *exec.ExitError for a signal or a status).
	Err error
	// Output is the tail of what it printed.
	Output string
}

func (e *ExitError) Error() string {
	how := "exited"
	if e.Err != nil {
		how = e.Err.Error()
	}
	return fmt.Sprintf("emulator %s (pid %d, %s) stopped: %s", e.Name, e.Pid, e.Endpoint, how)
}

// Died delivers an *ExitError for each emulator child that exits on its
// own (killed, crashed) while the stack runs; not for children Close
// stops. A stack that was not started by Start has none.
func (s *Stack) Died() <-chan error { return s.died }

// Endpoint returns the endpoint of svc, or "" when it is not running.
func (s *Stack) Endpoint(svc Service) string {
	switch svc {
	case DynamoDB:
		return s.DynamoDBEndpoint
	case SQS:
		return s.SQSEndpoint
	case Kinesis:
		return s.KinesisEndpoint
	case MQTT:
		return s.MQTTAddr
	}
	return ""
}

// Env returns the environment a child process needs to use this stack with
// the standard AWS SDK variables: endpoints, a region and dummy credentials.
func (s *Stack) Env() []string {
	env := []string{
		"AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=local",
		"AWS_SECRET_ACCESS_KEY=local",
	}
	if s.DynamoDBEndpoint != "" {
		env = append(env, "AWS_ENDPOINT_URL_DYNAMODB="+s.DynamoDBEndpoint, "AWS_ENDPOINT_URL_DYNAMODB_STREAMS="+s.DynamoDBEndpoint)
	}
	if s.SQSEndpoint != "" {
		env = append(env, "AWS_ENDPOINT_URL_SQS="+s.SQSEndpoint)
	}
	if s.KinesisEndpoint != "" {
		env = append(env, "AWS_ENDPOINT_URL_KINESIS="+s.KinesisEndpoint)
	}
	if s.MQTTAddr != "" {
		env = append(env, "BOWLINE_MQTT_URL="+s.MQTTAddr)
	}
	return env
}

// Setenv applies Env to this process, for code that loads the AWS
// configuration in-process (tests, bowline dev).
func (s *Stack) Setenv() error {
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		if err := setenv(k, v); err != nil {
			return err
		}
	}
	return nil
}

func setenv(k, v string) error {
	if err := os.Setenv(k, v); err != nil {
		return fmt.Errorf("setenv %s: %w", k, err)
	}
	return nil
}

// Pids returns the process ids of the emulator children still running.
func (s *Stack) Pids() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var pids []int
	for _, p := range s.procs {
		pids = append(pids, p.cmd.Process.Pid)
	}
	return pids
}

// Close stops every service and waits for each child to exit. It is safe to
// call more than once.
func (s *Stack) Close() error {
	s.mu.Lock()
	procs, b := s.procs, s.mqtt
	s.procs, s.mqtt = nil, nil
	s.mu.Unlock()
	errs := make([]error, len(procs)+1)
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.stop(3 * time.Second)
		}()
	}
	if b != nil {
		errs[len(procs)] = b.Close()
	}
	wg.Wait()
	return errors.Join(errs...)
}
