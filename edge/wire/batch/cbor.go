package batch

import (
	"github.com/fxamacker/cbor/v2"
)

// The CBOR maps of docs/telemetry-path.md ("The batch"). Encode writes
// these; Decode reads the in* forms, whose pointers tell a missing key from
// a zero value.

type outBatch struct {
	Outbox string      `cbor:"0,keyasint"`
	SentAt int64       `cbor:"1,keyasint"`
	Things []outSeries `cbor:"2,keyasint"`
}

type outSeries struct {
	Thing     string    `cbor:"0,keyasint"`
	Seq       uint64    `cbor:"1,keyasint"`
	SeqGaps   []byte    `cbor:"2,keyasint,omitempty"`
	T0        int64     `cbor:"3,keyasint"`
	Dt        []byte    `cbor:"4,keyasint"`
	Kinds     []kindDef `cbor:"5,keyasint"`
	KindIndex []byte    `cbor:"6,keyasint,omitempty"`
	Values    []byte    `cbor:"7,keyasint"`
}

// kindDef is [name, scale, quantum].
type kindDef struct {
	_       struct{} `cbor:",toarray"`
	Name    string
	Scale   uint8
	Quantum uint64
}

type inBatch struct {
	Outbox *string     `cbor:"0,keyasint"`
	SentAt *int64      `cbor:"1,keyasint"`
	Things *[]inSeries `cbor:"2,keyasint"`
}

type inSeries struct {
	Thing     *string    `cbor:"0,keyasint"`
	Seq       *uint64    `cbor:"1,keyasint"`
	SeqGaps   *[]byte    `cbor:"2,keyasint"`
	T0        *int64     `cbor:"3,keyasint"`
	Dt        *[]byte    `cbor:"4,keyasint"`
	Kinds     *[]kindDef `cbor:"5,keyasint"`
	KindIndex *[]byte    `cbor:"6,keyasint"`
	Values    *[]byte    `cbor:"7,keyasint"`
}

// encMode writes core deterministic CBOR (RFC 8949 section 4.2.1).
var encMode = mustEnc(cbor.CoreDetEncOptions())

// decMode refuses what Encode never writes: unknown or duplicate keys,
// tags, indefinite lengths, invalid UTF-8, and more nesting, array elements
// or map pairs than a batch has.
var decMode = mustDec(cbor.DecOptions{
	DupMapKey:         cbor.DupMapKeyEnforcedAPF,
	IndefLength:       cbor.IndefLengthForbidden,
	TagsMd:            cbor.TagsForbidden,
	MaxNestedLevels:   8,
	MaxArrayElements:  MaxThings + 1, // so Decode, not the codec, names a batch of too many things
	MaxMapPairs:       16,
	UTF8:              cbor.UTF8RejectInvalid,
	ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
})

func mustEnc(o cbor.EncOptions) cbor.EncMode {
	m, err := o.EncMode()
	if err != nil {
		panic(err)
	}
	return m
}

func mustDec(o cbor.DecOptions) cbor.DecMode {
	m, err := o.DecMode()
	if err != nil {
		panic(err)
	}
	return m
}
