package inbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/engine/attr"
)

// Status is the state of an inbox row.
type Status string

// The states of an inbox row; only Completed is final.
const (
	Pending   Status = "pending"
	Completed Status = "completed"
	Dead      Status = "dead"
)

// DynamoAPI is the part of the DynamoDB client the store uses. It must be
// safe for concurrent use, as *dynamodb.Client is.
type DynamoAPI interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// The retention rule (docs/tables.md, "The inbox TTL rule"). A row's TTL
// counts from its last write; a subscription's row is written, at the
// latest, when the event is first claimed. The event's message can then
// stay in the events queue until that queue's retention ends, move to the
// dead-letter queue, where a FIFO message's retention starts again (SQS
// resets its enqueue timestamp on the move), and be redriven at the end of
// it; the redriven copy must then be handled. Every sibling row must still
// exist then, or a redrive reruns work that was already done. So
//
//	DefaultTTL >= events queue retention + DLQ retention + RedriveWindow
//
// with both retentions at most MaxQueueRetention. deploy/cfn's tests check
// this against the retention that provisioning and the CloudFormation
// template give both queues.
const (
	// MaxQueueRetention is the longest SQS keeps a message in a queue
	// (MessageRetentionPeriod 1209600 s, 14 days): what events.fifo and
	// its DLQ are given.
	MaxQueueRetention = 14 * 24 * time.Hour
	// RedriveWindow is how long a redriven event may take to be handled
	// again after it leaves the DLQ.
	RedriveWindow = 7 * 24 * time.Hour
	// DefaultTTL is Config.TTL's default: 35 days.
	DefaultTTL = 2*MaxQueueRetention + RedriveWindow
)

// Config configures a Store.
type Config struct {
	// Client talks to DynamoDB. Required.
	Client DynamoAPI
	// Table is the inbox table name. Required.
	Table string
	// TTL is how long a row lives after its last write. Default
	// DefaultTTL, which outlives every queue an event can wait in (see
	// DefaultTTL), so a redriven event finds its siblings' completed rows.
	TTL time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Validate checks the config.
func (c Config) Validate() error {
	switch {
	case c.Client == nil:
		return errors.New("inbox config: Client is nil")
	case c.Table == "":
		return errors.New("inbox config: Table is empty")
	case c.TTL < 0:
		return fmt.Errorf("inbox config: TTL %v is negative", c.TTL)
	}
	return nil
}

// Store reads and writes inbox rows. It is safe for concurrent use.
type Store struct {
	client DynamoAPI
	table  string
	ttl    time.Duration
	now    func() time.Time
}

// New returns a Store for cfg.
func New(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Store{client: cfg.Client, table: cfg.Table, ttl: cfg.TTL, now: cfg.Now}, nil
}

// Claim is a held claim on one (event, subscription).
type Claim struct {
	Key          string
	EventID      string
	Subscription string
	Worker       string
	// Token identifies this claim; later writes are conditional on it.
	Token string
	// Attempts counts claims of the row, this one included.
	Attempts int
	// LeaseExpires is when another worker may take the row over.
	LeaseExpires time.Time
}

// Row is an inbox row as stored.
type Row struct {
	Key          string
	EventID      string
	Subscription string
	Status       Status
	Worker       string
	Token        string
	Attempts     int
	LeaseExpires time.Time
	LastError    string
	Released     bool
	UpdatedAt    time.Time
}

// Claim takes (eventID, subscription) for worker for lease. It succeeds when
// the row is absent, pending with an expired lease, or dead and released;
// otherwise it returns a *ClaimError matching ErrCompleted, ErrDead or
// ErrHeld.
func (s *Store) Claim(ctx context.Context, eventID, subscription, worker string, lease time.Duration) (Claim, error) {
	now := s.now()
	key := Key(eventID, subscription)
	token := ulid.Make().String()
	expires := now.Add(lease)
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table),
		Key:       attr.HashKey(key),
		ConditionExpression: aws.String("attribute_not_exists(#pk)" +
			" OR (#status = :pending AND #lease < :now)" +
			" OR (#status = :dead AND attribute_exists(#released))"),
		UpdateExpression: aws.String("SET #status = :pending, #lease = :lease, #worker = :worker, #token = :token," +
			" #eid = :eid, #sub = :sub, #updated = :updated, #ttl = :ttl ADD #attempts :one REMOVE #released"),
		ExpressionAttributeNames: map[string]string{
			"#pk": attrPK, "#status": attrStatus, "#lease": attrLease, "#released": attrReleasedAt,
			"#worker": attrWorker, "#token": attrToken, "#eid": attrEventID, "#sub": attrSub,
			"#updated": attrUpdatedAt, "#ttl": attrTTL, "#attempts": attrAttempts,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pending": attr.S(string(Pending)), ":dead": attr.S(string(Dead)), ":now": millis(now),
			":lease": millis(expires), ":worker": attr.S(worker), ":token": attr.S(token), ":eid": attr.S(eventID),
			":sub": attr.S(subscription), ":updated": attr.S(now.UTC().Format(time.RFC3339Nano)),
			":ttl": attr.N(now.Add(s.ttl).Unix()), ":one": attr.N(1),
		},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err != nil {
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			return Claim{}, s.refusal(ctx, key, ccf.Item)
		}
		return Claim{}, fmt.Errorf("claim %s: %w", key, err)
	}
	row := decodeRow(out.Attributes)
	return Claim{
		Key: key, EventID: eventID, Subscription: subscription, Worker: worker,
		Token: token, Attempts: row.Attempts, LeaseExpires: expires,
	}, nil
}

