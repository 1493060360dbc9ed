package inbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/oklog/ulid/v2"
)

// Status is the state of an inbox row.
type Status string

// The states of an inbox row; only Completed is final.
const (
	Pending   Status = "pending"
	Completed Status = "completed"
	Dead      Status = "dead"
)

// Attribute names of an inbox row.
const (
	attrPK         = "pk"
	attrStatus     = "status"
	attrLease      = "lease_expires_at" // N, unix milliseconds
	attrAttempts   = "attempts"         // N, claims so far
	attrWorker     = "worker"
	attrToken      = "claim_token"
	attrLastError  = "last_error"
	attrEventID    = "event_id"
	attrSub        = "subscription"
	attrUpdatedAt  = "updated_at"
	attrReleasedAt = "released_at"
	attrTTL        = "ttl" // N, epoch seconds
)

// Key is the inbox key of (eventID, subscription).
func Key(eventID, subscription string) string {
	return "IDEMP#" + eventID + ":" + subscription
}

// DynamoAPI is the part of the DynamoDB client the store uses. It must be
// safe for concurrent use, as *dynamodb.Client is.
type DynamoAPI interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// Config configures a Store.
type Config struct {
	// Client talks to DynamoDB. Required.
	Client DynamoAPI
	// Table is the inbox table name. Required.
	Table string
	// TTL is how long a row lives after its last write. Default 14 days,
	// longer than any DLQ retention, so a redriven event finds its row.
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
		cfg.TTL = 14 * 24 * time.Hour
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
		Key:       pk(key),
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
			":pending": sv(string(Pending)), ":dead": sv(string(Dead)), ":now": millis(now),
			":lease": millis(expires), ":worker": sv(worker), ":token": sv(token), ":eid": sv(eventID),
			":sub": sv(subscription), ":updated": sv(now.UTC().Format(time.RFC3339Nano)),
			":ttl": nv(now.Add(s.ttl).Unix()), ":one": nv(1),
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
		out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: pk(key), ConsistentRead: aws.Bool(true)})
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
		map[string]types.AttributeValue{":completed": sv(string(Completed))})
}

// Release gives the claim back after a retryable error: the row stays
// pending with an expired lease, so the next receive can claim it at once.
func (s *Store) Release(ctx context.Context, c Claim, cause error) error {
	return s.transition(ctx, c, "release", "SET #lease = :zero, #lasterr = :err, #updated = :updated, #ttl = :ttl",
		map[string]types.AttributeValue{":zero": nv(0), ":err": sv(errText(cause))})
}

// MarkDead marks the claim's row dead after a terminal error or a failure
// on the last allowed receive.
func (s *Store) MarkDead(ctx context.Context, c Claim, cause error) error {
	return s.transition(ctx, c, "mark dead", "SET #status = :dead, #lasterr = :err, #updated = :updated, #ttl = :ttl REMOVE #lease",
		map[string]types.AttributeValue{":dead": sv(string(Dead)), ":err": sv(errText(cause))})
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
	vals[":token"] = sv(c.Token)
	vals[":pending"] = sv(string(Pending))
	vals[":updated"] = sv(now.UTC().Format(time.RFC3339Nano))
	names := map[string]string{"#status": attrStatus, "#token": attrToken, "#updated": attrUpdatedAt}
	for k, v := range map[string]string{"#lease": attrLease, "#lasterr": attrLastError, "#ttl": attrTTL} {
		if strings.Contains(update, k) {
			names[k] = v
		}
	}
	if strings.Contains(update, "#ttl") {
		vals[":ttl"] = nv(now.Add(s.ttl).Unix())
	}
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       pk(c.Key),
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
		Key:                      pk(key),
		ConditionExpression:      aws.String("#status = :dead"),
		UpdateExpression:         aws.String("SET #released = :now, #updated = :now"),
		ExpressionAttributeNames: map[string]string{"#status": attrStatus, "#released": attrReleasedAt, "#updated": attrUpdatedAt},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":dead": sv(string(Dead)), ":now": sv(now.UTC().Format(time.RFC3339Nano)),
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
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: pk(key), ConsistentRead: aws.Bool(true)})
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
		Key:          getS(item, attrPK),
		EventID:      getS(item, attrEventID),
		Subscription: getS(item, attrSub),
		Status:       Status(getS(item, attrStatus)),
		Worker:       getS(item, attrWorker),
		Token:        getS(item, attrToken),
		Attempts:     int(getN(item, attrAttempts)),
		LastError:    getS(item, attrLastError),
	}
	if _, ok := item[attrLease]; ok {
		r.LeaseExpires = time.UnixMilli(getN(item, attrLease))
	}
	_, r.Released = item[attrReleasedAt]
	r.UpdatedAt, _ = time.Parse(time.RFC3339Nano, getS(item, attrUpdatedAt))
	return r
}

func pk(key string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: sv(key)}
}

func sv(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func nv(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func millis(t time.Time) types.AttributeValue { return nv(t.UnixMilli()) }

func getS(item map[string]types.AttributeValue, k string) string {
	if v, ok := item[k].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func getN(item map[string]types.AttributeValue, k string) int64 {
	if v, ok := item[k].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

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
