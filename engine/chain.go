package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/gowebpki/jcs"
)

// Genesis is the prev_hash of a tenant's first event: 64 zeros, the hex form
// of 32 zero bytes.
const Genesis = "0000000000000000000000000000000000000000000000000000000000000000"

// hashed is the part of the envelope that the chain hash covers; see
// docs/chain.md. prev_hash is not a member: it is prefixed to the bytes.
type hashed struct {
	ID            string         `json:"id"`
	Type          string         `json:"type"`
	Tenant        string         `json:"tenant"`
	CorrelationID string         `json:"correlation_id"`
	Actor         string         `json:"actor"`
	OccurredAt    string         `json:"occurred_at"`
	Payload       map[string]any `json:"payload"`
	Seq           uint64         `json:"seq"`
}

// CanonicalEnvelope returns the RFC 8785 (JCS) canonical JSON of the hashed
// fields of env: id, type, tenant, correlation_id, actor, occurred_at
// (TimeLayout), payload and seq.
func CanonicalEnvelope(env Envelope) ([]byte, error) {
	return canonicalJSON(hashed{
		ID:            env.ID,
		Type:          env.Type,
		Tenant:        env.Tenant,
		CorrelationID: env.CorrelationID,
		Actor:         env.Actor,
		OccurredAt:    env.OccurredAt.UTC().Format(TimeLayout),
		Payload:       env.Payload,
		Seq:           env.Seq,
	})
}

// ChainHash returns hex(sha256(prevHash || JCS(env))): the hash of env when it
// follows prevHash. env.PrevHash and env.Hash are ignored.
func ChainHash(prevHash string, env Envelope) (string, error) {
	canon, err := CanonicalEnvelope(env)
	if err != nil {
		return "", fmt.Errorf("hash event %s seq %d: %w", env.ID, env.Seq, err)
	}
	h := sha256.New()
	h.Write([]byte(prevHash))
	h.Write(canon)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Seal sets env.PrevHash to prevHash and env.Hash to ChainHash(prevHash, env).
func Seal(env *Envelope, prevHash string) error {
	h, err := ChainHash(prevHash, *env)
	if err != nil {
		return err
	}
	env.PrevHash, env.Hash = prevHash, h
	return nil
}

func canonicalJSON(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("json: %w", err)
	}
	c, err := jcs.Transform(b)
	if err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	return c, nil
}
