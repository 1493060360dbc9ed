package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/fakes"
	"github.com/bowline-iot/bowline/cloud/subscribers"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/inbox"
	"github.com/bowline-iot/bowline/engine/relay"
	"github.com/bowline-iot/bowline/engine/worker"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/resources"
)

// Config configures a Pipeline.
type Config struct {
	// AWS and Names select the provisioned stack. Required.
	AWS   aws.Config
	Names resources.Names
	// Settings are the API's tokens and webhook secret. Required.
	Settings api.Settings
	// RelayPoll is the relay's pause after an empty read; default 50ms.
	RelayPoll time.Duration
	// Pollers is the worker's receive loops; default 2.
	Pollers int
	// Logger defaults to a discarding one.
	Logger *slog.Logger
}

// Pipeline is the running commerce path.
type Pipeline struct {
	// APIURL is "http://127.0.0.1:port".
	APIURL string
	// Fakes are the providers the subscribers call.
	Fakes *fakes.Servers

	cancel context.CancelFunc
	wg     sync.WaitGroup
	errs   []error
	mu     sync.Mutex
	close  []func() error
}

// Start starts everything and returns once the API listens.
func Start(ctx context.Context, cfg Config) (*Pipeline, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RelayPoll == 0 {
		cfg.RelayPoll = 50 * time.Millisecond
	}
	if cfg.Pollers == 0 {
		cfg.Pollers = 2
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p := &Pipeline{cancel: cancel}
	ok := false
	defer func() {
		if !ok {
			_ = p.Close()
		}
	}()

	fk, err := fakes.Serve(runCtx, fakes.NewSet())
	if err != nil {
		return nil, err
	}
	p.Fakes = fk
	p.close = append(p.close, fk.Close)

	b, err := api.Build(api.BuildConfig{AWS: cfg.AWS, Names: cfg.Names, Settings: cfg.Settings, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	p.close = append(p.close, b.Engine.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("pipeline api listen: %w", err)
	}
	p.APIURL = "http://" + ln.Addr().String()
	p.run("api", func() error { return b.API.ServeListener(runCtx, ln, nil) })

	ddb := dynamodb.NewFromConfig(cfg.AWS, awsenv.DynamoDBOptions)
	sq := sqs.NewFromConfig(cfg.AWS)
	qURL, err := queueURL(ctx, sq, cfg.Names.EventsQueue())
	if err != nil {
		return nil, err
	}
	dlqURL, err := queueURL(ctx, sq, cfg.Names.EventsDLQ())
	if err != nil {
		return nil, err
	}
	// A fresh pipe name gives this relay its own checkpoints, so several
	// pipelines on one stack (tests) each read the stream from the start.
	pipe := relay.EventsPipe
	pipe.Name = "events-" + ulid.Make().String()
	r, err := relay.New(relay.Config{
		Pipe: pipe, Streams: dynamodbstreams.NewFromConfig(cfg.AWS), Table: cfg.Names.EventsTable(), Tables: ddb,
		Queue: sq, QueueURL: qURL, Checkpoints: ddb, CheckpointTable: cfg.Names.InboxTable(),
		PollInterval: cfg.RelayPoll, Logger: cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	p.run("relay", func() error { return r.Run(runCtx) })

	sb, err := subscribers.Build(subscribers.BuildConfig{AWS: cfg.AWS, Names: cfg.Names, Adapters: fk.AdapterConfig(), Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	p.close = append(p.close, sb.Engine.Close)
	bound, err := sb.Set.Bind(catalog.Bowline())
	if err != nil {
		return nil, err
	}
	in, err := inbox.New(inbox.Config{Client: ddb, Table: cfg.Names.InboxTable()})
	if err != nil {
		return nil, err
	}
	dl, err := deadletter.New(ddb, cfg.Names.DeadLettersTable(), nil)
	if err != nil {
		return nil, err
	}
	w, err := worker.New(worker.Config{
		Queue: sq, QueueURL: qURL, DLQURL: dlqURL, Inbox: in, DeadLetters: dl, Subscriptions: bound.Subscriptions,
		Pollers: cfg.Pollers, WaitTime: 2 * time.Second, Lease: 20 * time.Second, RetryDelay: time.Second,
		Logger: cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	p.run("worker", func() error { return w.Run(runCtx) })
	ok = true
	return p, nil
}

func (p *Pipeline) run(name string, f func() error) {
	p.wg.Go(func() {
		if err := f(); err != nil {
			p.mu.Lock()
			p.errs = append(p.errs, fmt.Errorf("%s: %w", name, err))
			p.mu.Unlock()
		}
	})
}

// Close stops everything and returns what failed.
func (p *Pipeline) Close() error {
	p.cancel()
	p.wg.Wait()
	p.mu.Lock()
	errs := append([]error(nil), p.errs...)
	p.mu.Unlock()
	for i := len(p.close) - 1; i >= 0; i-- {
		if err := p.close[i](); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func queueURL(ctx context.Context, c *sqs.Client, name string) (string, error) {
	out, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("queue %s: %w", name, err)
	}
	return aws.ToString(out.QueueUrl), nil
}
