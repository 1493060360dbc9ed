package worker

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/ddbjson"
)

// Why decodeChained refused a body (Observer.NotChained).
const (
	// NotChainedKey: pk or sk is not an event row's key (engine.ParseEventKey).
	NotChainedKey = "key"
	// NotChainedTenant: the tenant attribute is not the tenant of the key.
	NotChainedTenant = "tenant"
	// NotChainedSeq: the seq attribute is not the seq of the key.
	NotChainedSeq = "seq"
	// NotChainedHash: hash or prev_hash is empty, or hash is not the chain
	// hash of the event after prev_hash (engine.ChainHash).
	NotChainedHash = "hash"
)

// notChainedError is a body that decodes to an envelope but is not a
// chained event row; Reason is one of the NotChained* constants.
type notChainedError struct {
	Reason string
	err    error
}

func (e *notChainedError) Error() string {
	return fmt.Sprintf("not a chained event row (%s): %v", e.Reason, e.err)
}

func (e *notChainedError) Unwrap() []error { return []error{ErrNotChained, e.err} }

// decodeChained turns a message body into the envelope of a chained event
// row: an event row in DynamoDB JSON whose pk and sk are exactly the key
// Emit gives it (engine.ParseEventKey), whose tenant and seq are that key's,
// and whose hash is the chain hash of the event after its prev_hash. A body
// that is not an event row at all fails with the decoder's error; one that
// is an event row but not a chained one fails with a *notChainedError.
//
// The hash check is not a signature (anyone can compute it): it refuses a
// row someone wrote by hand without sealing it. A row forged under a
// tenant's real key, with a hash computed for it, needs a transaction on
// that tenant's chain, which the IAM policy of every role limits to the
// log's own keys; `bowline verify-chain` and the anchors find it
// (docs/chain.md).
func decodeChained(body string) (engine.Envelope, error) {
	item, err := ddbjson.UnmarshalMap([]byte(body))
	if err != nil {
		return engine.Envelope{}, fmt.Errorf("event image: %w", err)
	}
	env, err := engine.DecodeItem(item)
	if err != nil {
		return engine.Envelope{}, err
	}
	refuse := func(reason string, err error) (engine.Envelope, error) {
		return env, &notChainedError{Reason: reason, err: fmt.Errorf("event %s: %w", env.ID, err)}
	}
	str := func(name string) string {
		s, _ := item[name].(*types.AttributeValueMemberS)
		if s == nil {
			return ""
		}
		return s.Value
	}
	tenant, seq, err := engine.ParseEventKey(str(engine.AttrPK), str(engine.AttrSK))
	if err != nil {
		return refuse(NotChainedKey, err)
	}
	if env.Tenant != tenant {
		return refuse(NotChainedTenant, fmt.Errorf("tenant %q under the key of tenant %q", env.Tenant, tenant))
	}
	if env.Seq != seq {
		return refuse(NotChainedSeq, fmt.Errorf("seq %d under the key of seq %d", env.Seq, seq))
	}
	if env.Hash == "" || env.PrevHash == "" {
		return refuse(NotChainedHash, fmt.Errorf("hash %q, prev_hash %q: want both", env.Hash, env.PrevHash))
	}
	want, err := engine.ChainHash(env.PrevHash, env)
	if err != nil {
		return refuse(NotChainedHash, err)
	}
	if want != env.Hash {
		return refuse(NotChainedHash, fmt.Errorf("hash %q is not the chain hash %q after prev_hash %q", env.Hash, want, env.PrevHash))
	}
	return env, nil
}