// refusal explains a failed claim from the old item, reading it when the
// endpoint did not return it.
func (s *Store) refusal(ctx context.Context, key string, old map[string]types.AttributeValue) error {
	if old == nil {
		out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: attr.HashKey(key), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return fmt.Errorf("claim %s: read refused row: %w", key, err)
		}
		old = out.Item
	}
	row := decodeRow(old)
	ce := &ClaimError{Key: key, Status: row.Status, Worker: row.Worker, LeaseExpires: row.LeaseExpires}
	switch row.Status {
	case Completed:
		ce.Err = ErrCompleted
	case Dead:
		ce.Err = ErrDead
	default:
		ce.Err = ErrHeld
	}
	return ce
}

// Complete marks the claim's row completed, the final state.
func (s *Store) Complete(ctx context.Context, c Claim) error {
	return s.transition(ctx, c, "complete", "SET #status = :completed, #updated = :updated, #ttl = :ttl REMOVE #lease",
		map[string]types.AttributeValue{":completed": attr.S(string(Completed))})
}

// Release gives the claim back after a retryable error: the row stays
// pending with an expired lease, so the next receive can claim it at once.
func (s *Store) Release(ctx context.Context, c Claim, cause error) error {
	return s.transition(ctx, c, "release", "SET #lease = :zero, #lasterr = :err, #updated = :updated, #ttl = :ttl",
		map[string]types.AttributeValue{":zero": attr.N(0), ":err": attr.S(errText(cause))})
}

// MarkDead marks the claim's row dead after a terminal error or a failure
// on the last allowed receive.
func (s *Store) MarkDead(ctx context.Context, c Claim, cause error) error {
	return s.transition(ctx, c, "mark dead", "SET #status = :dead, #lasterr = :err, #updated = :updated, #ttl = :ttl REMOVE #lease",
		map[string]types.AttributeValue{":dead": attr.S(string(Dead)), ":err": attr.S(errText(cause))})
}

// Extend renews the claim's lease to now+lease (the heartbeat) and returns
// the new expiry.
func (s *Store) Extend(ctx context.Context, c Claim, lease time.Duration) (time.Time, error) {
	expires := s.now().Add(lease)
	err := s.transition(ctx, c, "extend", "SET #lease = :lease, #updated = :updated",
		map[string]types.AttributeValue{":lease": millis(expires)})
	if err != nil {
		return time.Time{}, err
	}
	return expires, nil
}

