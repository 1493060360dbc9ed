package engine_test

import (
	"encoding/json"
	"testing"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/ddbjson"
)

// FuzzHashSurvivesStorage: whatever JSON object a payload is, the hash
// computed at emit time is the hash recomputed from the stored item and from
// the relayed DynamoDB JSON image, so VerifyChain and consumers agree with
// Emit.
func FuzzHashSurvivesStorage(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"grams_eaten":412.5,"pet_tag":"Ω"}`, `{"a":[1,"x",null,true,{"b":-0.0}]}`,
		`{"n":1e30,"m":1e-7,"big":9007199254740993}`, `{"s":"\u0000\ud83d\ude00<>&"}`, `{"nested":{"deeper":{"x":[]}}}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		var m map[string]any
		if json.Unmarshal([]byte(payload), &m) != nil || m == nil {
			return
		}
		env := fixtureEnvelope()
		env.Payload = m
		if err := engine.Seal(&env, engine.Genesis); err != nil {
			return // not representable in canonical JSON (e.g. invalid UTF-8)
		}
		item, err := engine.EventItem(env)
		if err != nil {
			return // not storable (an empty map key): Emit rejects it with ErrInvalidPayload
		}
		got, err := engine.DecodeItem(item)
		if err != nil {
			t.Fatalf("DecodeItem(EventItem(%s)): %v", payload, err)
		}
		if h, err := engine.ChainHash(got.PrevHash, got); err != nil || h != env.Hash {
			t.Fatalf("payload %s: hash after storage %s (%v); want %s", payload, h, err, env.Hash)
		}
		body, err := ddbjson.MarshalMap(item)
		if err != nil {
			t.Fatalf("ddbjson.MarshalMap: %v", err)
		}
		relayed, err := engine.DecodeImageJSON(body)
		if err != nil {
			t.Fatalf("DecodeImageJSON(%s): %v", body, err)
		}
		if h, _ := engine.ChainHash(relayed.PrevHash, relayed); h != env.Hash {
			t.Fatalf("payload %s: hash after relay %s; want %s", payload, h, env.Hash)
		}
	})
}
