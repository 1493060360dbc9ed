// Package guard answers two questions the API and the console ask of every
// request that carries a credential: who is asking, and may they try again.
//
// Who is asking is the client address: the TCP peer, or, when the peer is
// a configured trusted proxy (the load balancer), the rightmost address in
// X-Forwarded-For that is not itself a trusted proxy. A header from any
// other peer is ignored, so a client cannot choose its own address.
// Whether the client used HTTPS follows the same rule: TLS on the
// connection, or X-Forwarded-Proto from a trusted proxy.
//
// May they try again: every failed credential (a wrong bearer token, a
// wrong ops token, a wrong console login) spends one of its source's
// tries; a source with none left is refused (429 with Retry-After) before
// its credential is even compared, whether or not it is right, until a
// try comes back (one per Every). Attempts sent at once may overdraw the
// tries, and the debt is paid back in refusals, so over time a source
// still gets one try per Every. A right credential changes nothing: a
// tenant with a good token of its own cannot reset its count while it
// guesses the ops token, and a client that only succeeds is never
// refused. Failures are logged at WARN as msg=auth_failure with the kind,
// the source and the path, never the credential (the stack template
// counts these lines with a metric filter and alarms on them), and told,
// with every refusal, to Config.Observer: Metrics counts them in
// bowline_auth_failures_total and bowline_auth_refused_total.
//
// docs/security.md, "Brute force", says what this protects and what not.
package guard
