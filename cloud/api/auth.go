package api

import (
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

// tenantFor returns the tenant the request's bearer token names. Every
// configured token is compared in constant time, so the answer's timing
// does not reveal how much of a token was right.
func (a *API) tenantFor(r *http.Request) (string, bool) {
	tok, ok := bearer(r)
	if !ok {
		return "", false
	}
	tenant, found := "", false
	for t, ten := range a.cfg.Tokens {
		if subtle.ConstantTimeCompare([]byte(t), []byte(tok)) == 1 {
			tenant, found = ten, true
		}
	}
	return tenant, found
}

// isOperator reports whether the request carries the operator token.
func (a *API) isOperator(r *http.Request) bool {
	tok, ok := bearer(r)
	return ok && a.cfg.OpsToken != "" && subtle.ConstantTimeCompare([]byte(a.cfg.OpsToken), []byte(tok)) == 1
}
