package engine

import (
	"context"
	"fmt"
	"iter"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine/attr"
)

// LogDB is the part of the DynamoDB API a Log reads with.
// *dynamodb.Client and every DynamoDB of this package have it.
type LogDB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

var _ LogDB = (*dynamodb.Client)(nil)

// Log reads the tenants' logs of one events table: a tenant's events in
// seq order after a position (After), one event (Event) and the head
// (Head). It is the one reader of event rows outside Emit; callers never
// build a key of the events table (docs/tables.md). It only reads, and it
// is safe for concurrent use.
type Log struct {
	client LogDB
	table  string
}

// NewLog returns a Log reading table (resources.Names.EventsTable)
// through client.
func NewLog(client LogDB, table string) *Log {
	return &Log{client: client, table: table}
}

// Log returns a reader of the engine's events table.
func (e *Engine) Log() *Log { return NewLog(e.cfg.Client, e.cfg.EventsTable) }

// ReadOptions bound one pass of Log.After. The zero value reads every
// event after the position, strongly consistent, in DynamoDB's own pages
// (up to 1 MB each).
type ReadOptions struct {
	// Limit is the most events the pass yields (0: no limit). The last
	// Query asks for no more rows than the limit leaves, so a limit also
	// bounds the read units spent.
	Limit int
	// PageSize is the Limit of each Query (0: none, DynamoDB's 1 MB
	// pages).
	PageSize int
	// Eventual reads eventually consistent (half the read units): the
	// newest events may be missing. Without it every Query is strongly
	// consistent, so a pass sees every event committed before it started.
	Eventual bool
}

// RowError is a row of a tenant's log that is not a well-formed event:
// it cannot be decoded, or it says another seq than its sort key names.
// Log.After yields it in the row's place and goes on with the next row,
// so a caller chooses to stop, skip or report it; beside one whose
// KeyMismatch is true it yields the envelope as decoded. It matches
// ErrBadRow.
type RowError struct {
	Tenant string
	// Key is the seq the row's sort key names (0 when the key is not a
	// seq of 20 digits).
	Key uint64
	// Seq is the seq the row holds when it decoded and only its key is
	// wrong; 0 when it could not be decoded (or holds seq 0).
	Seq uint64
	// Err says what is wrong.
	Err error
}

func (e *RowError) Error() string {
	return fmt.Sprintf("event row %d of tenant %q: %v", e.Key, e.Tenant, e.Err)
}

// Unwrap returns the decoding error.
func (e *RowError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrBadRow) true.
func (e *RowError) Is(target error) bool { return target == ErrBadRow }

// KeyMismatch reports whether the row decoded (it holds Seq) but its
// sort key names another seq.
func (e *RowError) KeyMismatch() bool { return e.Seq != 0 }

// After yields tenant's events with a seq above after, in seq order, one
// Query page at a time (the next one only when the caller wants more). A row that is not a well-formed event is
// yielded as a *RowError and the pass goes on; a failed Query is yielded
// as an error naming the tenant and the seq it read after, and ends the
// pass. Breaking out of the loop stops the reads.
func (l *Log) After(ctx context.Context, tenant string, after uint64, opts ReadOptions) iter.Seq2[Envelope, error] {
	return func(yield func(Envelope, error) bool) {
		in := &dynamodb.QueryInput{
			TableName:              aws.String(l.table),
			KeyConditionExpression: aws.String("pk = :pk AND sk > :after"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pk": attr.S(EventPK(tenant)), ":after": attr.S(SeqSK(after)),
			},
			ConsistentRead: aws.Bool(!opts.Eventual),
		}
		last, yielded := after, 0
		for {
			in.Limit = queryLimit(opts, yielded)
			out, err := l.client.Query(ctx, in)
			if err != nil {
				yield(Envelope{}, fmt.Errorf("read events of tenant %q from %s after seq %d: %w", tenant, l.table, last, err))
				return
			}
			for _, item := range out.Items {
				env, err := decodeRow(tenant, item)
				if !yield(env, err) {
					return
				}
				if err == nil {
					last = env.Seq
				}
				if yielded++; opts.Limit > 0 && yielded >= opts.Limit {
					return
				}
			}
			if len(out.LastEvaluatedKey) == 0 {
				return
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
	}
}

// queryLimit is the Limit of the next Query of a pass that has yielded
// rows (nil: none).
func queryLimit(opts ReadOptions, yielded int) *int32 {
	n := opts.PageSize
	if opts.Limit > 0 && (n <= 0 || opts.Limit-yielded < n) {
		n = opts.Limit - yielded
	}
	if n <= 0 {
		return nil
	}
	return aws.Int32(int32(n))
}

// Event reads tenant's event at seq as stored now (strongly consistent).
// found is false when the log holds no row at seq; a row that is not a
// well-formed event is a *RowError (with the envelope as decoded when
// only its key is wrong).
func (l *Log) Event(ctx context.Context, tenant string, seq uint64) (env Envelope, found bool, err error) {
	out, err := l.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(l.table), Key: eventKey(tenant, seq), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Envelope{}, false, fmt.Errorf("read event %d of tenant %q from %s: %w", seq, tenant, l.table, err)
	}
	if out.Item == nil {
		return Envelope{}, false, nil
	}
	env, err = decodeRow(tenant, out.Item)
	return env, true, err
}

// Head reads tenant's chain head (strongly consistent): the last
// committed seq and hash, or Found false, seq 0 and Genesis before its
// first event.
func (l *Log) Head(ctx context.Context, tenant string) (Head, error) {
	return readHead(ctx, l.client, l.table, tenant)
}

// decodeRow decodes an event row of tenant and checks that its sort key
// names the seq it holds.
func decodeRow(tenant string, item map[string]types.AttributeValue) (Envelope, error) {
	sk := attr.GetS(item, AttrSK)
	var key uint64
	if len(sk) == len(SeqSK(0)) {
		key, _ = strconv.ParseUint(sk, 10, 64)
	}
	env, err := DecodeItem(item)
	switch {
	case err != nil:
		return Envelope{}, &RowError{Tenant: tenant, Key: key, Err: err}
	case sk != SeqSK(env.Seq):
		return env, &RowError{Tenant: tenant, Key: key, Seq: env.Seq, Err: fmt.Errorf("sort key %q holds seq %d", sk, env.Seq)}
	}
	return env, nil
}