func (s *Store) transition(ctx context.Context, c Claim, what, update string, vals map[string]types.AttributeValue) error {
	now := s.now()
	vals[":token"] = attr.S(c.Token)
	vals[":pending"] = attr.S(string(Pending))
	vals[":updated"] = attr.S(now.UTC().Format(time.RFC3339Nano))
	names := map[string]string{"#status": attrStatus, "#token": attrToken, "#updated": attrUpdatedAt}
	for k, v := range map[string]string{"#lease": attrLease, "#lasterr": attrLastError, "#ttl": attrTTL} {
		if strings.Contains(update, k) {
			names[k] = v
		}
	}
	if strings.Contains(update, "#ttl") {
		vals[":ttl"] = attr.N(now.Add(s.ttl).Unix())
	}
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       attr.HashKey(c.Key),
		ConditionExpression:       aws.String("#token = :token AND #status = :pending"),
		UpdateExpression:          aws.String(update),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: vals,
	})
	if err != nil {
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			return fmt.Errorf("%s %s (worker %s): %w", what, c.Key, c.Worker, ErrLeaseLost)
		}
		return fmt.Errorf("%s %s: %w", what, c.Key, err)
	}
	return nil
}

// ReleaseDead lets the dead row of (eventID, subscription) be claimed again:
// the operator's replay after fixing a handler. It returns ErrNotDead when
// the row is absent or not dead.
func (s *Store) ReleaseDead(ctx context.Context, eventID, subscription string) error {
	key := Key(eventID, subscription)
	now := s.now()
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      attr.HashKey(key),
		ConditionExpression:      aws.String("#status = :dead"),
		UpdateExpression:         aws.String("SET #released = :now, #updated = :now"),
		ExpressionAttributeNames: map[string]string{"#status": attrStatus, "#released": attrReleasedAt, "#updated": attrUpdatedAt},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":dead": attr.S(string(Dead)), ":now": attr.S(now.UTC().Format(time.RFC3339Nano)),
		},
	})
	if err != nil {
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			return fmt.Errorf("release %s: %w", key, ErrNotDead)
		}
		return fmt.Errorf("release %s: %w", key, err)
	}
	return nil
}

// Get reads the row of (eventID, subscription); ok is false when absent.
func (s *Store) Get(ctx context.Context, eventID, subscription string) (Row, bool, error) {
	key := Key(eventID, subscription)
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: attr.HashKey(key), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return Row{}, false, fmt.Errorf("get %s: %w", key, err)
	}
	if out.Item == nil {
		return Row{}, false, nil
	}
	return decodeRow(out.Item), true, nil
}

func decodeRow(item map[string]types.AttributeValue) Row {
	r := Row{
		Key:          attr.GetS(item, attrPK),
		EventID:      attr.GetS(item, attrEventID),
		Subscription: attr.GetS(item, attrSub),
		Status:       Status(attr.GetS(item, attrStatus)),
		Worker:       attr.GetS(item, attrWorker),
		Token:        attr.GetS(item, attrToken),
		Attempts:     int(attr.GetN(item, attrAttempts)),
		LastError:    attr.GetS(item, attrLastError),
	}
	if _, ok := item[attrLease]; ok {
		r.LeaseExpires = time.UnixMilli(attr.GetN(item, attrLease))
	}
	_, r.Released = item[attrReleasedAt]
	r.UpdatedAt, _ = time.Parse(time.RFC3339Nano, attr.GetS(item, attrUpdatedAt))
	return r
}

func millis(t time.Time) types.AttributeValue { return attr.N(t.UnixMilli()) }

const maxErrText = 1024

func errText(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if len(s) > maxErrText {
		s = s[:maxErrText] + "..."
	}
	return s
}

var _ DynamoAPI = (*dynamodb.Client)(nil)
