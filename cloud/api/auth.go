package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// bearer returns the token of an "Authorization: Bearer <token>" header.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// digest is the SHA-256 of a token. Tokens are compared through their
// digests, which all have one length: subtle.ConstantTimeCompare on the
// tokens themselves returns at once when the lengths differ, so its timing
// would tell a caller how long a configured token is.
type digest [sha256.Size]byte

func digestOf(tok string) digest { return sha256.Sum256([]byte(tok)) }

// tenantToken is a configured bearer token, kept as its digest.
type tenantToken struct {
	sum    digest
	tenant string
}

// tenantTokens digests cfg's tokens (New, once).
func tenantTokens(tokens map[string]string) []tenantToken {
	out := make([]tenantToken, 0, len(tokens))
	for tok, tenant := range tokens {
		out = append(out, tenantToken{sum: digestOf(tok), tenant: tenant})
	}
	return out
}

// tenantFor returns the tenant the request's bearer token names. The
// token's digest is compared with every configured one in constant time,
// so the answer's timing reveals neither how much of a token was right nor
// how long the configured tokens are.
func (a *API) tenantFor(r *http.Request) (string, bool) {
	tok, ok := bearer(r)
	if !ok {
		return "", false
	}
	sum := digestOf(tok)
	tenant, found := "", false
	for _, t := range a.tokens {
		if subtle.ConstantTimeCompare(t.sum[:], sum[:]) == 1 {
			tenant, found = t.tenant, true
		}
	}
	return tenant, found
}

// isOperator reports whether the request carries the operator token,
// compared as tenantFor compares.
func (a *API) isOperator(r *http.Request) bool {
	tok, ok := bearer(r)
	if !ok || a.cfg.OpsToken == "" {
		return false
	}
	sum := digestOf(tok)
	return subtle.ConstantTimeCompare(a.opsSum[:], sum[:]) == 1
}
