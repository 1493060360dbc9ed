package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/bowline-iot/bowline/cloud/guard"
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

// authTenant returns the tenant of the request's bearer token, or writes
// the refusal: 401 for a missing or wrong token (a wrong one is a failure
// for the guard), 429 while the request's source has no try left, before
// the token is compared.
func (a *API) authTenant(w http.ResponseWriter, r *http.Request) (string, bool) {
	at, ok := a.admit(w, r, guard.KindBearer)
	if !ok {
		return "", false
	}
	tenant, found := a.tenantFor(r)
	a.settle(r, at, found)
	if !found {
		writeError(w, http.StatusUnauthorized, CodeUnauthorized, "missing or unknown bearer token")
		return "", false
	}
	return tenant, true
}

// settle ends a guarded attempt: a presented token that was wrong spends
// one of the source's tries (a missing one guessed nothing).
func (a *API) settle(r *http.Request, at guard.Attempt, ok bool) {
	if _, presented := bearer(r); presented && !ok {
		a.guard.Failed(at)
	}
}

// authOperator is authTenant for the ops token.
func (a *API) authOperator(w http.ResponseWriter, r *http.Request) bool {
	at, ok := a.admit(w, r, guard.KindOps)
	if !ok {
		return false
	}
	ok = a.isOperator(r)
	a.settle(r, at, ok)
	if !ok {
		writeError(w, http.StatusUnauthorized, CodeUnauthorized, "missing or wrong operator token")
	}
	return ok
}

// admit asks the guard whether r's source may present a credential, and
// answers 429 when not.
func (a *API) admit(w http.ResponseWriter, r *http.Request, kind string) (guard.Attempt, bool) {
	at, wait, ok := a.guard.Check(r, kind)
	if !ok {
		guard.Refuse(w, wait)
		writeError(w, http.StatusTooManyRequests, CodeTooManyFailures, "too many wrong credentials from this address: try again later")
	}
	return at, ok
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
