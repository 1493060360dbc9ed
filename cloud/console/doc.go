// Package console is Bowline's web console: the whole system at a glance,
// in a browser, and the operator's actions on it. `bowline api` and
// `bowline dev` serve it under /console/ (cloud/app builds it, cloud/api
// mounts it).
//
//	/console/                         Pipeline: gateways -> ingest -> Kinesis/chain -> relay -> queue/DLQ -> worker -> providers
//	/console/bowls, /bowls/{thing}    per bowl: weight chart from the Kinesis stream, food level, meals per pet, refills, faults, gaps, agent status
//	/console/tenants, /tenants/{t}    chain head, verify status, paged event log with hash links, unsettled work
//	/console/tenants/{t}/events/{seq} envelope, payload, inbox state per subscription, provider calls
//	/console/dead-letters             filter, select, confirm, redrive; the result shows live
//	/console/commerce[?order=]        orders (or one order) and their fan-out per provider
//	/console/search?q=                one box: an order id, event id, payment id, bowl or tenant
//
// Every page carries one health banner (the worst pipeline stage and
// why) and counts on the nav tabs; every time it shows names its clock,
// bowl time (the gateways') or the wall clock, in UTC (clock.go).
//
// # Access
//
// Operators log in with the ops token (BOWLINE_OPS_TOKEN): a POST of the
// login form, or GET /console/login?token=... (the one-click URL `bowline
// dev` prints), sets a session cookie (HttpOnly, SameSite=Strict,
// Path=/console/, Secure over TLS) and redirects. Every POST needs the
// session's CSRF token (a hidden form field or the X-CSRF-Token header) and,
// when the browser sends one, an Origin of this host. New refuses to build
// a console without a token; Disabled is the handler to mount instead.
//
// # Data
//
// Pages answer from memory kept fresh by Run: a tail of every tenant's
// event log (one Query per tenant per Refresh), chain verification every
// VerifyEvery, the telemetry stream read by a Kinesis reader in this
// process (downsampled to 10-second buckets, 25 hours per thing), the
// process's Prometheus registry, SQS queue attributes and the edge agents'
// status endpoints. What must be current is read on the request: an event's
// row, its inbox rows, dead letters, intake rows. Live updates are short
// polls of a page's live region (console.js); charts are SVG rendered here.
// Assets are embedded: nothing is loaded from the network.
//
// # Caveats
//
// Sessions live in this process's memory: a restart logs everyone out.
// The event cache holds every event of every tenant seen since start;
// it is meant for a stack's operators, not for years of history.
package console
