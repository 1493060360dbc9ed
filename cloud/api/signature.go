package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader carries the webhook signature:
// "t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>".
// Several v1 entries may be present (during a secret rotation); one match
// is enough.
const SignatureHeader = "Bowline-Signature"

// DefaultTolerance is how far the signed timestamp may be from now.
const DefaultTolerance = 300 * time.Second

// Sign returns the SignatureHeader value for body signed at t.
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// VerifySignature checks header against body and secret, and the signed
// time against now within tolerance (both directions). It returns an error
// wrapping ErrBadSignature or ErrStaleSignature.
func VerifySignature(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	if header == "" {
		return fmt.Errorf("%s header missing: %w", SignatureHeader, ErrBadSignature)
	}
	var ts string
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return fmt.Errorf("%s element %q: want key=value: %w", SignatureHeader, part, ErrBadSignature)
		}
		switch k {
		case "t":
			if ts != "" {
				return fmt.Errorf("%s: t given twice: %w", SignatureHeader, ErrBadSignature)
			}
			ts = v
		case "v1":
			sig, err := hex.DecodeString(v)
			if err != nil || len(sig) != sha256.Size {
				return fmt.Errorf("%s v1 %q: want 64 hex digits: %w", SignatureHeader, v, ErrBadSignature)
			}
			sigs = append(sigs, sig)
		}
		// Unknown schemes (v0, future ones) are ignored, as providers do.
	}
	if ts == "" || len(sigs) == 0 {
		return fmt.Errorf("%s %q: want t=<unix seconds>,v1=<hex>: %w", SignatureHeader, header, ErrBadSignature)
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || unix <= 0 {
		return fmt.Errorf("%s t %q: want unix seconds: %w", SignatureHeader, ts, ErrBadSignature)
	}
	want := mac(secret, ts, body)
	matched := false
	for _, s := range sigs {
		if hmac.Equal(s, want) {
			matched = true
		}
	}
	if !matched {
		return fmt.Errorf("%s: no v1 signature matches the body: %w", SignatureHeader, ErrBadSignature)
	}
	// The timestamp is checked after the MAC, so a stale but authentic
	// delivery is told apart from a forged one.
	if d := now.Sub(time.Unix(unix, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%s t=%s is %v from now, beyond %v: %w", SignatureHeader, ts, d.Round(time.Second), tolerance, ErrStaleSignature)
	}
	return nil
}
